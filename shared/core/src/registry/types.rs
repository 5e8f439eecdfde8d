//! Validated registry entries: only these reach the runtime.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::directive::{Addressable, DirectLinePolicy};
use crate::memory::MemoryPolicy;
use crate::obligation::ObligationRule;
use crate::ports::model::{Inference, ModelRequest, SystemBlock, ToolDef};
use crate::privacy::PrivacyPolicy;
use crate::prompt::PromptPlan;

/// A card's role: a documentation label, not a switch (D-1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AgentRole {
    /// Routes to sub-agents.
    Orchestrator,
    /// A specialist built on the platform.
    Native,
    /// A specialist that wraps an upstream service.
    ExternalWrapper,
    /// A helper not meant for users.
    InternalHelper,
}

/// How the orchestrator turns sub-agent answers into the final response (D-13).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Composition {
    /// One more orchestrator call composes from the tool results.
    #[default]
    Mediated,
    /// Single intent: the sub-agent's text streams through the output pipeline.
    Passthrough,
    /// First sub-agent to produce text streams live; others buffer and flush, paced.
    Direct,
    /// As `Direct`, then one more orchestrator call composes a summary from the results:
    /// the user watches the specialists work, then reads one answer in the assistant's
    /// voice.
    DirectThenCompose,
}

impl fmt::Display for Composition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Composition::Mediated => "mediated",
            Composition::Passthrough => "passthrough",
            Composition::Direct => "direct",
            Composition::DirectThenCompose => "direct_then_compose",
        })
    }
}

/// What happens to a status code (D-12).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StatusPolicy {
    /// Shown at once, in the card's words exactly as written.
    Forward,
    /// Shown at once, the card's words with fields of the call filled in: `{agent}` (the
    /// sub-agent's label) and `{<argument>}` (a required argument of the tool call).
    Transform,
    /// Never shown.
    Suppress,
    /// Held for the merge window and merged with concurrent codes into one line.
    Batch,
}

/// A status code's words and policy.
#[derive(Debug, Clone, PartialEq)]
pub struct StatusMessage {
    /// Words (with `transform`, may contain `{agent}` and `{<argument>}`).
    pub text: Arc<str>,
    /// Policy.
    pub policy: StatusPolicy,
}

impl StatusMessage {
    /// The line shown for a code from the call by `agent_label` with `args` (the call's
    /// arguments): under `transform` its placeholders are filled, under any other policy
    /// the words are shown as written.
    pub fn line(&self, agent_label: &str, args: &serde_json::Value) -> String {
        if self.policy != StatusPolicy::Transform {
            return self.text.to_string();
        }
        let mut out = String::with_capacity(self.text.len());
        let mut rest = &*self.text;
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let after = &rest[open + 1..];
            let Some(close) = after.find('}') else {
                out.push_str(&rest[open..]);
                return out;
            };
            let name = &after[..close];
            match (name, args.get(name)) {
                ("agent", _) => out.push_str(agent_label),
                (_, Some(serde_json::Value::String(value))) => out.push_str(value),
                (_, Some(value @ (serde_json::Value::Number(_) | serde_json::Value::Bool(_)))) => {
                    out.push_str(&value.to_string());
                }
                // Checked when the card was loaded; a connector's own code has no fields.
                _ => out.push_str(&rest[open..open + close + 2]),
            }
            rest = &after[close + 1..];
        }
        out.push_str(rest);
        out
    }

    /// The `{name}` placeholders of some words.
    pub fn placeholders(text: &str) -> Vec<&str> {
        let mut names = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find('{') {
            let after = &rest[open + 1..];
            let Some(close) = after.find('}') else { break };
            names.push(&after[..close]);
            rest = &after[close + 1..];
        }
        names
    }
}

/// The orchestrator's status-event rendering (D-12).
#[derive(Debug, Clone, PartialEq)]
pub struct StatusMessages {
    /// Concurrent codes within this window merge into one line.
    pub merge_window_ms: u64,
    /// A sub-agent silent this long gets a generic progress line.
    pub idle_after_ms: u64,
    /// The generic progress line (`{agent}` is the label).
    pub idle_text: Arc<str>,
    /// Known codes.
    pub codes: BTreeMap<String, StatusMessage>,
}

