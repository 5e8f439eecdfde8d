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
    /// When a call needs the user's approval first (`approval:`), if ever.
    pub approval: Option<Arc<ApprovalPolicy>>,
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
