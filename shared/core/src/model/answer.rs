//! What comes back from a model call: the normalized stream events, the usage, and the
//! errors phrased as what the caller can do.

use serde::{Deserialize, Serialize};

/// Why a model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Finished its answer.
    EndTurn,
    /// Stopped to let tools run.
    ToolUse,
    /// Hit the output limit.
    MaxTokens,
    /// Anything else (content filter, guardrail ...).
    Other,
}

impl StopReason {
    /// The finish reason as OpenTelemetry's GenAI conventions spell the common ones.
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::EndTurn => "stop",
            StopReason::ToolUse => "tool_call",
            StopReason::MaxTokens => "length",
            StopReason::Other => "other",
        }
    }
}

/// Tokens a call consumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Input tokens not read from or written to the cache.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Input tokens read from the cache.
    pub cache_read: u64,
    /// Input tokens written to the cache.
    pub cache_write: u64,
}

impl TokenUsage {
    /// Adds another usage to this one.
    pub fn add(&mut self, other: &TokenUsage) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
    }
}

/// One normalized event of a model stream.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelEvent {
    /// A piece of answer text.
    TextDelta(String),
    /// A piece of reasoning text (never part of the answer).
    ReasoningDelta(String),
    /// A tool call begins.
    ToolUseStart {
        /// Provider's id of the call.
        id: String,
        /// Tool name.
        name: String,
    },
    /// A fragment of a tool call's JSON arguments; concatenate per id.
    ToolUseDelta {
        /// Provider's id of the call.
        id: String,
        /// JSON text fragment.
        fragment: String,
    },
    /// The call's arguments are complete.
    ToolUseStop {
        /// Provider's id of the call.
        id: String,
    },
    /// The message ended.
    Stop(StopReason),
    /// Tokens consumed by the call.
    Usage(TokenUsage),
}

/// What went wrong with a model call, phrased as what the caller can do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// Too many requests: back off and retry within the deadline.
    #[error("model throttled the request")]
    Throttled,
    /// A transient failure: retry may help.
    #[error("model temporarily unavailable: {0}")]
    Unavailable(String),
    /// The request was rejected; retrying the same request will not help.
    #[error("model rejected the request: {0}")]
    Invalid(String),
    /// The call took too long.
    #[error("model call timed out")]
    Timeout,
    /// The model produced output that cannot be used.
    #[error("model produced malformed output: {0}")]
    Malformed(String),
}

impl ModelError {
    /// Whether retrying (with backoff) may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, ModelError::Throttled | ModelError::Unavailable(_))
    }
}
