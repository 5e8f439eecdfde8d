//! The `UpstreamChat` port: a chat service that keeps its own conversation (seed 000's
//! support upstream), behind an external-wrapper specialist.
//!
//! The runtime keeps the service's conversation id in the store with a lifetime
//! ([`UpstreamConversation`]), continues the conversation while the id lives, and starts a
//! new one — with the specialist's recent turns replayed as context — when it has expired
//! or the service no longer knows it. The answer streams back in chunks.
//!
//! A remote agent (A2A) is one such service: its context is the conversation, its task
//! updates are progress, and a task waiting for the user's reply (`INPUT_REQUIRED`) is
//! kept as the conversation's pending exchange, continued by the user's next message to
//! that specialist.

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::model::BoxStream;
use crate::principal::Principal;

/// One earlier exchange of the specialist, replayed to a new conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exchange {
    /// What the specialist was asked.
    pub user: String,
    /// What it answered.
    pub assistant: String,
}

/// One message to the service.
#[derive(Debug, Clone)]
pub struct UpstreamRequest {
    /// Registry id of the tool that names the service.
    pub tool_id: Arc<str>,
    /// Its connector configuration from `tools.yaml`.
    pub config: Arc<serde_json::Value>,
    /// On whose behalf (D-29).
    pub principal: Principal,
    /// The episode.
    pub episode_id: Arc<str>,
    /// The specialist.
    pub agent_id: Arc<str>,
    /// The message (the runtime puts the prior context before the query).
    pub message: String,
    /// The orchestrator's request details beside the query (its `ask_<id>` arguments other
    /// than the query), as a native specialist gets them.
    pub details: serde_json::Map<String, serde_json::Value>,
    /// The conversation to continue; `None` starts one.
    pub conversation_id: Option<String>,
    /// The exchange of that conversation that waits for the user's reply (the service
    /// asked the user something last time): this message is the reply.
    pub pending: Option<String>,
    /// When starting: the specialist's recent exchanges, oldest first.
    pub replay: Vec<Exchange>,
    /// The user's locale (BCP 47), when the turn has one.
    pub locale: Option<String>,
    /// The W3C `traceparent` of the specialist's span (D-33), to send on; `None` when
    /// traces are not exported.
    pub traceparent: Option<Arc<str>>,
}

/// What the service streams back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpstreamEvent {
    /// The conversation this answer belongs to (first, before any text).
    Conversation(String),
    /// A piece of the answer.
    Text(String),
    /// The service says it is working on it: the runtime reports the tool's status code.
    Working,
    /// The answer (the text so far) asks the user something, and the service keeps this
    /// exchange open under the given id: the user's next message to the specialist
    /// continues it. Last, when it comes.
    AwaitingInput(String),
}

/// How a service ended an exchange without an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpstreamEnd {
    /// It failed.
    Failed,
    /// It declined the request.
    Rejected,
    /// It was canceled (on the service's side).
    Canceled,
    /// It needs the user's own authorization first.
    AuthRequired,
}

impl std::fmt::Display for UpstreamEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            UpstreamEnd::Failed => "failed",
            UpstreamEnd::Rejected => "rejected the request",
            UpstreamEnd::Canceled => "canceled",
            UpstreamEnd::AuthRequired => "needs the user's authorization",
        })
    }
}

/// Why a message got no (complete) answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UpstreamError {
    /// The service does not know the conversation (it ended on its side).
    #[error("the service does not know this conversation")]
    UnknownConversation,
    /// The service could not be reached, failed, or stopped mid-answer.
    #[error("the service is unavailable: {0}")]
    Unavailable(String),
    /// The service answered outside the protocol.
    #[error("the service answered outside the protocol: {0}")]
    Invalid(String),
    /// The service ended the exchange without an answer; its own words are logged, never
    /// shown.
    #[error("the service {0}")]
    Ended(UpstreamEnd),
}

