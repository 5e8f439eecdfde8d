//! A tool as the registry resolved it from `tools.yaml` (D-5): its connector, its compiled
//! argument schema, its timeout and status code.

use std::fmt;
use std::sync::Arc;

use crate::approval::ApprovalPolicy;

/// A tool entry of `tools.yaml` (D-5).
#[derive(Clone)]
pub struct Tool {
    /// Registry id (also the name the model sees).
    pub id: Arc<str>,
    /// What it does.
    pub description: Arc<str>,
    /// Connector kind.
    pub connector_kind: Arc<str>,
    /// Connector configuration.
    pub connector_config: Arc<serde_json::Value>,
    /// Argument schema.
    pub schema: Arc<serde_json::Value>,
    /// Compiled argument schema.
    pub validator: Arc<jsonschema::Validator>,
    /// Timeout of one call.
    pub timeout_ms: u64,
    /// Status code emitted while the tool runs.
    pub status_code: Option<Arc<str>>,
    /// How a deterministic model may phrase one record of the result.
    pub result_template: Option<Arc<str>>,
    /// Major envelope version expected; any other is a failure and a metric (D-28).
    pub envelope_major: Option<u64>,
    /// The payload type an envelope must name, and what its payload must be (002 §5.5).
    pub payload_type: Option<Arc<PayloadType>>,
    /// When a call needs the user's approval first (`approval:`), if ever.
    pub approval: Option<Arc<ApprovalPolicy>>,
}

/// The payload a tool's envelopes must carry: an envelope is unwrapped by its
/// `(domain_type, enricher_id)`, and another pair, or a payload its schema refuses, is no
/// data (002 §5.5).
pub struct PayloadType {
    /// The kind of payload.
    pub domain_type: String,
    /// Its producer.
    pub enricher_id: String,
    /// The payload's compiled schema, when one is declared.
    pub validator: Option<jsonschema::Validator>,
}

impl fmt::Debug for PayloadType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PayloadType")
            .field("domain_type", &self.domain_type)
            .field("enricher_id", &self.enricher_id)
            .finish_non_exhaustive()
    }
}

impl PayloadType {
    /// Why an envelope naming `(domain_type, enricher_id)` with `payload` (when it is to
    /// be used) is not this type; `None` when it is.
    pub fn refusal(
        &self,
        domain_type: &str,
        enricher_id: &str,
        payload: Option<&serde_json::Value>,
    ) -> Option<String> {
        if domain_type != self.domain_type || enricher_id != self.enricher_id {
            return Some(format!(
                "the envelope is of type ({domain_type}, {enricher_id}), not ({}, {})",
                self.domain_type, self.enricher_id
            ));
        }
        let validator = self.validator.as_ref()?;
        check_with(validator, payload?)
            .err()
            .map(|problem| format!("the payload does not fit its type: {problem}"))
    }
}

impl fmt::Debug for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool")
            .field("id", &self.id)
            .field("connector_kind", &self.connector_kind)
            .field("timeout_ms", &self.timeout_ms)
            .finish_non_exhaustive()
    }
}

impl Tool {
    /// Checks arguments against the schema; the error lists what failed, in plain words.
    ///
    /// # Errors
    /// The arguments do not satisfy the schema.
    pub fn check_args(&self, args: &serde_json::Value) -> Result<(), String> {
        check_with(&self.validator, args)
    }
}

/// Validates a value and joins the failures into one message.
pub(crate) fn check_with(
    validator: &jsonschema::Validator,
    value: &serde_json::Value,
) -> Result<(), String> {
    if validator.is_valid(value) {
        return Ok(());
    }
    let problems: Vec<String> = validator
        .iter_errors(value)
        .take(3)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("{at}: {e}")
            }
        })
        .collect();
    Err(problems.join("; "))
}
