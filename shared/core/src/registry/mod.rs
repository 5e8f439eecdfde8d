//! Registries: agent cards, prompt blocks, models and tools, resolved and validated at
//! load (D-1 … D-5).
//!
//! [`Registry::load`] takes the text of every file (reading them is the caller's job, so
//! this stays pure) and either returns a registry in which every reference resolves, or
//! every problem found, each naming file, field and value.

mod load;
mod raw;
mod types;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

pub use types::{
    Agent, AgentLimits, AgentRole, Block, BlockOwner, Fastpath, Orchestration, OrchestrationMode,
    PICTURES_ARG, Planner, Routing, StatusMessage, StatusMessages, StatusPolicy, Tuning,
};
// The registry resolves these, and they are known by their registry names; each lives with
// the lower module it belongs to.
pub use crate::composition::Composition;
pub use crate::limits::TurnLimits;
pub use crate::model::{ModelCapabilities, ModelEndpoint, ModelSpec, Prices, ReasoningSupport};
pub use crate::plan::{Skill, SkillCatalog, SkillDomain};
pub use crate::tool::Tool;

/// The name of the tool that asks the card `agent_id` (D-6): `ask_<id>`, with `-` as `_`
/// (tool names allow no dash on every provider). The one rule every face shows.
pub fn ask_tool_name(agent_id: &str) -> String {
    format!("ask_{}", agent_id.replace('-', "_"))
}

/// One file's text.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// Path as shown in errors (relative to the registry root).
    pub path: String,
    /// Contents.
    pub text: String,
}

/// Every file of a registry.
#[derive(Debug, Clone, Default)]
pub struct RegistrySources {
    /// `agents/*.yaml`.
    pub agents: Vec<SourceFile>,
    /// `blocks/*.md`.
    pub blocks: Vec<SourceFile>,
    /// `models.yaml`.
    pub models: Option<SourceFile>,
    /// `tools.yaml`.
    pub tools: Option<SourceFile>,
}

/// What the loading program can run (an empty list accepts any name), and what it
/// changes in what it reads.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// Connector kinds available.
    pub connector_kinds: Vec<String>,
    /// Model providers available.
    pub providers: Vec<String>,
    /// Provider model ids that replace those of `models.yaml`, by model key, applied after
    /// parsing (a deployment's own ids). A key `models.yaml` does not define changes
    /// nothing: the program that sets them checks its keys against the loaded registry.
    pub model_ids: BTreeMap<String, String>,
    /// Tools as their backends describe them (an MCP server's listing), by tool id: the
    /// description and schema of a tool whose `tools.yaml` entry leaves them out. Found by
    /// the program before loading (this loader does no I/O).
    pub discovered: BTreeMap<String, crate::ports::connector::DiscoveredTool>,
}

/// One problem found while loading, naming file, field and value (D-2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    /// File.
    pub file: String,
    /// Field path (`tools[2]`, `sub_agents`, ...).
    pub field: String,
    /// Offending value.
    pub value: String,
    /// What is wrong.
    pub problem: String,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.value.is_empty() {
            write!(f, "{}: {}: {}", self.file, self.field, self.problem)
        } else {
            write!(
                f,
                "{}: {} = {:?}: {}",
                self.file, self.field, self.value, self.problem
            )
        }
    }
}

/// Every problem found while loading.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct LoadErrors(pub Vec<LoadError>);

impl fmt::Display for LoadErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the registry has {} problem(s)", self.0.len())?;
        for e in &self.0 {
            write!(f, "\n  {e}")?;
        }
        Ok(())
    }
}

/// A loaded, validated registry.
#[derive(Debug, Clone)]
pub struct Registry {
    agents: BTreeMap<String, Arc<Agent>>,
    tools: BTreeMap<String, Arc<Tool>>,
    models: BTreeMap<String, Arc<ModelSpec>>,
    blocks: BTreeMap<String, Arc<Block>>,
    summarizer: Option<Arc<ModelSpec>>,
    warnings: Vec<String>,
}

