//! The loader: raw files in, validated registry (or every problem) out.
//!
//! One [`Loader`] value carries what is resolved so far (models, tools, blocks), every
//! problem and every warning; each file of this folder adds the step for one kind of file.
//! [`load`] runs the steps in a fixed order, which is the order problems are reported in:
//! `models.yaml`, `tools.yaml`, the blocks, then the cards.

mod ask;
mod blocks;
mod card;
mod cards;
mod keyed;
mod memory;
mod models;
mod orchestration;
mod planner;
mod problems;
mod tools;
mod trust;
mod tuning;

use std::collections::BTreeMap;
use std::sync::Arc;

use problems::Problems;

use super::{Agent, Block, LoadErrors, LoadOptions, ModelSpec, Registry, RegistrySources, Tool};

/// What loading has resolved so far, with the problems and warnings found on the way.
///
/// Each step takes it by `&mut`, reads what earlier steps resolved and adds what it finds.
struct Loader<'o> {
    /// What the loading program can run.
    options: &'o LoadOptions,
    /// `models.yaml`, by key.
    models: BTreeMap<String, Arc<ModelSpec>>,
    /// The `summarizer` alias of `models.yaml`, resolved.
    summarizer: Option<Arc<ModelSpec>>,
    /// `tools.yaml`, by id.
    tools: BTreeMap<String, Arc<Tool>>,
    /// The prompt blocks, by id.
    blocks: BTreeMap<String, Arc<Block>>,
    /// The platform-required blocks, in the order every prompt starts with them.
    required_blocks: Vec<Arc<Block>>,
    /// Every problem so far.
    problems: Problems,
    /// Non-fatal findings so far.
    warnings: Vec<String>,
}

/// Loads and validates a registry: see [`super::Registry::load`].
pub(super) fn load(
    sources: &RegistrySources,
    options: &LoadOptions,
) -> Result<Registry, LoadErrors> {
    let mut loader = Loader::new(options);
    loader.load_models(sources.models.as_ref());
    loader.load_tools(sources.tools.as_ref());
    loader.load_blocks(&sources.blocks);

    // Parse every card first so references between cards can be checked.
    let cards = loader.parse_cards(&sources.agents);
    loader.check_sub_agent_graph(&cards);
    // Validated agents without model tools (needs every ask tool first).
    let mut agents = loader.build_agents(&cards);
    loader.check_ask_names(&agents);
    ask::link_model_tools(&mut agents);
    loader.finish(agents)
}

impl<'o> Loader<'o> {
    /// A loader with nothing resolved yet.
    fn new(options: &'o LoadOptions) -> Self {
        Self {
            options,
            models: BTreeMap::new(),
            summarizer: None,
            tools: BTreeMap::new(),
            blocks: BTreeMap::new(),
            required_blocks: Vec::new(),
            problems: Problems::default(),
            warnings: Vec::new(),
        }
    }

    /// The registry, or every problem found.
    fn finish(self, agents: BTreeMap<String, Agent>) -> Result<Registry, LoadErrors> {
        if !self.problems.is_empty() {
            return Err(LoadErrors(self.problems.into_vec()));
        }
        Ok(Registry {
            agents: agents.into_iter().map(|(k, v)| (k, Arc::new(v))).collect(),
            tools: self.tools,
            models: self.models,
            blocks: self.blocks,
            summarizer: self.summarizer,
            warnings: self.warnings,
        })
    }
}
