//! What the engine reports about itself: spans and metrics (D-31).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, Once};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::prelude::*;

use crate::support::*;

/// The fields of every `chat` span of one test, as they stand when it closes.
#[derive(Clone, Default)]
struct ChatSpans {
    open: Arc<Mutex<BTreeMap<u64, BTreeMap<String, String>>>>,
    closed: Arc<Mutex<Vec<BTreeMap<String, String>>>>,
}

thread_local! {
    /// Where this thread's `chat` spans go (engine tests run a turn on their own thread).
    static CAPTURE: RefCell<Option<ChatSpans>> = const { RefCell::new(None) };
}

impl ChatSpans {
    /// Captures the `chat` spans of this thread from now on. One global subscriber serves
    /// every test: a subscriber per thread races with the callsite cache of tests running
    /// at the same time on other threads, which then see none.
    fn capture() -> Self {
        static INSTALL: Once = Once::new();
        INSTALL.call_once(|| {
            let _ = tracing_subscriber::registry()
                .with(ThreadCapture)
                .try_init();
        });
        let spans = ChatSpans::default();
        CAPTURE.with(|c| *c.borrow_mut() = Some(spans.clone()));
        spans
    }

    fn closed(&self) -> Vec<BTreeMap<String, String>> {
        self.closed.lock().unwrap().clone()
    }
}

fn with_capture(f: impl FnOnce(&ChatSpans)) {
    CAPTURE.with(|c| {
        if let Some(spans) = c.borrow().as_ref() {
            f(spans);
        }
    });
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().to_owned(), value.to_string());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), value.to_string());
    }
}

struct ThreadCapture;

impl<S: tracing::Subscriber> Layer<S> for ThreadCapture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _: Context<'_, S>) {
        let name = attrs.metadata().name();
        if name == "chat" || name == "execute_tool" {
            with_capture(|spans| {
                let mut fields = BTreeMap::new();
                fields.insert("span".to_owned(), name.to_owned());
                attrs.record(&mut Fields(&mut fields));
                spans.open.lock().unwrap().insert(id.into_u64(), fields);
            });
        }
    }
    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        with_capture(|spans| {
            if let Some(fields) = spans.open.lock().unwrap().get_mut(&id.into_u64()) {
                values.record(&mut Fields(fields));
            }
        });
    }
    fn on_close(&self, id: Id, _: Context<'_, S>) {
        with_capture(|spans| {
            if let Some(fields) = spans.open.lock().unwrap().remove(&id.into_u64()) {
                spans.closed.lock().unwrap().push(fields);
            }
        });
    }
}

const GREETING_AND_DEALS: &str = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      tool_calls: [{ name: ask_shop, args: { query: "coffee deals", intent_count: 1 } }]
    - when: { purpose: compose }
      text: ["Roast coffee earns 500 points."]
  shop:
    - text: ["Roast coffee earns 500 points."]
"#;

#[tokio::test(start_paused = true)]
async fn every_model_call_carries_its_prompt_cohort() {
    let spans = ChatSpans::capture();
    let rig = make_rig(&TestRegistry::default(), GREETING_AND_DEALS);
    run(&rig, request("coffee deals", None, "t1")).await;

    let cohort = |id: &str| {
        rig.runtime
            .registry()
            .agent(id)
            .unwrap()
            .prompt
            .cohort
            .to_string()
    };
    let closed: Vec<_> = spans
        .closed()
        .into_iter()
        .filter(|s| s["span"] == "chat")
        .collect();
    // Routing, the shop's answer, the composition.
    assert_eq!(closed.len(), 3, "{closed:#?}");
    for span in &closed {
        let agent = &span["gen_ai.agent.name"];
        assert_eq!(
            span.get("baton.prompt.cohort"),
            Some(&cohort(agent)),
            "{span:?}"
        );
    }
    assert_ne!(cohort("orchestrator"), cohort("shop"));

    // The same cohort goes with the model-call count, as a property of it.
    let calls = rig
        .metrics
        .properties("model_calls_total,agent=orchestrator");
    assert_eq!(
        calls,
        [format!("cohort={}", cohort("orchestrator"))],
        "{:?}",
        rig.metrics.snapshot()
    );
    assert_eq!(
        rig.metrics
            .snapshot()
            .get("model_calls_total,agent=orchestrator"),
        Some(&2)
    );
    assert_eq!(rig.metrics.counter("model_calls_total"), 3);
}

