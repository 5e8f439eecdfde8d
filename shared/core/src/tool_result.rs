//! The JSON the runtime hands back to a model as tool results.
//!
//! Models read these (a language model as text, the offline model by field), so their shape
//! is part of the contract between the runtime and every `Model`. The runtime hands each
//! one over as compact JSON text: a `ToolResult` whose content is a JSON string holding
//! the document.

use serde::{Deserialize, Serialize};

use crate::consulted::AgentStatus;
use crate::ports::connector::{Envelope, EnvelopeStatus};

/// Result of an `ask_<id>` call, given to the orchestrator for composition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentAnswer {
    /// Sub-agent id.
    pub agent: String,
    /// Its label.
    pub label: String,
    /// Outcome.
    pub status: AgentStatus,
    /// Its answer text; empty when it produced none.
    pub answer: String,
    /// When it has no usable answer: what to tell the user, in plain words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

/// Outcome of a data tool call, given to the sub-agent that made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DataStatus {
    /// Use the data.
    Ok,
    /// Use the data; mention that some of it may be missing.
    Partial,
    /// No data: say it is unavailable.
    Unavailable,
}

/// Result of a data tool call, given to the sub-agent that made it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolData {
    /// Tool id.
    pub tool: String,
    /// Outcome (the envelope status decides it, D-28).
    pub status: DataStatus,
    /// The payload when there is one.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub data: serde_json::Value,
    /// Plain-words reason when unavailable (never an error string from a backend).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The plain words a sub-agent gets for data it cannot have (never a backend's error text).
pub const UNAVAILABLE_NOTE: &str = "This information is unavailable right now.";

/// The plain words a sub-agent gets when the service had already carried out this very
/// act (its idempotency key was seen, D-36): it happened once, and its details did not
/// come back this time.
pub const ALREADY_DONE_NOTE: &str = "Done: this was already carried out once (the service had recorded this exact request), so it was not done again. Its details did not come back this time.";

impl ToolData {
    /// No data from `tool`, with `note` saying so in plain words.
    pub fn unavailable(tool: &str, note: &str) -> Self {
        ToolData {
            tool: tool.to_owned(),
            status: DataStatus::Unavailable,
            data: serde_json::Value::Null,
            note: Some(note.to_owned()),
        }
    }
}

/// What a connector's answer means for the sub-agent that called the tool.
#[derive(Debug, Clone, PartialEq)]
pub enum EnvelopeVerdict {
    /// The data the sub-agent gets: its status decided by the envelope's status alone (D-28).
    Data(ToolData),
    /// The envelope was made for another principal: a security event (D-29). Its payload
    /// is suppressed, and the call is not retried.
    PrincipalMismatch {
        /// The producer that sent it, for the alert.
        enricher: String,
    },
    /// The envelope's payload is not of the type the tool declares (002 §5.5).
    TypeMismatch {
        /// Why, in words for the log.
        why: String,
    },
    /// The envelope's major version is not the one the tool declares.
    VersionMismatch {
        /// The major version the tool declares.
        expected: u64,
        /// The version the envelope has.
        version: String,
    },
}

impl EnvelopeVerdict {
    /// The data the sub-agent gets under this verdict.
    pub fn into_data(self, tool: &str) -> ToolData {
        match self {
            EnvelopeVerdict::Data(data) => data,
            EnvelopeVerdict::PrincipalMismatch { .. }
            | EnvelopeVerdict::VersionMismatch { .. }
            | EnvelopeVerdict::TypeMismatch { .. } => ToolData::unavailable(tool, UNAVAILABLE_NOTE),
        }
    }
}