impl Default for StatusMessages {
    fn default() -> Self {
        StatusMessages {
            merge_window_ms: 150,
            idle_after_ms: 2_000,
            idle_text: Arc::from("Still working on it…"),
            codes: BTreeMap::new(),
        }
    }
}

/// Text-only answers the orchestrator may give without a sub-agent (D-14).
#[derive(Debug, Clone, PartialEq)]
pub struct Fastpath {
    /// Allowed categories (`greeting`, `acknowledgement`, `chitchat`).
    pub allow: Vec<String>,
    /// Sub-agent that gets every other text-only turn.
    pub fallback: Arc<str>,
}

/// Turn and episode limits (D-15).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnLimits {
    /// Sub-agents dispatched per turn.
    pub max_subagents: u32,
    /// Tool calls per turn, across all sub-agents.
    pub max_tool_calls: u32,
    /// Orchestrator model calls per turn.
    pub max_iterations: u32,
    /// Model and tool calls per episode within the window.
    pub episode_max_calls: u32,
    /// The episode window.
    pub episode_window_ms: u64,
    /// Consecutive failures that open a tool's circuit.
    pub breaker_failures: u32,
    /// Time an open circuit waits before a trial call.
    pub breaker_cooldown_ms: u64,
}

impl Default for TurnLimits {
    fn default() -> Self {
        TurnLimits {
            max_subagents: 8,
            max_tool_calls: 30,
            max_iterations: 6,
            episode_max_calls: 50,
            episode_window_ms: 300_000,
            breaker_failures: 5,
            breaker_cooldown_ms: 30_000,
        }
    }
}

/// How an orchestrator gets its work done (D-16): a card option.
#[derive(Debug, Clone, Default)]
pub enum OrchestrationMode {
    /// It routes to its fixed specialists through `ask_<id>` tools.
    #[default]
    Routing,
    /// It plans: sub-agents it creates on the fly from skills, run in dependency waves.
    Planner(Arc<Planner>),
}

impl OrchestrationMode {
    /// The planner's settings, when it plans.
    pub fn planner(&self) -> Option<&Arc<Planner>> {
        match self {
            OrchestrationMode::Routing => None,
            OrchestrationMode::Planner(p) => Some(p),
        }
    }
}

/// One tool as a planner's sub-agents use it: `<domain>.<tool id>`, where the domain is a
/// specialist card that lists the tool (D-16).
#[derive(Debug, Clone)]
pub struct Skill {
    /// `<domain>.<tool id>`, what `dispatch_agent` grants and `use_skill` names.
    pub name: Arc<str>,
    /// The domain: the id of the card the skill comes from.
    pub domain: Arc<str>,
    /// The tool it runs.
    pub tool: Arc<Tool>,
}

/// The skills of one domain, sorted by name.
#[derive(Debug, Clone)]
pub struct SkillDomain {
    /// The domain (a card id).
    pub id: Arc<str>,
    /// What the domain covers: its card's description.
    pub description: Arc<str>,
    /// Its skills, sorted by name.
    pub skills: Vec<Arc<Skill>>,
}

/// The skills a planner may grant, by domain; domains and skills sorted by name, so every
/// text built from it is byte-stable for the prompt cache.
#[derive(Debug, Clone, Default)]
pub struct SkillCatalog {
    /// The domains, sorted by id.
    pub domains: Vec<SkillDomain>,
}

impl SkillCatalog {
    /// A domain by id.
    pub fn domain(&self, id: &str) -> Option<&SkillDomain> {
        self.domains.iter().find(|d| &*d.id == id)
    }

    /// A skill by name.
    pub fn skill(&self, name: &str) -> Option<&Arc<Skill>> {
        let (domain, _) = name.split_once('.')?;
        self.domain(domain)?
            .skills
            .iter()
            .find(|s| &*s.name == name)
    }

    /// Every skill, in name order.
    pub fn skills(&self) -> impl Iterator<Item = &Arc<Skill>> {
        self.domains.iter().flat_map(|d| d.skills.iter())
    }