#[tokio::test(start_paused = true)]
async fn intent_counts_dispatch_overhead_status_events_and_failures_by_axis_are_measured() {
    let setup = TestRegistry {
        rewards_tool: "foreign_points",
        ..TestRegistry::default()
    };
    let script = r#"
agents:
  orchestrator:
    - when: { purpose: route, user_contains: "points" }
      tool_calls: [{ name: ask_rewards, args: { query: "points", intent_count: 1 } }]
    - when: { purpose: route }
      tool_calls: [{ name: ask_shop, args: { query: "coffee", intent_count: 1 } }]
    - when: { purpose: compose }
      text: ["Done."]
  rewards:
    - { when: { after_tool_results: false }, tool_calls: [{ name: foreign_points, args: {} }] }
    - { when: { after_tool_results: true }, text: ["Unavailable."] }
  shop:
    - error: invalid
"#;
    let rig = make_rig(&setup, script);
    let (episode, _) = run(&rig, request("my points", None, "t1")).await;
    let m = &rig.metrics;
    assert_eq!(m.measured("intent_count"), (1, 1.0));
    assert_eq!(m.measured("dispatch_overhead_ms").0, 1);
    assert_eq!(m.measured("status_events_per_turn").0, 1);
    // The envelope answered for someone else: the tool failed, and the mismatch names
    // the specialist that consumed it and the producer that sent it.
    let counted = |key: &str| m.snapshot().get(key).copied().unwrap_or_default();
    assert_eq!(
        counted("failures_total,axis=tool,name=foreign_points"),
        1,
        "{:?}",
        m.snapshot()
    );
    assert_eq!(
        m.properties("principal_mismatch_total,tool=foreign_points"),
        ["consumer=rewards", "enricher=foreign_points"]
    );
    // A model that fails fails its specialist too.
    run(&rig, request("coffee deals", Some(&episode), "t2")).await;
    assert_eq!(counted("failures_total,axis=model,name=m1"), 1);
    assert_eq!(counted("failures_total,axis=specialist,name=shop"), 1);
}

/// The envelope's cache metadata reaches the tool call's span, observed, not acted on
/// (002 §5.5).
#[tokio::test(start_paused = true)]
async fn the_envelopes_cache_metadata_is_on_the_tool_calls_span() {
    let spans = ChatSpans::capture();
    let setup = TestRegistry {
        extra_tools: r#"
  cached_points:
    description: A balance served from a cache.
    connector: { kind: test, payload: { points: 5 }, cache_meta: { cached: true, ttl_s: 60 } }
    schema: { type: object, properties: {}, additionalProperties: false }
"#
        .into(),
        ..TestRegistry::default()
    }
    .file(
        "agents/rewards.yaml",
        "id: rewards\ndescription: Points balance and redemptions.\nrole: native\nmodel: m1\ntools: [cached_points]\nprompt_blocks: [rewards-instructions]\n",
    );
    let script = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      tool_calls: [{ name: ask_rewards, args: { query: "points", intent_count: 1 } }]
    - when: { purpose: compose }
      text: ["Here is what I have."]
  rewards:
    - { when: { after_tool_results: false }, tool_calls: [{ name: cached_points, args: {} }] }
    - { when: { after_tool_results: true }, text: ["Your balance."] }
"#;
    let rig = make_rig(&setup, script);
    run(&rig, request("my points", None, "t1")).await;
    let tools: Vec<_> = spans
        .closed()
        .into_iter()
        .filter(|s| s["span"] == "execute_tool")
        .collect();
    assert_eq!(tools.len(), 1, "{tools:#?}");
    assert_eq!(
        tools[0].get("baton.cache.cached").map(String::as_str),
        Some("true")
    );
    assert_eq!(
        tools[0].get("baton.cache.ttl_s").map(String::as_str),
        Some("60")
    );
}
