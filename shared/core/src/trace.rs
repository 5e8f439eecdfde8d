//! The routing record: one per turn (D-31), built by the runtime as it goes.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::composition::Composition;
use crate::consulted::AgentStatus;
use crate::directive::DirectMode;
pub use crate::guard::CapBehavior;
pub use crate::limits::LimitHit;
use crate::obligation::ObligationSource;

/// Outcome of one tool call as shown to clients (no payloads, no error text).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolOutcome {
    /// The tool answered.
    Ok,
    /// Degraded data.
    Partial,
    /// No usable data.
    Unavailable,
}

impl ToolOutcome {
    /// The name it is serialized as (and counted and audited under).
    pub fn as_str(self) -> &'static str {
        match self {
            ToolOutcome::Ok => "ok",
            ToolOutcome::Partial => "partial",
            ToolOutcome::Unavailable => "unavailable",
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

/// The guards that can change a turn, by their recorded names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GuardName {
    /// Fewer calls than the intents the orchestrator reported: re-asked.
    IntentCount,
    /// A short reply to a specialist's question went back to that specialist.
    Echo,
    /// A call sharing no word with the message was dropped.
    Overlap,
    /// A specialist got the user's exact words.
    Verbatim,
    /// A text-only answer outside the small-talk allowlist was rerouted.
    Fastpath,
    /// No usable call: routed to the fallback specialist.
    Fallback,
    /// A "yes, go on" resumed the calls a limit had left pending.
    Continue,
    /// A specialist's missing context was filled from the last turn.
    PriorContext,
    /// A specialist reached its tool-call limit.
    SubagentToolLimit,
    /// A specialist called a tool it does not have.
    UnknownTool,
    /// A tool call's arguments failed their schema.
    InvalidArgs,
    /// A tool's circuit breaker was open.
    Breaker,
    /// Older turns were left out of a prompt that would not fit the model (compaction had
    /// not caught up): the turn trimmed instead of failing.
    HistoryTrim,
    /// A specialist's upstream conversation had expired or was forgotten by the service: a
    /// new one started with its recent turns replayed.
    UpstreamRestart,
    /// A planner's sub-agent named a skill it was not granted: refused at run time.
    SkillNotGranted,
    /// A planner's step of dispatches was refused before anything ran.
    PlanRefused,
    /// A planner answered with text before consulting anyone, outside small talk.
    UngroundedAnswer,
    /// A tool call that needs the user's approval (its `approval:` rule held) was not
    /// run without it.
    ApprovalNeeded,
}

impl GuardName {
    /// The recorded name (as serialized).
    pub fn as_str(self) -> &'static str {
        match self {
            GuardName::IntentCount => "intent_count",
            GuardName::Echo => "echo",
            GuardName::Overlap => "overlap",
            GuardName::Verbatim => "verbatim",
            GuardName::Fastpath => "fastpath",
            GuardName::Fallback => "fallback",
            GuardName::Continue => "continue",
            GuardName::PriorContext => "prior_context",
            GuardName::SubagentToolLimit => "subagent_tool_limit",
            GuardName::UnknownTool => "unknown_tool",
            GuardName::InvalidArgs => "invalid_args",
            GuardName::Breaker => "breaker",
            GuardName::HistoryTrim => "history_trim",
            GuardName::UpstreamRestart => "upstream_restart",
            GuardName::SkillNotGranted => "skill_not_granted",
            GuardName::PlanRefused => "plan_refused",
            GuardName::UngroundedAnswer => "ungrounded_answer",
            GuardName::ApprovalNeeded => "approval_needed",
        }
    }
}

/// A guard that changed something.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuardFired {
    /// Which guard.
    pub guard: GuardName,
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
    /// When it started, in ms after the turn started: with `ended_ms`, shows which
    /// sub-agents ran at the same time (D-10).
    #[serde(default)]
    pub started_ms: u64,
    /// When it ended, in ms after the turn started.
    #[serde(default)]
    pub ended_ms: u64,
}

