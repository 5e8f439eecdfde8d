//! Validated registry entries: only these reach the runtime.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::composition::Composition;
use crate::directive::{Addressable, DirectLinePolicy};
use crate::limits::TurnLimits;
use crate::memory::MemoryPolicy;
use crate::model::{Inference, ModelRequest, ModelSpec, SystemBlock, ToolDef};
use crate::obligation::ObligationRule;
use crate::plan::SkillCatalog;
use crate::privacy::PrivacyPolicy;
use crate::prompt::PromptPlan;
use crate::tool::{Tool, check_with};

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
    /// When episodes are compacted and by which model (design.md §4); `None` only when the
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

/// The `ask_<id>` argument that names which of the message's pictures go to a card that
/// takes pictures: numbers from 1, in the order the user sent them (D-42).
pub const PICTURES_ARG: &str = "pictures";

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
    /// Whether it may ask the user a question mid-task (`asks_user: true`): it is then
    /// offered the `ask_user` tool, and its question pauses the turn (D-36).
    pub asks_user: bool,
    /// Whether its orchestrator may pass it the pictures the user sent with the message
    /// (`takes_pictures: true`): its `ask_<id>` tool then has the [`PICTURES_ARG`]
    /// argument, and a Direct Line message to it carries them (D-42).
    pub takes_pictures: bool,
    /// Tools as the model sees them: its own tools (and `ask_user`), then one `ask_<id>`
    /// per sub-agent.
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

    /// The pictures an `ask_<id>` call passes on, as indexes into the `sent` pictures of
    /// the message, in the order the call names them (each once). A card that takes no
    /// pictures gets none, whatever the call says: its tool has no such argument, and a
    /// picture must never reach a specialist whose card did not ask for them.
    ///
    /// # Errors
    /// A number that names no picture of the message, in words the orchestrator's model
    /// reads as the call's result.
    pub fn pictures_passed(
        &self,
        args: &serde_json::Value,
        sent: usize,
    ) -> Result<Vec<usize>, String> {
        let Some(named) = args.get(PICTURES_ARG).filter(|_| self.takes_pictures) else {
            return Ok(Vec::new());
        };
        let Some(named) = named.as_array() else {
            return Err(format!(
                "{PICTURES_ARG} must be a list of picture numbers, from 1"
            ));
        };
        let mut passed = Vec::with_capacity(named.len());
        for n in named {
            let index = n
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .filter(|n| (1..=sent).contains(n))
                .map(|n| n - 1);
            match index {
                Some(i) if !passed.contains(&i) => passed.push(i),
                Some(_) => {}
                None if sent == 0 => {
                    return Err(format!(
                        "{PICTURES_ARG}: {n} names no picture; this message has none"
                    ));
                }
                None => {
                    let has = if sent == 1 {
                        "1 picture, numbered 1".to_owned()
                    } else {
                        format!("{sent} pictures, numbered 1 to {sent}")
                    };
                    return Err(format!(
                        "{PICTURES_ARG}: {n} names no picture; this message has {has}"
                    ));
                }
            }
        }
        Ok(passed)
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
        purpose: crate::model::CallPurpose,
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
