//! One conversation call as the runtime builds it: why it is made, the system prompt's
//! blocks, the tools offered and the settings of the call.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::message::Message;

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
    /// Extraction asks the summarizer what in a committed turn is worth remembering
    /// across conversations (D-43).
    Remember,
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

/// How much: the words a card's `tuning.reasoning_effort` and `tuning.text_verbosity` are
/// both written with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// A little: brief thinking, terse answers.
    Low,
    /// The ordinary amount.
    Medium,
    /// The most: long thinking, thorough answers.
    High,
}

/// A card's `tuning.reasoning_effort`: how hard the model may think before it answers.
pub type ReasoningEffort = Level;

/// A card's `tuning.text_verbosity`: how long its answers should be.
pub type TextVerbosity = Level;

/// The words both settings are written with.
pub const LEVELS: &str = "low, medium, high";

impl Level {
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
