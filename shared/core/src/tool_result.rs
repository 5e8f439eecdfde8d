//! The JSON the runtime hands back to a model as tool results.
//!
//! Models read these (a language model as text, the offline model by field), so their shape
//! is part of the contract between the runtime and every `Model`. The runtime hands each
//! one over as compact JSON text: a `ToolResult` whose content is a JSON string holding
//! the document.

use serde::{Deserialize, Serialize};

use crate::turn::AgentStatus;

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
