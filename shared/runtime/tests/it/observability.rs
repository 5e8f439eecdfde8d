//! What the engine reports about itself: spans and metrics (D-31).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::prelude::*;

use crate::support::*;

/// The fields of every `chat` span, as they stand when it closes.
#[derive(Clone, Default)]
struct ChatSpans {
    open: Arc<Mutex<BTreeMap<u64, BTreeMap<String, String>>>>,
    closed: Arc<Mutex<Vec<BTreeMap<String, String>>>>,
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl<S: tracing::Subscriber> Layer<S> for ChatSpans {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _: Context<'_, S>) {
        if attrs.metadata().name() == "chat" {
            let mut fields = BTreeMap::new();
            attrs.record(&mut Fields(&mut fields));
            self.open.lock().unwrap().insert(id.into_u64(), fields);
        }
    }
    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        if let Some(fields) = self.open.lock().unwrap().get_mut(&id.into_u64()) {
            values.record(&mut Fields(fields));
        }
    }
    fn on_close(&self, id: Id, _: Context<'_, S>) {
        if let Some(fields) = self.open.lock().unwrap().remove(&id.into_u64()) {
            self.closed.lock().unwrap().push(fields);
        }
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
    let spans = ChatSpans::default();
    let _guard = tracing_subscriber::registry()
        .with(spans.clone())
        .set_default();
    let rig = make_rig(&Setup::default(), GREETING_AND_DEALS);
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
    let closed = spans.closed.lock().unwrap().clone();
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
