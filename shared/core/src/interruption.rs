//! A turn that waits for the user (D-36): what it asks, the work it keeps while it waits,
//! and the user's reply. The waiting work is carried in the episode's state, so it is as
//! durable as a committed turn on every store, and a crash while waiting loses nothing.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::consulted::AgentStatus;
use crate::message::{Message, ToolResultStatus};

/// How long an interruption waits before it counts as declined, by default: a day.
pub const DEFAULT_TTL_MS: u64 = 24 * 60 * 60 * 1000;

/// What the turn waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InterruptionKind {
    /// The user's approval of one tool call.
    Approval,
}

/// What the user is asked, as the stream and the record show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interruption {
    /// Its id, which the reply names.
    pub id: String,
    /// What it waits for.
    pub kind: InterruptionKind,
    /// The specialist that asks.
    pub agent_id: String,
    /// Its label.
    pub label: String,
    /// The tool it would call.
    pub tool: String,
    /// The action in plain words (after the privacy guard).
    pub action: String,
    /// The call's exact arguments (after the privacy guard).
    pub args: Value,
    /// SHA-256 of the arguments as they will run (compact JSON), so the record says which
    /// exact call was approved.
    pub args_sha256: String,
    /// When it was asked, epoch ms.
    pub created_ms: u64,
    /// When it counts as declined, epoch ms.
    pub expires_ms: u64,
}

/// The user's answer to an approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Run the call.
    Approve,
    /// Do not run it.
    Decline,
}

impl Decision {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Approve => "approve",
            Decision::Decline => "decline",
        }
    }
}

/// The user's reply to an interruption.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reply {
    /// The interruption answered.
    pub interruption_id: String,
    /// The answer.
    pub decision: Decision,
}

/// A call of the waiting specialist's last reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldCall {
    /// The model's call id.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Arguments, as the call was checked.
    pub input: Value,
    /// Its answer once it has one (it ran, or the user decided); `None` while it waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<HeldAnswer>,
}

/// A held call's answer, as the specialist will read it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldAnswer {
    /// Outcome.
    pub status: ToolResultStatus,
    /// Content (JSON).
    pub content: Value,
}

/// A specialist stopped at a call that needs the user, with all it had done.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WaitingAgent {
    /// Its conversation up to the reply that made the calls (that reply not included).
    pub messages: Vec<Message>,
    /// The reply's text.
    pub reply_text: String,
    /// The reply's calls, in order.
    pub calls: Vec<HeldCall>,
    /// What it had said so far (its answer text builds on it).
    pub text: String,
    /// Tool calls it made so far.
    pub tool_calls: u32,
    /// How its data calls went so far: `ok`, `partial`, `unavailable` (as text: the
    /// interruption module stays below the tool results in the core's layering).
    pub data: Vec<String>,
    /// Time it had run, ms.
    pub duration_ms: u64,
}

impl WaitingAgent {
    /// The first call still waiting for the user.
    pub fn next_held(&self) -> Option<&HeldCall> {
        self.calls.iter().find(|c| c.answer.is_none())
    }
}

/// One sub-agent's part of a waiting turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedJob {
    /// Card id.
    pub agent_id: String,
    /// The orchestrator's tool-use id.
    pub call_id: String,
    /// The query it was given.
    pub query: String,
    /// Prior context it was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prior_context: Option<String>,
    /// Card-declared extra arguments.
    #[serde(default)]
    pub extra: serde_json::Map<String, Value>,
    /// How it ended, or `None` while it waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<AgentStatus>,
    /// Its answer text, once it ended.
    #[serde(default)]
    pub text: String,
    /// Tool calls it made.
    #[serde(default)]
    pub tool_calls: u32,
    /// Wall time, ms.
    #[serde(default)]
    pub duration_ms: u64,
    /// What it was doing when it stopped for the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<Box<WaitingAgent>>,
}

