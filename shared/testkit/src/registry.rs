//! The shared test registry: an orchestrator over `shop`, `support` and `rewards`, two test
//! models (`m1` can be forced to call a named tool, `m2` cannot) and tools the `configured`
//! connector (`baton_connectors::ConfiguredConnector`) serves, some broken on purpose.
//!
//! Tests change it through the knobs of [`TestRegistry`]; any file can also be replaced
//! whole with [`TestRegistry::file`].

use std::collections::BTreeMap;

use baton_core::registry::{LoadErrors, LoadOptions, Registry, RegistrySources, SourceFile};

const MODELS: &str = r#"
models:
  m1:
    provider: test
    model_id: test-model-1
    context_window: 100000
    prices: { input: 1.0, output: 2.0, cache_read: 0.1, cache_write: 1.25 }
    capabilities: { tool_choice: true, cache_points: true, parallel_tool_calls: true }
  m2:
    provider: test
    model_id: test-model-2
    context_window: 100000
    prices: { input: 1.0, output: 2.0, cache_read: 0.1, cache_write: 1.25 }
    capabilities: { tool_choice: false, cache_points: true, parallel_tool_calls: true }
"#;

const TOOLS: &str = r#"
tools:
  search_offers:
    description: Search current offers.
    connector: { kind: test, payload: { items: [ { title: "Roast coffee", reward: "500 pts" } ] } }
    schema: { type: object, properties: { query: { type: string } }, required: [query], additionalProperties: false }
    status: searching_offers
  lookup_receipt:
    description: Look up a receipt's status.
    connector: { kind: test, payload: { receipt: { id: "R-1", state: "rejected" } } }
    schema: { type: object, properties: { query: { type: string } }, required: [query], additionalProperties: false }
    status: matching_receipt
  points_balance:
    description: The user's points balance.
    connector: { kind: test, payload: { points: 1200 } }
    schema: { type: object, properties: {}, additionalProperties: false }
    status: checking_points
  foreign_points:
    description: A balance service that answers for the wrong user.
    connector: { kind: test, principal: someone-else, payload: { points: 99999 } }
    schema: { type: object, properties: {}, additionalProperties: false }
    status: checking_points
  down_points:
    description: A balance service that is down.
    connector: { kind: test, fail: true }
    schema: { type: object, properties: {}, additionalProperties: false }
  broken_points:
    description: A balance service whose data is unusable.
    connector: { kind: test, status: error, payload: null }
    schema: { type: object, properties: {}, additionalProperties: false }
    status: recalculating_points
"#;

const SHOP: &str = r#"
id: shop
description: Offers, deals and product search.
role: native
model: m1
tools: [search_offers]
prompt_blocks: [shop-instructions]
limits: { timeout_ms: 5000 }
"#;

const SUPPORT: &str = r#"
id: support
description: Receipt problems and missing points.
role: native
model: m1
tools: [lookup_receipt]
prompt_blocks: [support-instructions]
limits: { timeout_ms: 5000 }
ask_args:
  support_category: { type: string, enum: [receipts, missing_points, other] }
"#;

/// A planner over the specialists' tools (D-16), with a worker block of its own.
const PLANNER: &str = r#"
id: planner
description: Plans multi-step requests and answers from the results.
role: orchestrator
model: m1
orchestration: planner
prompt_blocks: [routing]
planner:
  worker_blocks: [worker]
"#;

const WORKER: &str = "---\nowner: platform\ncategory: instructions\nrequired: false\n---\nDo your mission with your skills, then say briefly what you found.\n";

/// The knobs of the test registry; `TestRegistry::default()` is the registry most tests use.
#[derive(Debug, Clone)]
pub struct TestRegistry {
    /// The orchestrator's composition (`mediated` or `passthrough`).
    pub composition: &'static str,
    /// How many specialists one routing step may consult.
    pub fanout_cap: u32,
    /// A `turn_limits:` line for the orchestrator card, or nothing.
    pub turn_limits: &'static str,
    /// The one tool `rewards` calls (the healthy `points_balance` or a broken one).
    pub rewards_tool: &'static str,
    /// The label `rewards` is shown and addressed by.
    pub rewards_label: &'static str,
    /// The orchestrator's model key (`m2` cannot be forced to call a named tool).
    pub orchestrator_model: &'static str,
    /// More orchestrator card YAML (a label, Direct Line, obligations, privacy …).
    pub orchestrator_extra: String,
    /// More entries of `tools.yaml`, indented under `tools:` as the others are.
    pub extra_tools: String,
    /// Whole files that replace or add to the generated ones, by registry path (see
    /// [`TestRegistry::file`]).
    pub files: BTreeMap<String, String>,
}

impl Default for TestRegistry {
    fn default() -> Self {
        TestRegistry {
            composition: "mediated",
            fanout_cap: 2,
            turn_limits: "",
            rewards_tool: "points_balance",
            rewards_label: "Rewards",
            orchestrator_model: "m1",
            orchestrator_extra: String::new(),
            extra_tools: String::new(),
            files: BTreeMap::new(),
        }
    }
}

impl TestRegistry {
    /// Replaces the file at `path` (`agents/shop.yaml`, `models.yaml`, `blocks/x.md` …), or
    /// adds it.
    pub fn file(mut self, path: &str, text: impl Into<String>) -> Self {
        self.files.insert(path.to_owned(), text.into());
        self
    }