impl Registry {
    /// Loads and validates a registry.
    ///
    /// # Errors
    /// Every problem found, each naming file, field and value.
    pub fn load(sources: &RegistrySources, options: &LoadOptions) -> Result<Self, LoadErrors> {
        load::load(sources, options)
    }

    /// A card by id.
    pub fn agent(&self, id: &str) -> Option<&Arc<Agent>> {
        self.agents.get(id)
    }

    /// Every card, by id.
    pub fn agents(&self) -> impl Iterator<Item = &Arc<Agent>> {
        self.agents.values()
    }

    /// A tool by id.
    pub fn tool(&self, id: &str) -> Option<&Arc<Tool>> {
        self.tools.get(id)
    }

    /// Every tool.
    pub fn tools(&self) -> impl Iterator<Item = &Arc<Tool>> {
        self.tools.values()
    }

    /// A model by key.
    pub fn model(&self, key: &str) -> Option<&Arc<ModelSpec>> {
        self.models.get(key)
    }

    /// Every model.
    pub fn models(&self) -> impl Iterator<Item = &Arc<ModelSpec>> {
        self.models.values()
    }

    /// A block by id.
    pub fn block(&self, id: &str) -> Option<&Arc<Block>> {
        self.blocks.get(id)
    }

    /// The model for summaries (`summarizer` alias), if set.
    pub fn summarizer(&self) -> Option<&Arc<ModelSpec>> {
        self.summarizer.as_ref()
    }

    /// Non-fatal findings (a prompt past 25% of its context window ...).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The orchestrator a turn starts at: `id` if given, else the only orchestrator that
    /// no other card lists as a sub-agent (when planners are among them, the only router).
    ///
    /// # Errors
    /// No such orchestrator, or more than one candidate.
    pub fn entry(&self, id: Option<&str>) -> Result<&Arc<Agent>, String> {
        if let Some(id) = id {
            return match self.agents.get(id) {
                Some(a) if a.orchestration.is_some() => Ok(a),
                Some(_) => Err(format!(
                    "agent {id:?} has no sub-agents and does not plan, so it cannot orchestrate"
                )),
                None => Err(format!("no agent {id:?} in the registry")),
            };
        }
        let listed: std::collections::BTreeSet<&str> = self
            .agents
            .values()
            .filter_map(|a| a.orchestration.as_ref())
            .flat_map(|o| o.sub_agents.iter().map(|s| &**s))
            .collect();
        let roots: Vec<&Arc<Agent>> = self
            .agents
            .values()
            .filter(|a| a.orchestration.is_some() && !listed.contains(&*a.id))
            .collect();
        // Several candidates: a planner is chosen by name, so the one router is the default.
        let routers: Vec<&Arc<Agent>> = roots
            .iter()
            .copied()
            .filter(|a| {
                a.orchestration
                    .as_ref()
                    .is_some_and(|o| o.mode.planner().is_none())
            })
            .collect();
        if roots.len() > 1
            && let [one] = routers.as_slice()
        {
            return Ok(one);
        }
        match roots.as_slice() {
            [one] => Ok(one),
            [] => Err("the registry has no orchestrator (a card with sub_agents)".to_owned()),
            many => Err(format!(
                "the registry has {} top-level orchestrators ({}); choose one",
                many.len(),
                many.iter().map(|a| &*a.id).collect::<Vec<_>>().join(", ")
            )),
        }
    }

    /// The sub-agents of an orchestrator, in declared order.
    pub fn sub_agents(&self, orchestrator: &Agent) -> Vec<Arc<Agent>> {
        orchestrator
            .orchestration
            .as_ref()
            .map(|o| {
                o.sub_agents
                    .iter()
                    .filter_map(|id| self.agents.get(&**id).cloned())
                    .collect()
            })
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests;
