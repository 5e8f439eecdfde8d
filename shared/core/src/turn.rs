//! What a committed turn and an episode's carried state look like.

use serde::{Deserialize, Serialize};

pub use crate::consulted::{AgentStatus, ConsultedAgent};
use crate::model::TokenUsage;
use crate::privacy::PrivacyReceipt;
use crate::trace::RoutingRecord;

/// Tokens and cost of one model within a turn (D-32).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelUsage {
    /// Registry key of the model.
    pub model: String,
    /// Calls made.
    pub calls: u32,
    /// Tokens.
    #[serde(flatten)]
    pub tokens: TokenUsage,
    /// Cost in USD.
    pub cost_usd: f64,
}

/// How a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnOutcome {
    /// Answered in full.
    Answered,
    /// A limit tripped; some work was not done and the user was offered to continue.
    Limited,
    /// The turn could not be answered (the user was told so in plain words).
    Failed,
    /// The caller stopped the turn before it ended (an A2A `CancelTask`); what ran is
    /// still recorded.
    Canceled,
    /// The turn waits for the user (an approval, D-36); a reply resumes it.
    AwaitingUser,
}

impl TurnOutcome {
    /// The wire name (as serialized), for metric dimensions and stored counters.
    pub fn as_str(self) -> &'static str {
        match self {
            TurnOutcome::Answered => "answered",
            TurnOutcome::Limited => "limited",
            TurnOutcome::Failed => "failed",
            TurnOutcome::Canceled => "canceled",
            TurnOutcome::AwaitingUser => "awaiting_user",
        }
    }
}

/// A sub-agent's part of a turn: kept apart so each sub-agent later sees only its own
/// history (D-17).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Segment {
    /// Card id.
    pub agent_id: String,
    /// The query it was given.
    pub query: String,
    /// Its answer text (narration only).
    pub text: String,
    /// Outcome.
    pub status: AgentStatus,
}

/// A committed turn (`TURN#<seq>`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnRecord {
    /// Episode id.
    pub episode_id: String,
    /// Position in the episode, from 1.
    pub seq: u64,
    /// Turn id (idempotency key).
    pub turn_id: String,
    /// Commit time, epoch ms.
    pub created_ms: u64,
    /// The user's text.
    pub user_text: String,
    /// What the user was shown, as one text (narration only, no payloads).
    pub narration: String,
    /// Per-sub-agent parts.
    pub segments: Vec<Segment>,
    /// `agents_consulted` as sent.
    pub consulted: Vec<ConsultedAgent>,
    /// The routing record (D-31).
    pub routing: RoutingRecord,
    /// Usage by model.
    pub usage: Vec<ModelUsage>,
    /// Total cost in USD.
    pub cost_usd: f64,
    /// Keys of the bodies stored for this turn.
    pub body_keys: Vec<String>,
    /// How it ended.
    pub outcome: TurnOutcome,
    /// The Direct Line exchange, when the user addressed a specialist directly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direct: Option<DirectExchange>,
    /// What the privacy guard masked in the turn's output.
    #[serde(default)]
    pub privacy: PrivacyReceipt,
    /// What the request asked, hashed, so that a turn id sent again with another request
    /// is told apart from a retry (empty for turns stored before it was kept).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub fingerprint: String,
    /// The client's own id for the user's message (A2A's `messageId`), when its face has
    /// one: what reading the turn back names the message by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// The pictures the user sent with the message (D-42), by reference: their bytes are
    /// in the store's bodies, never in the record.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pictures: Vec<crate::picture::PictureRef>,
}

/// What a Direct Line turn delivered, as the user saw it (after the privacy guard).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DirectExchange {
    /// The verbatim answers, in delivery order.
    pub answers: Vec<Delegated>,
    /// The orchestrator's attributed note, when it added one (additive mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One answer delivered on the Direct Line, as the user saw it (after the privacy guard).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Delegated {
    /// Card id.
    pub agent_id: String,
    /// Display label.
    pub label: String,
    /// How the specialist ended.
    pub status: AgentStatus,
    /// The delivered text.
    pub text: String,
}

/// A turn record that JSON cannot hold: a cost that is not a finite number (serde would
/// write it as `null`, which no longer reads back as a record).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the turn could not be saved: it holds a number that cannot be stored")]
pub struct UnstorableRecord;

