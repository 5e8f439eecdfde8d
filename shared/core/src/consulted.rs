//! The consulted record (D-20): who was consulted and how each ended, built from the runtime
//! trace only, and its plain footer for text-only channels.

use serde::{Deserialize, Serialize};

/// How one consulted sub-agent ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentStatus {
    /// Answered.
    Ok,
    /// Answered with degraded data.
    Partial,
    /// Failed (error, malformed output, unavailable data).
    Error,
    /// Ran out of time.
    Timeout,
    /// Stopped at a call that waits for the user's answer (D-36).
    Awaiting,
}

impl AgentStatus {
    /// The wire name (as serialized), for metric dimensions and stored counters.
    pub fn as_str(self) -> &'static str {
        match self {
            AgentStatus::Ok => "ok",
            AgentStatus::Partial => "partial",
            AgentStatus::Error => "error",
            AgentStatus::Timeout => "timeout",
            AgentStatus::Awaiting => "awaiting",
        }
    }

    /// Whether the sub-agent produced a usable answer.
    pub fn answered(self) -> bool {
        matches!(self, AgentStatus::Ok | AgentStatus::Partial)
    }
}

/// One entry of `agents_consulted` (D-20): built from the runtime trace only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConsultedAgent {
    /// Card id.
    pub agent_id: String,
    /// Display label.
    pub label: String,
    /// Outcome.
    pub status: AgentStatus,
    /// Wall time of the invocation.
    pub duration_ms: u64,
    /// Tool calls the sub-agent made.
    pub tool_calls: u32,
    /// It ran in the turn that waited for the user (D-36), not in this one: the record of
    /// the turn that completes covers the whole turn, and this entry says so, so that
    /// what counts executions (the audit trail, the aggregates) counts it once.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub carried: bool,
}

/// A memory the orchestrator was given for a turn (D-43): the record names it, so the user
/// can see why Baton knew something they said in another conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recalled {
    /// The memory.
    pub id: crate::recall::MemoryId,
    /// What it is about.
    pub subject: String,
}

/// The footer with the memories the turn was given: `Consulted: Shop · Remembered: dog,
/// saving` (or `Remembered: dog` when nobody was consulted).
pub fn footer_with(agents: &[ConsultedAgent], memories: &[Recalled]) -> String {
    let consulted = footer(agents);
    if memories.is_empty() {
        return consulted;
    }
    let subjects: Vec<&str> = memories.iter().map(|m| m.subject.as_str()).collect();
    let remembered = format!("Remembered: {}", subjects.join(", "));
    if consulted.is_empty() {
        remembered
    } else {
        format!("{consulted} · {remembered}")
    }
}

/// `Consulted: Shop, Support (unavailable)` — or an empty string when nobody was.
pub fn footer(agents: &[ConsultedAgent]) -> String {
    if agents.is_empty() {
        return String::new();
    }
    let names: Vec<String> = agents
        .iter()
        .map(|a| match a.status {
            AgentStatus::Ok => a.label.clone(),
            AgentStatus::Partial => format!("{} (partial)", a.label),
            AgentStatus::Error => format!("{} (unavailable)", a.label),
            AgentStatus::Timeout => format!("{} (timed out)", a.label),
            AgentStatus::Awaiting => format!("{} (waiting for you)", a.label),
        })
        .collect();
    format!("Consulted: {}", names.join(", "))
}
