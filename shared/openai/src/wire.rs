//! The chat-completions chunk as servers send it, read leniently: every field optional,
//! unknown fields ignored, `arguments` as a string or (some servers) an object.

use serde::Deserialize;
use serde_json::Value;

/// One streamed chunk (or, with `message` instead of `delta`, a whole completion).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Chunk {
    #[serde(default)]
    pub(crate) choices: Option<Vec<Choice>>,
    #[serde(default)]
    pub(crate) usage: Option<Usage>,
    /// Some servers report a failure inside the stream.
    #[serde(default)]
    pub(crate) error: Option<Value>,
}

/// One choice; Baton asks for one (`n` = 1), so only the first counts.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Choice {
    #[serde(default)]
    pub(crate) index: Option<u64>,
    #[serde(default)]
    pub(crate) delta: Option<Delta>,
    /// A non-streamed answer carries the whole message here.
    #[serde(default)]
    pub(crate) message: Option<Delta>,
    #[serde(default)]
    pub(crate) finish_reason: Option<String>,
}

/// What a chunk adds to the message.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Delta {
    #[serde(default)]
    pub(crate) content: Option<String>,
    /// vLLM, llama.cpp, DeepSeek.
    #[serde(default)]
    pub(crate) reasoning_content: Option<String>,
    /// Ollama, OpenRouter.
    #[serde(default)]
    pub(crate) reasoning: Option<String>,
    #[serde(default)]
    pub(crate) tool_calls: Option<Vec<ToolCallDelta>>,
}

/// A piece of one tool call.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ToolCallDelta {
    #[serde(default)]
    pub(crate) index: Option<u64>,
    #[serde(default)]
    pub(crate) id: Option<String>,
    #[serde(default)]
    pub(crate) function: Option<FunctionDelta>,
}

/// The function part of a tool-call piece.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct FunctionDelta {
    #[serde(default)]
    pub(crate) name: Option<String>,
    #[serde(default)]
    pub(crate) arguments: Option<Value>,
}

/// Token counts; servers differ in which they send, and some send `{}`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Usage {
    #[serde(default)]
    pub(crate) prompt_tokens: Option<u64>,
    #[serde(default)]
    pub(crate) completion_tokens: Option<u64>,
    #[serde(default)]
    pub(crate) prompt_tokens_details: Option<PromptDetails>,
}

/// Where the prompt's cached tokens are reported (OpenAI, vLLM).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct PromptDetails {
    #[serde(default)]
    pub(crate) cached_tokens: Option<u64>,
}
