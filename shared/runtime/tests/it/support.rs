//! A small registry, a test connector and helpers shared by the engine's tests.

use std::fmt::Write as _;
use std::sync::Arc;

use baton_core::Principal;
use baton_core::events::{Event, WireEvent};
use baton_core::ports::clock::FixedClock;
use baton_core::ports::store::Store;
use baton_core::registry::{LoadOptions, Registry, RegistrySources, SourceFile};
use baton_runtime::metrics::LocalMetrics;
use baton_runtime::{Runtime, RuntimeConfig, TurnRequest};
pub use baton_testkit::connector::TestConnector;
use baton_testkit::memory_store::MemoryStore;
use baton_testkit::scripted::ScriptedModel;
use futures::StreamExt;
use serde_json::Value;

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

fn block(owner: &str, category: &str, required: bool, text: &str) -> String {
    format!("---\nowner: {owner}\ncategory: {category}\nrequired: {required}\n---\n{text}\n")
}

/// Knobs for the test orchestrator card.
#[derive(Clone)]
pub struct Setup {
    pub composition: &'static str,
    pub fanout_cap: u32,
    pub turn_limits: &'static str,
    pub rewards_tool: &'static str,
    pub rewards_label: &'static str,
    /// The orchestrator's model key (`m2` cannot be forced to call a named tool).
    pub orchestrator_model: &'static str,
    /// More orchestrator card YAML (Direct Line, obligations, privacy).
    pub trust: &'static str,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            composition: "mediated",
            fanout_cap: 2,
            turn_limits: "",
            rewards_tool: "points_balance",
            rewards_label: "Rewards",
            orchestrator_model: "m1",
            trust: "",
        }
    }
}

pub fn registry(setup: &Setup) -> Registry {
    let orchestrator = format!(
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
{trust}
"#,
        model = setup.orchestrator_model,
        trust = setup.trust,
        composition = setup.composition,
        cap = setup.fanout_cap,
        limits = setup.turn_limits,
    );
    let shop = r#"
id: shop
description: Offers, deals and product search.
role: native
model: m1
tools: [search_offers]
prompt_blocks: [shop-instructions]
limits: { timeout_ms: 5000 }
"#;
    let support = r#"
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
    let rewards = format!(
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
        tool = setup.rewards_tool,
        label = setup.rewards_label,
    );
    let file = |path: &str, text: String| SourceFile {
        path: path.into(),
        text,
    };
    let sources = RegistrySources {
        agents: vec![
            file("agents/orchestrator.yaml", orchestrator),
            file("agents/shop.yaml", shop.into()),
            file("agents/support.yaml", support.into()),
            file("agents/rewards.yaml", rewards),
        ],
        blocks: vec![
            file(
                "blocks/persona.md",
                block("platform", "persona", true, "You are a helpful assistant."),
            ),
            file(
                "blocks/routing.md",
                block(
                    "platform",
                    "instructions",
                    false,
                    "Route each request to a specialist.",
                ),
            ),
            file(
                "blocks/shop-instructions.md",
                block("vertical", "instructions", false, "Find offers."),
            ),
            file(
                "blocks/support-instructions.md",
                block("vertical", "instructions", false, "Fix receipts."),
            ),
            file(
                "blocks/rewards-instructions.md",
                block("vertical", "instructions", false, "Explain points."),
            ),
        ],
        models: Some(file("models.yaml", MODELS.into())),
        tools: Some(file("tools.yaml", TOOLS.into())),
    };
    match Registry::load(&sources, &LoadOptions::default()) {
        Ok(r) => r,
        Err(e) => panic!("test registry does not load: {e}"),
    }
}

/// A runtime over the test registry, a scripted model and a memory store.
pub struct Rig {
    pub runtime: Runtime,
    pub model: Arc<ScriptedModel>,
    pub store: Arc<MemoryStore>,
    pub metrics: Arc<LocalMetrics>,
}

pub fn make_rig(setup: &Setup, script: &str) -> Rig {
    make_rig_with(setup, script, RuntimeConfig::default())
}

pub fn make_rig_with(setup: &Setup, script: &str, config: RuntimeConfig) -> Rig {
    let model = Arc::new(ScriptedModel::from_yaml(script).unwrap().recording());
    let store = Arc::new(MemoryStore::new());
    let metrics = Arc::new(LocalMetrics::default());
    let runtime = Runtime::builder(Arc::new(registry(setup)))
        .model_override(model.clone())
        .store(store.clone())
        .connector("test", Arc::new(TestConnector))
        .clock(Arc::new(FixedClock(1_795_305_600_000)))
        .metrics(metrics.clone())
        .config(config)
        .build()
        .unwrap();
    Rig {
        runtime,
        model,
        store,
        metrics,
    }
}

pub fn alice() -> Principal {
    Principal::new("alice").unwrap()
}

pub fn request(text: &str, episode: Option<&str>, turn: &str) -> TurnRequest {
    TurnRequest {
        episode_id: episode.map(str::to_owned),
        turn_id: Some(turn.to_owned()),
        locale: Some("en-US".into()),
        ..TurnRequest::new(alice(), text)
    }
}

/// Runs a turn to completion and returns its events.
pub async fn run(rig: &Rig, req: TurnRequest) -> (String, Vec<WireEvent>) {
    let stream = rig.runtime.run_turn(req).await.unwrap();
    let episode = stream.episode_id.clone();
    (episode, stream.collect().await)
}

/// The answer text as a client would assemble it.
pub fn answer(events: &[WireEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// A compact, stable transcript: one line per event, then the journal's routing record.
pub async fn transcript(rig: &Rig, episode: &str, events: &[WireEvent]) -> String {
    let mut out = String::new();
    let redact = |s: String| s.replace(episode, "<episode>");
    for e in events {
        let body = serde_json::to_value(&e.event).unwrap();
        let mut fields = body.as_object().cloned().unwrap_or_default();
        fields.remove("type");
        let line = format!(
            "{:>3} {:<16} {}",
            e.seq,
            e.event.name(),
            Value::Object(fields)
        );
        let _ = writeln!(out, "{}", redact(line));
    }
    let turns = rig
        .store
        .turns(&alice(), episode, usize::MAX)
        .await
        .unwrap();
    if let Some(last) = turns.last() {
        let _ = writeln!(out, "--- routing record");
        let _ = writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&last.routing).unwrap()
        );
        let _ = writeln!(out, "--- segments");
        for s in &last.segments {
            let _ = writeln!(
                out,
                "{} {:?} <- {:?}: {:?}",
                s.agent_id, s.status, s.query, s.text
            );
        }
    }
    out
}
