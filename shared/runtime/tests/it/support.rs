//! The rig and helpers shared by the engine's tests, over the test kit's registry.

use baton_core::ports::store::TurnStore as _;
use std::fmt::Write as _;
use std::sync::Arc;

pub use baton_connectors::ConfiguredConnector;
use baton_core::Principal;
use baton_core::events::{Event, WireEvent};
use baton_core::ports::clock::FixedClock;
use baton_inproc::HeapStore;
use baton_inproc::scripted::ScriptedModel;
use baton_runtime::metrics::LocalMetrics;
use baton_runtime::{Runtime, RuntimeConfig, TurnRequest};
pub use baton_testkit::registry::TestRegistry;
use futures::StreamExt;
use serde_json::Value;

/// A runtime over the test registry, a scripted model and a memory store.
pub struct Rig {
    pub runtime: Runtime,
    pub model: Arc<ScriptedModel>,
    pub store: Arc<HeapStore>,
    pub metrics: Arc<LocalMetrics>,
}

pub fn make_rig(setup: &TestRegistry, script: &str) -> Rig {
    make_rig_with(setup, script, RuntimeConfig::default())
}

pub fn make_rig_with(setup: &TestRegistry, script: &str, config: RuntimeConfig) -> Rig {
    make_rig_connected(setup, script, config, &[])
}

/// A rig with connector kinds of the test's own besides `test`.
pub fn make_rig_connected(
    setup: &TestRegistry,
    script: &str,
    config: RuntimeConfig,
    connectors: &[(&str, Arc<dyn baton_core::ports::connector::Connector>)],
) -> Rig {
    let model = Arc::new(ScriptedModel::from_yaml(script).unwrap().recording());
    let store = Arc::new(HeapStore::new());
    let metrics = Arc::new(LocalMetrics::default());
    let mut builder = Runtime::builder(Arc::new(setup.load().expect("test registry loads")))
        .model_override(model.clone())
        .store(store.clone())
        .connector("test", Arc::new(ConfiguredConnector));
    for (kind, connector) in connectors {
        builder = builder.connector(kind, connector.clone());
    }
    let runtime = builder
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

/// A request that answers `principal`'s turn `turn` of `episode`, which waits, with `reply`
/// (through the native API).
pub fn answering(
    principal: Principal,
    episode: &str,
    turn: &str,
    reply: baton_core::interruption::Reply,
) -> TurnRequest {
    TurnRequest {
        episode_id: Some(episode.to_owned()),
        resume: Some(baton_runtime::Resume {
            turn_id: turn.to_owned(),
            reply,
        }),
        ..TurnRequest::new(principal, String::new())
    }
}

/// `request` in the client's own conversation `id`.
pub fn in_conversation(request: TurnRequest, id: &str) -> TurnRequest {
    TurnRequest {
        conversation: Some(baton_runtime::Conversation {
            id: id.to_owned(),
            new: false,
        }),
        ..request
    }
}