    /// Adds the planner card `planner` (its card ending in `extra`, e.g. `turn_limits:`)
    /// and its worker block.
    pub fn with_planner(self, extra: &str) -> Self {
        self.file("agents/planner.yaml", format!("{PLANNER}{extra}"))
            .file("blocks/worker.md", WORKER)
    }

    /// The registry's source files.
    pub fn sources(&self) -> RegistrySources {
        let mut agents = Vec::from([
            ("agents/orchestrator.yaml".to_owned(), self.orchestrator()),
            ("agents/shop.yaml".to_owned(), SHOP.to_owned()),
            ("agents/support.yaml".to_owned(), SUPPORT.to_owned()),
            ("agents/rewards.yaml".to_owned(), self.rewards()),
        ]);
        let mut blocks = Vec::from([
            block(
                "persona",
                "platform",
                "persona",
                true,
                "You are a helpful assistant.",
            ),
            block(
                "format",
                "platform",
                "format",
                true,
                "Answer in short plain sentences.",
            ),
            block(
                "safety",
                "platform",
                "safety",
                true,
                "Never promise what a tool has not confirmed.",
            ),
            block(
                "routing",
                "platform",
                "instructions",
                false,
                "Route each request to a specialist.",
            ),
            block(
                "shop-instructions",
                "vertical",
                "instructions",
                false,
                "Find offers.",
            ),
            block(
                "support-instructions",
                "vertical",
                "instructions",
                false,
                "Fix receipts.",
            ),
            block(
                "rewards-instructions",
                "vertical",
                "instructions",
                false,
                "Explain points.",
            ),
        ]);
        let mut models = MODELS.to_owned();
        let mut tools = format!("{TOOLS}{}", self.extra_tools);
        for (path, text) in &self.files {
            match path.as_str() {
                "models.yaml" => models = text.clone(),
                "tools.yaml" => tools = text.clone(),
                p if p.starts_with("blocks/") => put(&mut blocks, path, text),
                _ => put(&mut agents, path, text),
            }
        }
        let files = |list: Vec<(String, String)>| {
            list.into_iter()
                .map(|(path, text)| SourceFile { path, text })
                .collect()
        };
        RegistrySources {
            agents: files(agents),
            blocks: files(blocks),
            models: Some(SourceFile {
                path: "models.yaml".into(),
                text: models,
            }),
            tools: Some(SourceFile {
                path: "tools.yaml".into(),
                text: tools,
            }),
        }
    }

    /// The loaded registry, or the problems of knobs that make one that does not load.
    pub fn load(&self) -> Result<Registry, LoadErrors> {
        Registry::load(&self.sources(), &LoadOptions::default())
    }

    fn orchestrator(&self) -> String {
        format!(
            r#"
id: orchestrator
description: Routes each request to the right specialists.
role: orchestrator
model: {model}
prompt_blocks: [routing]
sub_agents: [shop, support, rewards]
composition: {composition}
fanout_cap: {cap}
fastpath: {{ allow: [greeting, acknowledgement], fallback: shop }}
status_messages:
  merge_window_ms: 150
  idle_after_ms: 2000
  idle_text: "Still waiting on {{agent}}…"
  codes:
    searching_offers: {{ text: "Looking for offers…", policy: batch }}
    matching_receipt: {{ text: "Checking your receipt…", policy: batch }}
    checking_points: {{ text: "{{agent}} is checking your points…", policy: transform }}
{limits}
{extra}
"#,
            model = self.orchestrator_model,
            extra = self.orchestrator_extra,
            composition = self.composition,
            cap = self.fanout_cap,
            limits = self.turn_limits,
        )
    }

    fn rewards(&self) -> String {
        format!(
            r#"
id: rewards
label: {label}
description: Points balance and redemptions.
role: native
model: m1
tools: [{tool}]
prompt_blocks: [rewards-instructions]
limits: {{ timeout_ms: 5000 }}
"#,
            tool = self.rewards_tool,
            label = self.rewards_label,
        )
    }
}

/// Replaces the file at `path` in place (the load order stays the declared one) or adds it.
fn put(files: &mut Vec<(String, String)>, path: &str, text: &str) {
    match files.iter_mut().find(|(p, _)| p == path) {
        Some(file) => file.1 = text.to_owned(),
        None => files.push((path.to_owned(), text.to_owned())),
    }
}

fn block(name: &str, owner: &str, category: &str, required: bool, text: &str) -> (String, String) {
    (
        format!("blocks/{name}.md"),
        format!("---\nowner: {owner}\ncategory: {category}\nrequired: {required}\n---\n{text}\n"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_registry_loads_with_its_three_specialists() {
        let registry = TestRegistry::default().load().unwrap();
        let entry = registry.agent("orchestrator").unwrap();
        let subs = &entry.orchestration.as_ref().unwrap().sub_agents;
        assert_eq!(
            subs.iter().map(|s| s.as_ref()).collect::<Vec<&str>>(),
            ["shop", "support", "rewards"]
        );
    }

    #[test]
    fn a_replaced_file_wins_over_the_generated_one() {
        let registry = TestRegistry::default()
            .file(
                "agents/shop.yaml",
                SHOP.replace("Offers, deals", "Only deals"),
            )
            .load()
            .unwrap();
        let shop = registry.agent("shop").unwrap();
        assert!(shop.description.starts_with("Only deals"));
    }
}