/// One data tool call of a sub-agent, as the audit trail keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallRecord {
    /// The sub-agent that made it.
    pub agent_id: String,
    /// The tool (a skill, for a planned sub-agent).
    pub tool: String,
    /// `ok`, `partial` or `unavailable`.
    pub outcome: ToolOutcome,
    /// Wall time, ms.
    pub duration_ms: u64,
    /// The checked arguments it ran with (003 §12.2): what an auditor asks first of an act.
    /// `null` in records written before they were kept.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub params: Value,
    /// Which of the sub-agent's executions in the turn made it, from 1 (a specialist asked
    /// twice has two); 0 in records written before it was kept, read as the first.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub execution: u32,
    /// The turn-unique number of the run that made it, while the turn runs: what
    /// `execution` is derived from when the turn ends.
    #[serde(skip)]
    pub run: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
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
    /// Composition policy used; none (recorded as `""`) when the entry agent orchestrates
    /// nothing.
    #[serde(with = "composition_or_empty")]
    pub composition: Option<Composition>,
    /// Limit that tripped, if any.
    pub limit: Option<LimitHit>,
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
    /// The `ask_<id>` calls the turn executed, with their arguments after the guards, in
    /// dispatch order: what evals compare and what `baton eval capture` turns into a case.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<AskedCall>,
    /// A planner's plan: its nodes and waves, how each node ended, refused steps (D-16).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<crate::plan::PlanRecord>,
    /// Every data tool call the turn's sub-agents made, in the order they ended: the
    /// audit trail's child records (003 §12).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallRecord>,
    /// The interruption this turn answered (a resumed turn), or set aside unanswered (an
    /// expired one counts as declined), D-36.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered: Option<crate::interruption::AnswerRecord>,
    /// The memories from earlier conversations the orchestrator was given (D-43).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memories: Vec<crate::consulted::Recalled>,
}

/// One executed `ask_<id>` call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AskedCall {
    /// The specialist.
    pub agent_id: String,
    /// Its arguments as executed (the query after verbatim protection, the intent count,
    /// the prior context, the card's extra arguments and the pictures passed, by number),
    /// kept as text: the record only stores and shows them.
    pub args: crate::json_text::JsonText,
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
    /// Not consulted this turn: the turn owed more specialists than its fan-out cap (or
    /// its room) lets run at once; it waits for "continue".
    Deferred,
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
    pub fn guard(&mut self, guard: GuardName, detail: impl Into<String>) {
        self.guards.push(GuardFired {
            guard,
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

/// The record's composition as it has always been written: the policy's name, or `""`.
mod composition_or_empty {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::composition::Composition;

    pub(super) fn serialize<S: Serializer>(
        value: &Option<Composition>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(composition) => composition.serialize(serializer),
            None => serializer.serialize_str(""),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Composition>, D::Error> {
        let name = String::deserialize(deserializer)?;
        if name.is_empty() {
            return Ok(None);
        }
        Composition::deserialize(serde::de::value::StrDeserializer::<D::Error>::new(&name))
            .map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closed_sets_keep_their_recorded_names() {
        let mut record = RoutingRecord {
            composition: Some(Composition::DirectThenCompose),
            limit: Some(LimitHit::TurnToolCalls),
            ..RoutingRecord::default()
        };
        record.guard(GuardName::SubagentToolLimit, "shop reached 3 tool calls");
        let json = serde_json::to_value(&record).unwrap();
        assert_eq!(json["composition"], "direct_then_compose");
        assert_eq!(json["limit"], "turn_tool_calls");
        assert_eq!(json["guards"][0]["guard"], "subagent_tool_limit");
        assert_eq!(
            serde_json::from_value::<RoutingRecord>(json).unwrap(),
            record
        );
        for guard in [
            GuardName::IntentCount,
            GuardName::PriorContext,
            GuardName::Breaker,
        ] {
            assert_eq!(serde_json::to_value(guard).unwrap(), guard.as_str());
        }
        for limit in [LimitHit::EpisodeRate, LimitHit::OrchestratorIterations] {
            assert_eq!(serde_json::to_value(limit).unwrap(), limit.as_str());
        }
    }

    #[test]
    fn no_composition_is_recorded_as_an_empty_name() {
        let record = RoutingRecord::default();
        let json = serde_json::to_value(&record).unwrap();
        assert_eq!(json["composition"], "");
        assert_eq!(json["limit"], serde_json::Value::Null);
        assert_eq!(
            serde_json::from_value::<RoutingRecord>(json)
                .unwrap()
                .composition,
            None
        );
    }
}
