//! What a waiting call's answer is made of: the call a held call runs, the status its
//! result carries, and documents as models receive them (compact JSON text).

use baton_core::interruption::HeldCall;
use baton_core::message::ToolResultStatus;
use baton_core::tool_result::DataStatus;
use serde_json::Value;

use super::model_call::RawCall;
use super::work::AgentJob;

/// The tool call a held call runs once approved: itself, or for a planned sub-agent the
/// call of the skill it names.
pub(crate) fn acting_call(job: &AgentJob, held: &HeldCall) -> Option<RawCall> {
    let call = RawCall {
        id: held.id.clone(),
        name: held.name.clone(),
        args: held.input.to_string(),
    };
    match &job.worker {
        Some(brief) => brief.granted(&call),
        None => Some(call),
    }
}

pub(crate) fn tool_status(status: DataStatus) -> ToolResultStatus {
    if status == DataStatus::Unavailable {
        ToolResultStatus::Error
    } else {
        ToolResultStatus::Ok
    }
}

/// A document as models receive it: compact JSON text, what a language model reads anyway,
/// and a fraction of the memory of a value tree while the call is open.
pub(crate) fn as_json_text(document: &impl serde::Serialize) -> Value {
    serde_json::to_string(document)
        .map(Value::String)
        .unwrap_or(Value::Null)
}