    /// The domains' ids, comma-separated: what a message naming a wrong one lists.
    pub fn domain_list(&self) -> String {
        self.domains
            .iter()
            .map(|d| &*d.id)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A planner's settings (the card's `skills` and `planner` sections).
#[derive(Debug, Clone)]
pub struct Planner {
    /// The skills it may grant.
    pub catalog: SkillCatalog,
    /// What every sub-agent it dispatches is made from: the platform blocks and the
    /// card's worker blocks, its model, tuning and timeout. Each node gets its own id,
    /// its granted tools and its `use_skill`.
    pub worker: Arc<Agent>,
    /// Tool calls a sub-agent may make when its dispatch names no number.
    pub agent_tool_calls: u32,
    /// The most tool calls a dispatch may give one sub-agent.
    pub max_agent_tool_calls: u32,
}

/// Orchestrator-only settings.
#[derive(Debug, Clone)]
pub struct Orchestration {
    /// Routing or planning.
    pub mode: OrchestrationMode,
    /// Sub-agent ids, in declared order (none for a planner).
    pub sub_agents: Vec<Arc<str>>,
    /// Composition policy.
    pub composition: Composition,
    /// Fan-out cap (D-9).
    pub fanout_cap: u32,
    /// Fastpath allowlist and fallback.
    pub fastpath: Option<Fastpath>,
    /// Status rendering.
    pub status: StatusMessages,
    /// Limits.
    pub limits: TurnLimits,
    /// Direct Line settings (D-21); the defaults when the card has none.
    pub direct_line: DirectLinePolicy,
    /// Obligation rules (D-22), in declared order; each names one of `sub_agents`.
    pub obligations: Vec<ObligationRule>,
    /// Privacy guard settings (D-23); the defaults (every kind, labels) when the card has
    /// none.
    pub privacy: PrivacyPolicy,
    /// When episodes are compacted and by which model (DESIGN §4); `None` only when the
    /// card's model did not resolve (a load error).
    pub memory: Option<MemoryPolicy>,
}

/// Per-card tuning.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Tuning {
    /// Output limit, temperature, reasoning effort and verbosity, as every request of the
    /// card carries them; the effort and verbosity only where the model takes them.
    pub inference: Inference,
}

/// A sub-agent's own limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentLimits {
    /// Tool calls within one invocation (default 5).
    pub max_tool_calls: u32,
    /// Wall time of one invocation.
    pub timeout_ms: u64,
}

impl Default for AgentLimits {
    fn default() -> Self {
        AgentLimits {
            max_tool_calls: 5,
            timeout_ms: 60_000,
        }
    }
}

/// Routing hints for evals and the offline model.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Routing {
    /// Example user messages this card should get.
    pub examples: Vec<String>,
    /// Keywords.
    pub keywords: Vec<String>,
}

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
}

/// How a model takes a reasoning effort (`capabilities.reasoning_effort` in models.yaml).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningSupport {
    /// Claude's extended thinking: a token budget per effort level. It runs at the
    /// model's own temperature and cannot be combined with a forced tool choice.
    Thinking,
}

/// A tool entry of `tools.yaml` (D-5).
#[derive(Clone)]
pub struct Tool {
    /// Registry id (also the name the model sees).
    pub id: Arc<str>,
    /// What it does.
    pub description: Arc<str>,
    /// Connector kind.
    pub connector_kind: Arc<str>,
    /// Connector configuration.
    pub connector_config: Arc<serde_json::Value>,
    /// Argument schema.
    pub schema: Arc<serde_json::Value>,
    /// Compiled argument schema.
    pub validator: Arc<jsonschema::Validator>,
    /// Timeout of one call.
    pub timeout_ms: u64,
    /// Status code emitted while the tool runs.
    pub status_code: Option<Arc<str>>,
    /// How a deterministic model may phrase one record of the result.
    pub result_template: Option<Arc<str>>,
    /// Major envelope version expected; any other is a failure and a metric (D-28).
    pub envelope_major: Option<u64>,
}

impl fmt::Debug for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool")
            .field("id", &self.id)
            .field("connector_kind", &self.connector_kind)
            .field("timeout_ms", &self.timeout_ms)
            .finish_non_exhaustive()
    }
}

