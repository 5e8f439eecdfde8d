//! The authored shapes: what YAML and front matter deserialize into before validation.
//!
//! Unknown fields are rejected so that a typo is a load error, not a silent default.

use std::collections::BTreeMap;

use serde::Deserialize;

/// An agent card as written (D-1).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCard {
    pub(crate) id: String,
    #[serde(default)]
    pub(crate) label: Option<String>,
    /// May be left out by a card of one tool that has a description of its own (a remote
    /// agent's card supplies it).
    #[serde(default)]
    pub(crate) description: String,
    pub(crate) role: String,
    pub(crate) model: String,
    #[serde(default)]
    pub(crate) tools: Vec<String>,
    #[serde(default)]
    pub(crate) prompt_blocks: Vec<String>,
    #[serde(default)]
    pub(crate) sub_agents: Vec<String>,
    /// `routing` (the default) or `planner` (D-16).
    #[serde(default)]
    pub(crate) orchestration: Option<String>,
    /// A planner's skills: domains (card ids) or single skills (`<domain>.<tool>`).
    #[serde(default)]
    pub(crate) skills: Option<Vec<String>>,
    /// A planner's settings for the sub-agents it dispatches.
    #[serde(default)]
    pub(crate) planner: Option<RawPlanner>,
    #[serde(default)]
    pub(crate) tuning: RawTuning,
    #[serde(default)]
    pub(crate) limits: RawLimits,
    #[serde(default)]
    pub(crate) routing: RawRouting,
    /// Extra `ask_<id>` argument properties (JSON Schema), e.g. a support category.
    #[serde(default)]
    pub(crate) ask_args: BTreeMap<String, serde_json::Value>,
    /// Whether the specialist may ask the user a question mid-task (D-36).
    #[serde(default)]
    pub(crate) asks_user: bool,
    /// Whether its orchestrator may pass it the pictures the user sent (D-42).
    #[serde(default)]
    pub(crate) takes_pictures: bool,
    // Orchestrator-only fields.
    #[serde(default)]
    pub(crate) composition: Option<String>,
    #[serde(default)]
    pub(crate) fanout_cap: Option<u32>,
    #[serde(default)]
    pub(crate) fastpath: Option<RawFastpath>,
    // The trust-layer sections stay untyped here and are typed in the loader, one key at
    // a time, so a mistake in them is an error naming its own field (`direct_line.mode`)
    // and does not hide the rest of the card's problems.
    #[serde(default)]
    pub(crate) direct_line: Option<serde_json::Value>,
    #[serde(default)]
    pub(crate) status_messages: Option<RawStatusMessages>,
    #[serde(default)]
    pub(crate) obligations: Option<serde_json::Value>,
    #[serde(default)]
    pub(crate) privacy: Option<serde_json::Value>,
    #[serde(default)]
    pub(crate) turn_limits: Option<RawTurnLimits>,
    #[serde(default)]
    pub(crate) memory: Option<RawMemory>,
}

/// A planner's `planner` section as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPlanner {
    #[serde(default)]
    pub(crate) worker_model: Option<String>,
    #[serde(default)]
    pub(crate) worker_blocks: Vec<String>,
    #[serde(default)]
    pub(crate) agent_tool_calls: Option<u32>,
    #[serde(default)]
    pub(crate) max_agent_tool_calls: Option<u32>,
    #[serde(default)]
    pub(crate) agent_timeout_ms: Option<u64>,
}

/// An orchestrator's `memory` section as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMemory {
    #[serde(default)]
    pub(crate) compact_after_turns: Option<u32>,
    #[serde(default)]
    pub(crate) compact_at_fraction: Option<f64>,
    #[serde(default)]
    pub(crate) keep_last: Option<u32>,
    #[serde(default)]
    pub(crate) max_batch: Option<u32>,
    #[serde(default)]
    pub(crate) max_summary_chars: Option<usize>,
    #[serde(default)]
    pub(crate) summarizer: Option<String>,
}

