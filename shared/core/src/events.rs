//! The stream protocol's events (design.md §5).
//!
//! [`Event`] is everything that may reach a client; [`WireEvent`] adds the protocol
//! version, the turn id and the sequence number. Nothing internal is an `Event`: how the
//! engine keeps each sub-agent's text apart (its segments) never reaches the wire.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::directive::DirectMode;
use crate::plan::NodeStatus;
use crate::privacy::PrivacyReceipt;
pub use crate::trace::ToolOutcome;
use crate::turn::{AgentStatus, ConsultedAgent, ModelUsage, TurnOutcome};

/// Version of the event protocol carried in every event (`v`).
pub const PROTOCOL_VERSION: u32 = 1;

/// `source` of text written by the orchestrator itself.
pub const SOURCE_ORCHESTRATOR: &str = "orchestrator";
/// `source` of an attributed note that follows a delegated answer.
pub const SOURCE_NOTE: &str = "note";

/// Where a Direct Line turn stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DirectLineState {
    /// One message to the specialist.
    Single,
    /// A lasting direct conversation (opened now or earlier).
    Sticky,
    /// The lasting conversation ended with this turn.
    Exited,
}

/// One event a client may see.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The turn was received and is being worked on (sent at once).
    Thinking {},
    /// An id for the response (the turn id; lets a client correlate and retry).
    ResponseId {
        /// The id.
        response_id: String,
        /// The episode the turn belongs to.
        episode_id: String,
    },
    /// Answer text.
    Text {
        /// `orchestrator`, a sub-agent id, or `note`.
        source: String,
        /// The text piece.
        text: String,
    },
    /// Reasoning text (never part of the answer).
    Reasoning {
        /// Who reasons.
        source: String,
        /// The text piece.
        text: String,
    },
    /// A progress line in the assistant's words (D-12).
    Status {
        /// Status codes merged into this line.
        codes: Vec<String>,
        /// The line.
        message: String,
    },
    /// A sub-agent's tool call started.
    ToolCallStart {
        /// Call id.
        call_id: String,
        /// Sub-agent.
        agent: String,
        /// Tool id.
        tool: String,
    },
    /// A sub-agent's tool call returned.
    ToolResult {
        /// Call id.
        call_id: String,
        /// Sub-agent.
        agent: String,
        /// Tool id.
        tool: String,
        /// Outcome.
        status: ToolOutcome,
    },
    /// A sub-agent's tool call is over.
    ToolCallEnd {
        /// Call id.
        call_id: String,
        /// Sub-agent.
        agent: String,
        /// Tool id.
        tool: String,
        /// Wall time.
        duration_ms: u64,
    },
    /// This turn goes straight to a specialist (Direct Line, D-21). In a lasting direct
    /// conversation it comes every turn: the indicator.
    DirectLine {
        /// Sub-agent.
        agent: String,
        /// Its label.
        label: String,
        /// `strict`: no orchestrator text; `additive`: an attributed note may follow.
        mode: DirectMode,
        /// One message, a lasting conversation, or its end.
        state: DirectLineState,
    },
    /// A piece of a specialist's Direct Line answer as it streams (after the privacy
    /// guard). The `delegated_answer` that follows is authoritative: it carries the whole
    /// text (the pieces joined, when the specialist answered) and replaces them.
    DelegatedText {
        /// Sub-agent.
        agent: String,
        /// Its label.
        label: String,
        /// The piece.
        text: String,
    },
    /// A specialist's verbatim answer delivered by the runtime (Direct Line): the
    /// orchestrator can neither remove nor rewrite it.
    DelegatedAnswer {
        /// Sub-agent.
        agent: String,
        /// Its label.
        label: String,
        /// How the specialist ended; on a failure `text` says so in plain words.
        status: AgentStatus,
        /// The verbatim text (after the privacy guard).
        text: String,
    },
    /// A planner's step was accepted: these sub-agents will run, each in its wave (D-16).
    /// A turn may have several steps; each adds its nodes.
    Plan {
        /// The step's nodes, in dispatch order.
        nodes: Vec<PlanNodeView>,
    },
    /// A planned sub-agent started.
    NodeStart {
        /// Its id.
        node: String,
        /// Its wave.
        wave: u32,
    },
    /// A planned sub-agent ended, or will not run.
    NodeEnd {
        /// Its id.
        node: String,
        /// Its wave.
        wave: u32,
        /// How it ended.
        status: NodeStatus,
        /// Wall time.
        duration_ms: u64,
        /// Tool calls it made.
        tool_calls: u32,
        /// Why it did not run (skipped, not run), in plain words.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// Who was consulted, from the runtime trace (D-20).
    AgentsConsulted {
        /// Entries in dispatch order.
        agents: Vec<ConsultedAgent>,
        /// A plain footer line for text-only channels.
        footer: String,
        /// The memories from earlier conversations the orchestrator was given (D-43).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        memories: Vec<crate::consulted::Recalled>,
    },
    /// Tokens and cost (D-32).
    Usage {
        /// By model.
        models: Vec<ModelUsage>,
        /// Total in USD.
        cost_usd: f64,
    },
    /// Something went wrong, in plain language only.
    Error {
        /// The message.
        message: String,
    },
    /// The turn waits for the user (D-36): what it asks. The turn then completes with
    /// `awaiting_user`, and a reply (`POST /v1/turns/{turn_id}/resume`) continues it.
    /// Boxed: the largest event by far and among the rarest, it would otherwise set the size
    /// of every event.
    Interruption(Box<InterruptionView>),
    /// The turn is over; the stream closes.
    Completed {
        /// How it ended.
        outcome: TurnOutcome,
        /// What the privacy guard masked in this turn's output (D-23).
        privacy: PrivacyReceipt,
    },
}