impl Tool {
    /// Checks arguments against the schema; the error lists what failed, in plain words.
    ///
    /// # Errors
    /// The arguments do not satisfy the schema.
    pub fn check_args(&self, args: &serde_json::Value) -> Result<(), String> {
        check_with(&self.validator, args)
    }
}

/// Validates a value and joins the failures into one message.
pub(crate) fn check_with(
    validator: &jsonschema::Validator,
    value: &serde_json::Value,
) -> Result<(), String> {
    if validator.is_valid(value) {
        return Ok(());
    }
    let problems: Vec<String> = validator
        .iter_errors(value)
        .take(3)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("{at}: {e}")
            }
        })
        .collect();
    Err(problems.join("; "))
}

/// A prompt block (D-3).
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    /// Id.
    pub id: Arc<str>,
    /// `platform` or `vertical`.
    pub owner: BlockOwner,
    /// Category (persona, instructions, capabilities, safety, format, context).
    pub category: Arc<str>,
    /// Platform-required: injected at the head of every prompt.
    pub required: bool,
    /// The text.
    pub text: Arc<str>,
    /// File it came from.
    pub file: Arc<str>,
}

/// Who owns a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockOwner {
    /// The platform team.
    Platform,
    /// A vertical team.
    Vertical,
}

/// A validated agent card.
#[derive(Debug, Clone)]
pub struct Agent {
    /// Id.
    pub id: Arc<str>,
    /// The name metrics count it under: its id, or for a planner's sub-agent (whose id the
    /// planner chose) its planner's worker template, so that dimensions stay few.
    pub metrics_name: Arc<str>,
    /// Display label (defaults to the id, capitalised).
    pub label: Arc<str>,
    /// What it handles: the routing signal (D-6).
    pub description: Arc<str>,
    /// Role label.
    pub role: AgentRole,
    /// Its model.
    pub model: Arc<ModelSpec>,
    /// Its own tools.
    pub tools: Vec<Arc<Tool>>,
    /// Assembled stable prefix of its system prompt.
    pub prompt: PromptPlan,
    /// Tuning.
    pub tuning: Tuning,
    /// Its limits.
    pub limits: AgentLimits,
    /// Routing hints.
    pub routing: Routing,
    /// Extra `ask_<id>` argument properties declared by the card.
    pub ask_args: BTreeMap<String, serde_json::Value>,
    /// The `ask_<id>` tool other orchestrators call it through.
    pub ask_tool: ToolDef,
    /// Compiled `ask_<id>` schema.
    pub ask_validator: Arc<jsonschema::Validator>,
    /// Tools as the model sees them: its own tools, then one `ask_<id>` per sub-agent.
    pub model_tools: Arc<[ToolDef]>,
    /// Orchestrator settings when it has sub-agents.
    pub orchestration: Option<Orchestration>,
    /// The card file.
    pub file: Arc<str>,
}

impl Agent {
    /// Name of the tool that asks this agent.
    pub fn ask_tool_name(&self) -> &str {
        &self.ask_tool.name
    }

    /// Checks `ask_<id>` arguments.
    ///
    /// # Errors
    /// The arguments do not satisfy the schema.
    pub fn check_ask_args(&self, args: &serde_json::Value) -> Result<(), String> {
        check_with(&self.ask_validator, args)
    }

    /// How a Direct Line directive may name it: its id and label.
    pub fn addressable(&self) -> Addressable<'_> {
        Addressable {
            id: &self.id,
            label: &self.label,
        }
    }

    /// One of its own tools by id.
    pub fn tool(&self, id: &str) -> Option<&Arc<Tool>> {
        self.tools.iter().find(|t| &*t.id == id)
    }

    /// A request skeleton for this agent: system prompt, tools and tuning filled in.
    pub fn request(
        &self,
        purpose: crate::ports::model::CallPurpose,
        system: Vec<SystemBlock>,
    ) -> ModelRequest {
        ModelRequest {
            agent_id: self.id.clone(),
            model_id: self.model.model_id.clone(),
            purpose,
            system,
            messages: Vec::new(),
            tools: self.model_tools.clone(),
            tool_choice: Default::default(),
            inference: self.tuning.inference,
        }
    }
}