/// A turn waiting for the user: the question and all finished work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Awaiting {
    /// The turn that waits (the one a reply resumes).
    pub turn_id: String,
    /// The user's message that started the work.
    pub user_text: String,
    /// What the orchestrator said before it asked the specialists.
    #[serde(default)]
    pub preamble: String,
    /// The sub-agents asked, in order, finished or waiting.
    pub jobs: Vec<SavedJob>,
    /// What the user is asked now.
    pub interruption: Interruption,
}

/// Why a reply cannot resume the turn, in plain words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplyError {
    /// Nothing waits on that turn (never, or no longer).
    #[error("That turn is not waiting for an answer.")]
    NotWaiting,
    /// The reply names another interruption than the one waiting.
    #[error("That is not the question this turn is waiting on; answer the latest one.")]
    WrongInterruption,
    /// The interruption expired.
    #[error("That request has expired, so it counts as declined; ask again to start over.")]
    Expired,
}

impl Awaiting {
    /// Whether `reply` to turn `turn_id` may resume this at `now_ms`.
    ///
    /// # Errors
    /// What is wrong with the reply.
    pub fn check(&self, turn_id: &str, reply: &Reply, now_ms: u64) -> Result<(), ReplyError> {
        if self.turn_id != turn_id {
            return Err(ReplyError::NotWaiting);
        }
        if self.interruption.id != reply.interruption_id {
            return Err(ReplyError::WrongInterruption);
        }
        if now_ms >= self.interruption.expires_ms {
            return Err(ReplyError::Expired);
        }
        Ok(())
    }
}

/// The id of the turn that resumes `turn_id` with an answer to `interruption_id`: the same
/// answer sent again is the same turn, replayed, never run twice (D-25).
pub fn resume_turn_id(turn_id: &str, interruption_id: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    hasher.update(turn_id.as_bytes());
    hasher.update([0u8]);
    hasher.update(interruption_id.as_bytes());
    let mut out = String::from("r_");
    hex_onto(&mut out, &hasher.finalize()[..16]);
    out
}

fn hex_onto(out: &mut String, bytes: &[u8]) {
    use std::fmt::Write as _;
    for b in bytes {
        // Writing to a String cannot fail.
        let _ = write!(out, "{b:02x}");
    }
}

/// SHA-256 of `args` as compact JSON, in hex.
pub fn args_sha256(args: &Value) -> String {
    use sha2::{Digest, Sha256};
    let mut out = String::with_capacity(64);
    hex_onto(&mut out, &Sha256::digest(args.to_string().as_bytes()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn awaiting(expires_ms: u64) -> Awaiting {
        Awaiting {
            turn_id: "t1".into(),
            user_text: "redeem".into(),
            preamble: String::new(),
            jobs: Vec::new(),
            interruption: Interruption {
                id: "int_1".into(),
                kind: InterruptionKind::Approval,
                agent_id: "rewards".into(),
                label: "Rewards".into(),
                tool: "redeem".into(),
                action: "Redeem 800 points".into(),
                args: json!({ "points": 800 }),
                args_sha256: args_sha256(&json!({ "points": 800 })),
                created_ms: 0,
                expires_ms,
            },
        }
    }

    #[test]
    fn a_reply_resumes_only_its_turn_and_question_before_expiry() {
        let waiting = awaiting(1_000);
        let reply = Reply {
            interruption_id: "int_1".into(),
            decision: Decision::Approve,
        };
        assert_eq!(waiting.check("t1", &reply, 999), Ok(()));
        assert_eq!(waiting.check("t2", &reply, 0), Err(ReplyError::NotWaiting));
        let other = Reply {
            interruption_id: "int_2".into(),
            ..reply.clone()
        };
        assert_eq!(
            waiting.check("t1", &other, 0),
            Err(ReplyError::WrongInterruption)
        );
        assert_eq!(waiting.check("t1", &reply, 1_000), Err(ReplyError::Expired));
    }

    #[test]
    fn the_state_reads_back_from_its_json() {
        let waiting = awaiting(5);
        let text = serde_json::to_string(&waiting).unwrap();
        assert_eq!(serde_json::from_str::<Awaiting>(&text).unwrap(), waiting);
        assert_eq!(args_sha256(&json!({ "points": 800 })).len(), 64);
    }
}