impl Event {
    /// The SSE `event:` name.
    pub fn name(&self) -> &'static str {
        match self {
            Event::Thinking {} => "thinking",
            Event::ResponseId { .. } => "response_id",
            Event::Text { .. } => "text",
            Event::Reasoning { .. } => "reasoning",
            Event::Status { .. } => "status",
            Event::ToolCallStart { .. } => "tool_call_start",
            Event::ToolResult { .. } => "tool_result",
            Event::ToolCallEnd { .. } => "tool_call_end",
            Event::DirectLine { .. } => "direct_line",
            Event::DelegatedText { .. } => "delegated_text",
            Event::DelegatedAnswer { .. } => "delegated_answer",
            Event::Plan { .. } => "plan",
            Event::NodeStart { .. } => "node_start",
            Event::NodeEnd { .. } => "node_end",
            Event::AgentsConsulted { .. } => "agents_consulted",
            Event::Usage { .. } => "usage",
            Event::Error { .. } => "error",
            Event::Interruption(_) => "interruption",
            Event::Completed { .. } => "completed",
        }
    }

    /// Whether this event ends a turn's stream.
    pub fn is_terminal(&self) -> bool {
        matches!(self, Event::Completed { .. })
    }
}

/// What a turn that waits for the user asks, as clients see it ([`Event::Interruption`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InterruptionView {
    /// The interruption's id, which the reply names.
    pub id: String,
    /// What it waits for (`approval`).
    pub kind: crate::interruption::InterruptionKind,
    /// The specialist that asks.
    pub agent: String,
    /// Its label.
    pub label: String,
    /// The tool it would call.
    pub tool: String,
    /// The action in plain words.
    pub action: String,
    /// The call's exact arguments, masked by the privacy guard.
    pub args: serde_json::Value,
    /// When it counts as declined, epoch ms.
    pub expires_ms: u64,
    /// The sign-in page to open, for an account link (D-37).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

impl From<&crate::interruption::Interruption> for InterruptionView {
    /// What a client is shown of a stored interruption (its words and arguments were
    /// masked before they were stored).
    fn from(i: &crate::interruption::Interruption) -> Self {
        InterruptionView {
            id: i.id.clone(),
            kind: i.kind,
            agent: i.agent_id.clone(),
            label: i.label.clone(),
            tool: i.tool.clone(),
            action: i.action.clone(),
            args: i.args.clone(),
            expires_ms: i.expires_ms,
            url: i.link.as_ref().map(|l| l.url.clone()),
        }
    }
}

/// One node of a plan as clients see it (its mission after the privacy guard).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanNodeView {
    /// Its id.
    pub id: String,
    /// What it must do.
    pub mission: String,
    /// Its skills.
    pub skills: Vec<String>,
    /// The nodes it waits for.
    pub depends_on: Vec<String>,
    /// Its wave, from 1.
    pub wave: u32,
}

/// An event on the wire: version, turn id and sequence number added.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireEvent {
    /// Protocol version.
    pub v: u32,
    /// Turn id.
    pub turn_id: Arc<str>,
    /// Position in the turn's stream, from 1; also the SSE `id`.
    pub seq: u64,
    /// The event.
    #[serde(flatten)]
    pub event: Event,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interruption_is_one_flat_json_object_and_reads_back() {
        let asked = Event::Interruption(Box::new(InterruptionView {
            id: "i1".into(),
            kind: crate::interruption::InterruptionKind::Approval,
            agent: "rewards".into(),
            label: "Rewards".into(),
            tool: "redeem".into(),
            action: "Redeem 800 points".into(),
            args: serde_json::json!({"points": 800}),
            expires_ms: 7,
            url: None,
        }));
        let json = serde_json::to_value(&asked).unwrap();
        assert_eq!(json["type"], "interruption");
        assert_eq!(json["action"], "Redeem 800 points");
        assert_eq!(json["args"]["points"], 800);
        assert!(json.get("url").is_none());
        assert_eq!(serde_json::from_value::<Event>(json).unwrap(), asked);
        // The rare interruption does not set every event's size.
        assert!(
            std::mem::size_of::<Event>() <= 96,
            "{}",
            std::mem::size_of::<Event>()
        );
    }

    #[test]
    fn wire_event_is_one_flat_json_object() {
        let e = WireEvent {
            v: PROTOCOL_VERSION,
            turn_id: Arc::from("t1"),
            seq: 3,
            event: Event::Text {
                source: "orchestrator".into(),
                text: "hi".into(),
            },
        };
        let json = serde_json::to_string(&e).unwrap_or_default();
        assert_eq!(
            json,
            r#"{"v":1,"turn_id":"t1","seq":3,"type":"text","source":"orchestrator","text":"hi"}"#
        );
        let back: WireEvent = serde_json::from_str(&json).unwrap_or_else(|_| e.clone());
        assert_eq!(back, e);
    }

    #[test]
    fn thinking_has_only_its_type() {
        let json = serde_json::to_string(&Event::Thinking {}).unwrap_or_default();
        assert_eq!(json, r#"{"type":"thinking"}"#);
    }
}