/// One `obligations` rule as written; every field optional so that each one's problem is
/// reported on its own.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct RawObligation {
    pub(crate) agent: Option<String>,
    pub(crate) keywords: Vec<String>,
    pub(crate) always: bool,
    pub(crate) category: Option<crate::obligation::CategoryRule>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTuning {
    pub(crate) max_output_tokens: Option<u32>,
    pub(crate) temperature: Option<f32>,
    pub(crate) reasoning_effort: Option<String>,
    pub(crate) text_verbosity: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLimits {
    pub(crate) max_tool_calls: Option<u32>,
    pub(crate) timeout_ms: Option<u64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRouting {
    #[serde(default)]
    pub(crate) examples: Vec<String>,
    #[serde(default)]
    pub(crate) keywords: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFastpath {
    #[serde(default)]
    pub(crate) allow: Vec<String>,
    pub(crate) fallback: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawStatusMessages {
    /// Window in which concurrent codes merge into one line.
    pub(crate) merge_window_ms: Option<u64>,
    /// Silence after which a generic progress line is shown.
    pub(crate) idle_after_ms: Option<u64>,
    /// The generic progress line.
    pub(crate) idle_text: Option<String>,
    #[serde(default)]
    pub(crate) codes: BTreeMap<String, RawStatusCode>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawStatusCode {
    pub(crate) text: Option<String>,
    pub(crate) policy: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTurnLimits {
    pub(crate) max_subagents: Option<u32>,
    pub(crate) max_tool_calls: Option<u32>,
    pub(crate) max_iterations: Option<u32>,
    pub(crate) episode_max_calls: Option<u32>,
    pub(crate) episode_window_s: Option<u64>,
    pub(crate) breaker_failures: Option<u32>,
    pub(crate) breaker_cooldown_ms: Option<u64>,
}

/// `models.yaml` (D-4).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawModels {
    #[serde(default)]
    pub(crate) summarizer: Option<String>,
    pub(crate) models: BTreeMap<String, RawModel>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawModel {
    pub(crate) provider: String,
    pub(crate) model_id: String,
    pub(crate) context_window: u64,
    pub(crate) prices: RawPrices,
    #[serde(default)]
    pub(crate) capabilities: RawCapabilities,
    /// Where a served-over-HTTP provider answers (`openai_compatible`).
    #[serde(default)]
    pub(crate) base_url: Option<String>,
    /// The environment variable holding its API key (never the key itself).
    #[serde(default)]
    pub(crate) api_key_env: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPrices {
    pub(crate) input: f64,
    pub(crate) output: f64,
    #[serde(default)]
    pub(crate) cache_read: f64,
    #[serde(default)]
    pub(crate) cache_write: f64,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCapabilities {
    #[serde(default)]
    pub(crate) tool_choice: bool,
    #[serde(default)]
    pub(crate) cache_points: bool,
    #[serde(default)]
    pub(crate) parallel_tool_calls: bool,
    #[serde(default)]
    pub(crate) reasoning_effort: Option<crate::model::ReasoningSupport>,
    #[serde(default)]
    pub(crate) text_verbosity: bool,
    #[serde(default)]
    pub(crate) pictures: bool,
}

/// `tools.yaml` (D-5).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTools {
    pub(crate) tools: BTreeMap<String, RawTool>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTool {
    /// May be left out where the connector's backend describes the tool (MCP).
    #[serde(default)]
    pub(crate) description: Option<String>,
    pub(crate) connector: RawConnector,
    /// May be left out where the connector's backend lists the schema (MCP).
    #[serde(default)]
    pub(crate) schema: Option<serde_json::Value>,
    #[serde(default)]
    pub(crate) timeout_ms: Option<u64>,
    #[serde(default)]
    pub(crate) status: Option<String>,
    #[serde(default)]
    pub(crate) result_template: Option<String>,
    /// Major envelope version this tool expects; others are failures (D-28).
    #[serde(default)]
    pub(crate) envelope_major: Option<u64>,
    /// The payload's type: what the envelope must name, and the payload's schema.
    #[serde(default)]
    pub(crate) payload_type: Option<RawPayloadType>,
    /// Whether a call needs the user's approval first, and how it is put to them.
    #[serde(default)]
    pub(crate) approval: Option<RawApproval>,
}

/// A tool's `payload_type:` (002 §5.5): the envelope's payload is unwrapped by its
/// `(domain_type, enricher_id)`, checked against this.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPayloadType {
    pub(crate) domain_type: String,
    pub(crate) enricher_id: String,
    #[serde(default)]
    pub(crate) schema: Option<serde_json::Value>,
}

/// A tool's `approval:`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawApproval {
    /// `always` (the default) or a rule over the arguments (`points > 500`).
    #[serde(default)]
    pub(crate) when: Option<String>,
    /// The action in plain words, with `{argument}` placeholders.
    pub(crate) action: String,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct RawConnector {
    pub(crate) kind: String,
    #[serde(flatten)]
    pub(crate) config: serde_json::Map<String, serde_json::Value>,
}

/// A prompt block's front matter.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawBlockMeta {
    #[serde(default)]
    pub(crate) id: Option<String>,
    pub(crate) owner: String,
    pub(crate) category: String,
    #[serde(default)]
    pub(crate) required: bool,
}
