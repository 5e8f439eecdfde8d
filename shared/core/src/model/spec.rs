//! Each model's entry of `models.yaml` (D-4): which provider serves it, its context window,
//! its prices and its capabilities, as data.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// A model entry of `models.yaml` (D-4).
#[derive(Debug, Clone, PartialEq)]
pub struct ModelSpec {
    /// Registry key.
    pub key: Arc<str>,
    /// Provider name (`bedrock`, `offline`, ...).
    pub provider: Arc<str>,
    /// The provider's model id.
    pub model_id: Arc<str>,
    /// Context window in tokens.
    pub context_window: u64,
    /// USD per million tokens.
    pub prices: Prices,
    /// What the model supports.
    pub capabilities: ModelCapabilities,
    /// Where the model is served, for providers reached over HTTP; `None` for the others.
    pub endpoint: Option<ModelEndpoint>,
}

/// Where a model served over HTTP answers (`base_url` and `api_key_env` in models.yaml).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelEndpoint {
    /// The API's base URL, e.g. `http://127.0.0.1:11434/v1`.
    pub base_url: Arc<str>,
    /// The environment variable that holds the API key; `None`: the server takes none.
    pub api_key_env: Option<Arc<str>>,
}

/// USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Prices {
    /// Input.
    pub input: f64,
    /// Output.
    pub output: f64,
    /// Cache read.
    pub cache_read: f64,
    /// Cache write.
    pub cache_write: f64,
}

/// Model capabilities: data, not callbacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ModelCapabilities {
    /// Can be forced to call a named tool.
    pub tool_choice: bool,
    /// Honours cache points.
    pub cache_points: bool,
    /// Emits several tool calls in one message.
    pub parallel_tool_calls: bool,
    /// How the model takes a card's `tuning.reasoning_effort`; `None`: it takes none.
    pub reasoning_effort: Option<ReasoningSupport>,
    /// Takes a card's `tuning.text_verbosity`.
    pub text_verbosity: bool,
    /// Sees pictures (D-42); a model that does not is told of them in words.
    pub pictures: bool,
}

/// How a model takes a reasoning effort (`capabilities.reasoning_effort` in models.yaml).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningSupport {
    /// Claude's extended thinking: a token budget per effort level. It runs at the
    /// model's own temperature and cannot be combined with a forced tool choice.
    Thinking,
}
