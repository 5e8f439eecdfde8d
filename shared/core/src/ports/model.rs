//! The `Model` port: one streaming conversation call.
//!
//! Providers (Bedrock ConverseStream, the offline model, the scripted model) implement
//! [`Model::stream`]; the runtime never sees a provider's wire types. A request carries the
//! system prompt as blocks with cache points, the conversation, the tools and the tool
//! choice; the answer is a stream of normalized [`ModelEvent`]s.

use std::pin::Pin;
use std::sync::Arc;

use futures_core::Stream;
use serde::{Deserialize, Serialize};

use crate::message::Message;

/// A boxed, sendable stream: what object-safe ports return.
pub type BoxStream<'a, T> = Pin<Box<dyn Stream<Item = T> + Send + 'a>>;

/// The stream a model call yields.
pub type ModelStream = BoxStream<'static, Result<ModelEvent, ModelError>>;

/// A language model (or a deterministic stand-in for one).
///
/// Contract: the request is borrowed only for the call itself — a model converts what it
/// needs into its own form before returning (so the runtime can retry the same request
/// without copying it). Dropping the stream cancels the call. A stream ends after
/// [`ModelEvent::Stop`] (and, where the provider reports it, a final
/// [`ModelEvent::Usage`]). Errors are terminal: nothing follows an `Err`.
pub trait Model: Send + Sync {
    /// Start one conversation call.
    fn stream(&self, request: &ModelRequest) -> ModelStream;
}

impl<M: Model + ?Sized> Model for Arc<M> {
    fn stream(&self, request: &ModelRequest) -> ModelStream {
        (**self).stream(request)
    }
}

/// Why the runtime makes a call. Informational for providers; deterministic models and
/// traces use it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallPurpose {
    /// The orchestrator's first call of a turn: preamble and routing.
    Route,
    /// The orchestrator is re-asked because it reported more intents than calls (D-7).
    Reminder,
    /// The orchestrator composes the final answer from tool results.
    Compose,
    /// A sub-agent's call inside its own tool loop.
    Agent,
    /// The orchestrator may add a note after a specialist's Direct Line answer.
    Note,
    /// Compaction asks the summarizer for an episode's summary.
    Summarize,
}

/// One block of the system prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct SystemBlock {
    /// The text.
    pub text: Arc<str>,
    /// Whether a cache point follows this block (the end of the stable prefix).
    pub cache_point: bool,
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDef {
    /// Tool name as the model sees it.
    pub name: Arc<str>,
    /// What the tool is for.
    pub description: Arc<str>,
    /// JSON Schema of the arguments.
    pub input_schema: Arc<serde_json::Value>,
}

/// How the model must use the tools.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    #[default]
    Auto,
    /// The model must call some tool.
    Any,
    /// The model must call this tool.
    Tool(String),
    /// The model must not call tools.
    None,
}

/// Sampling, size and effort settings of one call (a card's `tuning`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Inference {
    /// Maximum output tokens of the answer.
    pub max_output_tokens: Option<u32>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// How hard the model may think before it answers; only for a model whose
    /// capabilities take it (checked at load).
    pub reasoning_effort: Option<ReasoningEffort>,
    /// How long its answers should be; only for a model whose capabilities take it.
    pub text_verbosity: Option<TextVerbosity>,
}

/// A card's `tuning.reasoning_effort`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningEffort {
    /// A little thinking.
    Low,
    /// More thinking.
    Medium,
    /// The most thinking.
    High,
}

/// A card's `tuning.text_verbosity`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TextVerbosity {
    /// Terse answers.
    Low,
    /// Ordinary answers.
    Medium,
    /// Thorough answers.
    High,
}

/// The words both settings are written with.
pub const LEVELS: &str = "low, medium, high";

impl ReasoningEffort {
    /// `low`, `medium` or `high`.
    pub fn parse(word: &str) -> Option<Self> {
        match word {
            "low" => Some(Self::Low),
            "medium" => Some(Self::Medium),
            "high" => Some(Self::High),
            _ => None,
        }
    }

    /// The word as written on a card.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
        }
    }
}

impl TextVerbosity {
    /// `low`, `medium` or `high`.
    pub fn parse(word: &str) -> Option<Self> {
        match word {
            "low" => Some(Self::Low),
            "medium" => Some(Self::Medium),
            "high" => Some(Self::High),
            _ => None,
        }
    }

    /// The word as written on a card.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
        }
    }
}

/// One conversation call.
#[derive(Debug, Clone)]
pub struct ModelRequest {
    /// Which agent card makes the call.
    pub agent_id: Arc<str>,
    /// The provider's model id (from `models.yaml`).
    pub model_id: Arc<str>,
    /// Why the runtime makes the call.
    pub purpose: CallPurpose,
    /// The system prompt, stable prefix first.
    pub system: Vec<SystemBlock>,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// Tools offered.
    pub tools: Arc<[ToolDef]>,
    /// Tool choice.
    pub tool_choice: ToolChoice,
    /// Limits.
    pub inference: Inference,
}

impl ModelRequest {
    /// The text of the latest user message, if any.
    pub fn latest_user_text(&self) -> Option<&str> {
        self.messages.iter().rev().find_map(Message::user_text)
    }
}

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