/// The stream of one answer.
pub type UpstreamStream = BoxStream<'static, Result<UpstreamEvent, UpstreamError>>;

/// A chat service.
///
/// Contract: the stream yields [`UpstreamEvent::Conversation`] before any text; errors are
/// terminal; [`UpstreamEvent::AwaitingInput`] comes last if at all. Dropping the stream
/// cancels the call (a remote agent's task is canceled on its side too).
#[async_trait]
pub trait UpstreamChat: Send + Sync {
    /// Sends one message; the answer streams back.
    async fn converse(&self, request: UpstreamRequest) -> Result<UpstreamStream, UpstreamError>;
}

/// How long a conversation id lives and how much is replayed to a new one: the tool's
/// `lifetime_s` and `replay_turns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConversationPolicy {
    /// Milliseconds an id stays usable after its last use (default 55 minutes).
    pub lifetime_ms: u64,
    /// The specialist's earlier turns replayed to a new conversation (default 6).
    pub replay_turns: usize,
}

impl Default for ConversationPolicy {
    fn default() -> Self {
        ConversationPolicy {
            lifetime_ms: 55 * 60 * 1_000,
            replay_turns: 6,
        }
    }
}

impl ConversationPolicy {
    /// The policy a connector configuration sets; the defaults where it sets none.
    ///
    /// # Errors
    /// A value that is not a positive whole number (`replay_turns` may be 0).
    pub fn from_config(config: &serde_json::Value) -> Result<Self, String> {
        let mut policy = ConversationPolicy::default();
        if let Some(v) = config.get("lifetime_s") {
            match v.as_u64().filter(|s| *s > 0) {
                Some(s) => policy.lifetime_ms = s.saturating_mul(1_000),
                None => {
                    return Err(format!(
                        "lifetime_s = {v}: must be a positive number of seconds"
                    ));
                }
            }
        }
        if let Some(v) = config.get("replay_turns") {
            match v.as_u64().and_then(|n| usize::try_from(n).ok()) {
                Some(n) => policy.replay_turns = n,
                None => return Err(format!("replay_turns = {v}: must be a whole number")),
            }
        }
        Ok(policy)
    }
}

/// A specialist's conversation with its service, as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpstreamConversation {
    /// The specialist.
    pub agent_id: String,
    /// The service's id for the conversation.
    pub conversation_id: String,
    /// When it stops being usable, epoch ms (refreshed on each use).
    pub expires_ms: u64,
    /// The service's exchange that waits for the user's reply, if the last answer asked
    /// the user something ([`UpstreamEvent::AwaitingInput`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<String>,
}

impl UpstreamConversation {
    /// Whether the id may still be used at `now_ms`. Checked on every read: a store's own
    /// expiry (DynamoDB's TTL) deletes items late.
    pub fn live_at(&self, now_ms: u64) -> bool {
        now_ms < self.expires_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_policy_defaults_to_55_minutes_and_6_turns_and_reads_the_config() {
        assert_eq!(
            ConversationPolicy::from_config(&json!({"url": "x"})),
            Ok(ConversationPolicy {
                lifetime_ms: 3_300_000,
                replay_turns: 6
            })
        );
        assert_eq!(
            ConversationPolicy::from_config(&json!({"lifetime_s": 60, "replay_turns": 0})),
            Ok(ConversationPolicy {
                lifetime_ms: 60_000,
                replay_turns: 0
            })
        );
        assert!(ConversationPolicy::from_config(&json!({"lifetime_s": 0})).is_err());
        assert!(ConversationPolicy::from_config(&json!({"replay_turns": "six"})).is_err());
    }

    #[test]
    fn an_id_is_live_until_it_expires() {
        let c = UpstreamConversation {
            agent_id: "support".into(),
            conversation_id: "c-1".into(),
            expires_ms: 1_000,
            pending: None,
        };
        assert!(c.live_at(999));
        assert!(!c.live_at(1_000));
    }
}