/// Judges the envelope `tool` answered for the caller `principal`: the principal first,
/// then the declared major version, the payload's type (its `(domain_type, enricher_id)`,
/// then, for a payload to be used, its schema), then the status.
pub fn judge_envelope(
    tool: &str,
    envelope: Envelope,
    principal: &str,
    expected_major: Option<u64>,
    payload_type: Option<&crate::tool::PayloadType>,
) -> EnvelopeVerdict {
    if envelope.principal != principal {
        return EnvelopeVerdict::PrincipalMismatch {
            enricher: envelope.enricher_id,
        };
    }
    if let Some(expected) = expected_major
        && envelope.major_version() != Some(expected)
    {
        return EnvelopeVerdict::VersionMismatch {
            expected,
            version: envelope.version,
        };
    }
    let status = match envelope.status {
        EnvelopeStatus::Ok => DataStatus::Ok,
        EnvelopeStatus::Partial => DataStatus::Partial,
        EnvelopeStatus::Error => DataStatus::Unavailable,
    };
    let usable = (status != DataStatus::Unavailable).then_some(&envelope.payload);
    if let Some(why) =
        payload_type.and_then(|t| t.refusal(&envelope.domain_type, &envelope.enricher_id, usable))
    {
        return EnvelopeVerdict::TypeMismatch { why };
    }
    if status == DataStatus::Unavailable {
        return EnvelopeVerdict::Data(ToolData::unavailable(tool, UNAVAILABLE_NOTE));
    }
    EnvelopeVerdict::Data(ToolData {
        tool: tool.to_owned(),
        status,
        data: envelope.payload,
        note: None,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn envelope(status: EnvelopeStatus, principal: &str, version: &str) -> Envelope {
        serde_json::from_value(json!({
            "status": status, "payload": { "points": 500 }, "principal": principal,
            "version": version, "domain_type": "rewards", "enricher_id": "rewards-api",
        }))
        .unwrap()
    }

    #[test]
    fn the_status_alone_decides_for_the_right_principal() {
        let ok = judge_envelope(
            "rewards",
            envelope(EnvelopeStatus::Ok, "alice", "1.2.0"),
            "alice",
            Some(1),
            None,
        );
        assert_eq!(
            ok,
            EnvelopeVerdict::Data(ToolData {
                tool: "rewards".into(),
                status: DataStatus::Ok,
                data: json!({ "points": 500 }),
                note: None,
            })
        );
        let partial = judge_envelope(
            "rewards",
            envelope(EnvelopeStatus::Partial, "alice", "1.0.0"),
            "alice",
            None,
            None,
        );
        assert!(matches!(
            partial,
            EnvelopeVerdict::Data(ToolData {
                status: DataStatus::Partial,
                ..
            })
        ));
        // An error envelope's payload never reaches the sub-agent; plain words do.
        let error = judge_envelope(
            "rewards",
            envelope(EnvelopeStatus::Error, "alice", "1.0.0"),
            "alice",
            None,
            None,
        );
        assert_eq!(
            error,
            EnvelopeVerdict::Data(ToolData::unavailable("rewards", UNAVAILABLE_NOTE))
        );
    }

    #[test]
    fn another_principal_is_suppressed_before_anything_else() {
        let verdict = judge_envelope(
            "rewards",
            envelope(EnvelopeStatus::Ok, "mallory", "9.0.0"),
            "alice",
            Some(1),
            None,
        );
        assert_eq!(
            verdict,
            EnvelopeVerdict::PrincipalMismatch {
                enricher: "rewards-api".into()
            }
        );
        assert_eq!(
            verdict.into_data("rewards"),
            ToolData::unavailable("rewards", UNAVAILABLE_NOTE)
        );
    }

    #[test]
    fn a_foreign_major_version_is_refused() {
        for version in ["2.0.0", "not a version"] {
            let verdict = judge_envelope(
                "rewards",
                envelope(EnvelopeStatus::Ok, "alice", version),
                "alice",
                Some(1),
                None,
            );
            assert_eq!(
                verdict,
                EnvelopeVerdict::VersionMismatch {
                    expected: 1,
                    version: version.into()
                }
            );
        }
        // Without a declared major version any version is taken.
        let verdict = judge_envelope(
            "rewards",
            envelope(EnvelopeStatus::Ok, "alice", "7.1.0"),
            "alice",
            None,
            None,
        );
        assert!(matches!(verdict, EnvelopeVerdict::Data(_)));
    }

    #[test]
    fn a_payload_is_unwrapped_by_its_type_and_checked_against_it() {
        let typed = crate::tool::PayloadType {
            domain_type: "rewards".into(),
            enricher_id: "rewards-api".into(),
            validator: Some(
                jsonschema::validator_for(&json!({
                    "type": "object", "required": ["points"],
                    "properties": { "points": { "type": "integer" } },
                }))
                .unwrap(),
            ),
        };
        let judge =
            |envelope: Envelope| judge_envelope("rewards", envelope, "alice", None, Some(&typed));
        assert!(matches!(
            judge(envelope(EnvelopeStatus::Ok, "alice", "1.0.0")),
            EnvelopeVerdict::Data(ToolData {
                status: DataStatus::Ok,
                ..
            })
        ));
        // Another producer's type: no data, whatever its status.
        let mut other = envelope(EnvelopeStatus::Ok, "alice", "1.0.0");
        other.enricher_id = "offers-api".into();
        let EnvelopeVerdict::TypeMismatch { why } = judge(other) else {
            panic!("another type is refused");
        };
        assert!(why.contains("offers-api"), "{why}");
        // The right type with a payload its schema refuses.
        let mut wrong = envelope(EnvelopeStatus::Partial, "alice", "1.0.0");
        wrong.payload = json!({ "points": "many" });
        assert!(matches!(judge(wrong), EnvelopeVerdict::TypeMismatch { .. }));
        // An error envelope's payload is not used, so not checked: plain unavailable.
        let mut failed = envelope(EnvelopeStatus::Error, "alice", "1.0.0");
        failed.payload = serde_json::Value::Null;
        assert_eq!(
            judge(failed),
            EnvelopeVerdict::Data(ToolData::unavailable("rewards", UNAVAILABLE_NOTE))
        );
    }
}