impl TurnRecord {
    /// The record as compact JSON, as every store keeps it; refused when it would not
    /// read back.
    ///
    /// # Errors
    /// A non-finite cost.
    pub fn to_json(&self) -> Result<String, UnstorableRecord> {
        let finite = self.cost_usd.is_finite() && self.usage.iter().all(|u| u.cost_usd.is_finite());
        if !finite {
            return Err(UnstorableRecord);
        }
        serde_json::to_string(self).map_err(|_| UnstorableRecord)
    }
}

/// Work a limit stopped, kept so that "continue" can pick it up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingCall {
    /// Sub-agent to consult.
    pub agent_id: String,
    /// The query it would have been given.
    pub query: String,
}

/// Model and tool calls in one minute, for the per-episode sliding window (D-15).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RateBucket {
    /// Start of the minute, epoch ms.
    pub minute_ms: u64,
    /// Calls counted in it.
    pub calls: u32,
}

/// Runtime state carried from one turn of an episode to the next.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct EpisodeState {
    /// Calls per minute over the recent window.
    #[serde(default)]
    pub rate_window: Vec<RateBucket>,
    /// Work a limit stopped last turn.
    #[serde(default)]
    pub pending: Vec<PendingCall>,
    /// The specialist of a lasting direct conversation, while it lasts (D-21).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direct_line: Option<String>,
    /// A planner's nodes a limit stopped last turn (D-16).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_plan: Option<Box<crate::plan::PendingPlan>>,
    /// A turn waiting for the user, with its finished work (D-36).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub awaiting: Option<Box<crate::interruption::Awaiting>>,
}

impl EpisodeState {
    /// Calls counted within `window_ms` before `now_ms`.
    pub fn calls_in_window(&self, now_ms: u64, window_ms: u64) -> u32 {
        let from = now_ms.saturating_sub(window_ms);
        self.rate_window
            .iter()
            .filter(|b| b.minute_ms + 60_000 > from)
            .map(|b| b.calls)
            .sum()
    }

    /// Records `calls` at `now_ms` and forgets buckets older than `window_ms`.
    pub fn record_calls(&mut self, now_ms: u64, window_ms: u64, calls: u32) {
        let minute = now_ms - now_ms % 60_000;
        let from = now_ms.saturating_sub(window_ms);
        self.rate_window.retain(|b| b.minute_ms + 60_000 > from);
        match self.rate_window.iter_mut().find(|b| b.minute_ms == minute) {
            Some(bucket) => bucket.calls += calls,
            None if calls > 0 => self.rate_window.push(RateBucket {
                minute_ms: minute,
                calls,
            }),
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(cost_usd: f64, model_cost_usd: f64) -> TurnRecord {
        TurnRecord {
            episode_id: "ep-1".into(),
            seq: 1,
            turn_id: "t-1".into(),
            created_ms: 0,
            user_text: "hi".into(),
            narration: "hello".into(),
            segments: Vec::new(),
            consulted: Vec::new(),
            routing: RoutingRecord::default(),
            usage: vec![ModelUsage {
                model: "m".into(),
                calls: 1,
                tokens: TokenUsage::default(),
                cost_usd: model_cost_usd,
            }],
            cost_usd,
            body_keys: Vec::new(),
            outcome: TurnOutcome::Answered,
            direct: None,
            privacy: PrivacyReceipt::default(),
            fingerprint: "f".into(),
            message_id: None,
            pictures: Vec::new(),
        }
    }

    #[test]
    fn a_record_reads_back_from_its_json_unless_a_cost_is_not_finite() {
        let ok = record(0.5, 0.5);
        let json = ok.to_json().unwrap();
        assert_eq!(serde_json::from_str::<TurnRecord>(&json).unwrap(), ok);
        assert_eq!(record(f64::NAN, 0.5).to_json(), Err(UnstorableRecord));
        assert_eq!(record(0.5, f64::INFINITY).to_json(), Err(UnstorableRecord));
    }

    #[test]
    fn sliding_window_forgets_old_minutes() {
        let mut s = EpisodeState::default();
        s.record_calls(0, 300_000, 10);
        s.record_calls(120_000, 300_000, 5);
        assert_eq!(s.calls_in_window(120_000, 300_000), 15);
        // Six minutes later the first bucket has left the window.
        assert_eq!(s.calls_in_window(360_001, 300_000), 5);
        s.record_calls(500_000, 300_000, 1);
        assert_eq!(
            s.rate_window,
            vec![RateBucket {
                minute_ms: 480_000,
                calls: 1
            }]
        );
    }
}
