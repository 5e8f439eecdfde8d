//! The routing record: one per turn (D-31), built by the runtime as it goes.

use serde::{Deserialize, Serialize};

use crate::directive::DirectMode;
use crate::obligation::ObligationSource;
use crate::turn::AgentStatus;

/// Fan-out relative to the cap (D-9), ordered from within to over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CapBehavior {
    /// Fewer calls than the cap.
    #[default]
    Within,
    /// Exactly the cap.
    At,
    /// More calls than the cap: the extra ones were dropped.
    Over,
}

impl CapBehavior {
    /// Classifies `calls` against `cap`.
    pub fn of(calls: usize, cap: usize) -> Self {
        match calls.cmp(&cap) {
            std::cmp::Ordering::Less => CapBehavior::Within,
            std::cmp::Ordering::Equal => CapBehavior::At,
            std::cmp::Ordering::Greater => CapBehavior::Over,
        }
    }
}

/// Why a call emitted by the orchestrator did not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DropReason {
    /// The tool name is not one of this orchestrator's.
    UnknownTool,
    /// Arguments failed the schema or were not JSON.
    InvalidArgs,
    /// A second call to the same sub-agent.
    Duplicate,
    /// Mixed intent and no content word shared with the user's text (D-8).
    NoOverlap,
    /// Beyond the fan-out cap (D-9).
    OverCap,
    /// A turn or episode limit (D-15).
    Limit,
}

impl DropReason {
    /// The wire name (as serialized), for metric dimensions.
    pub fn as_str(self) -> &'static str {
        match self {
            DropReason::UnknownTool => "unknown_tool",
            DropReason::InvalidArgs => "invalid_args",
            DropReason::Duplicate => "duplicate",
            DropReason::NoOverlap => "no_overlap",
            DropReason::OverCap => "over_cap",
            DropReason::Limit => "limit",
        }
    }
}

/// A dropped call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DroppedCall {
    /// Tool name as emitted.
    pub tool: String,
    /// Why.
    pub reason: DropReason,
}

/// A guard that changed something.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuardFired {
    /// Guard name (`intent_count`, `echo`, `overlap`, `verbatim`, `fastpath`, ...).
    pub guard: String,
    /// What it did.
    pub detail: String,
}

/// Per-sub-agent outcome in the routing record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentOutcome {
    /// Card id.
    pub agent_id: String,
    /// Outcome.
    pub status: AgentStatus,
    /// Wall time.
    pub latency_ms: u64,
    /// Tool calls made.
    pub tool_calls: u32,
}

/// The routing record of one turn.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RoutingRecord {
    /// Sub-agents invoked, in dispatch order.
    pub invoked: Vec<String>,
    /// Largest `intent_count` the orchestrator reported.
    pub intent_count: u32,
    /// The fan-out cap in force.
    pub cap: u32,
    /// Calls relative to the cap.
    pub cap_behavior: CapBehavior,
    /// Calls that did not run.
    pub dropped: Vec<DroppedCall>,
    /// Guards that fired.
    pub guards: Vec<GuardFired>,
    /// Re-asks and model retries.
    pub retries: u32,
    /// Text-only answer allowed by the Fastpath allowlist (its category).
    pub fastpath: Option<String>,
    /// Per-sub-agent outcome.
    pub outcomes: Vec<AgentOutcome>,
    /// Composition policy used.
    pub composition: String,
    /// Limit that tripped, if any.
    pub limit: Option<String>,
    /// `principal_mismatch` suppressions during the turn.
    pub principal_mismatches: u32,
    /// The Direct Line, when the user addressed a specialist (D-21).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direct_line: Option<DirectLineRecord>,
    /// Specialists this turn had to consult, and how each obligation was met (D-22).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub obligations: Vec<ObligationRecord>,
    /// What the runtime or the orchestrator did beyond plain routing: reminders with a
    /// forced tool choice, consultations the runtime made itself, notes added to a
    /// delegated answer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interventions: Vec<Intervention>,
}

/// A Direct Line turn in the routing record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirectLineRecord {
    /// The specialist addressed.
    pub agent_id: String,
    /// `strict` or `additive`.
    pub mode: DirectMode,
    /// Whether the turn belongs to a lasting direct conversation.
    pub sticky: bool,
}

/// How an obligation was met.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ObligationMet {
    /// The orchestrator called the specialist on its own.
    ByModel,
    /// The orchestrator called it after a reminder with a forced tool choice.
    AfterReminder,
    /// The runtime consulted it with the user's text.
    ByRuntime,
    /// The specialist was consulted on the Direct Line.
    DirectLine,
}

/// One obligation of the turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObligationRecord {
    /// The specialist that had to be consulted.
    pub agent_id: String,
    /// Where the obligation came from.
    pub source: ObligationSource,
    /// How it was met.
    pub met: ObligationMet,
    /// Reminders with a forced tool choice sent for it.
    pub reminders: u32,
}

/// What kind of intervention.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InterventionKind {
    /// The orchestrator was reminded and its tool choice forced.
    ForcedToolChoice,
    /// The runtime consulted a specialist the orchestrator would not.
    RuntimeConsult,
    /// The orchestrator added a note after a delegated answer.
    Note,
}

/// An intervention, as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Intervention {
    /// What kind.
    pub kind: InterventionKind,
    /// The specialist concerned.
    pub agent_id: String,
    /// What happened, briefly.
    pub detail: String,
}

impl InterventionKind {
    /// The wire name (as serialized), for metric dimensions.
    pub fn as_str(self) -> &'static str {
        match self {
            InterventionKind::ForcedToolChoice => "forced_tool_choice",
            InterventionKind::RuntimeConsult => "runtime_consult",
            InterventionKind::Note => "note",
        }
    }
}

impl RoutingRecord {
    /// Notes a guard firing.
    pub fn guard(&mut self, guard: &str, detail: impl Into<String>) {
        self.guards.push(GuardFired {
            guard: guard.to_owned(),
            detail: detail.into(),
        });
    }

    /// Notes an intervention.
    pub fn intervene(&mut self, kind: InterventionKind, agent_id: &str, detail: impl Into<String>) {
        self.interventions.push(Intervention {
            kind,
            agent_id: agent_id.to_owned(),
            detail: detail.into(),
        });
    }

    /// Notes a dropped call.
    pub fn drop_call(&mut self, tool: &str, reason: DropReason) {
        self.dropped.push(DroppedCall {
            tool: tool.to_owned(),
            reason,
        });
    }
}
