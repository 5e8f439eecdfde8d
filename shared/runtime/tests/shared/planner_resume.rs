//! A planned turn cut short at a wave boundary and resumed by the next request with the
//! same turn id, over any store: no node that finished runs again (D-16).
//!
//! Shared with `#[path]` by the test crates of each store (memory, SQLite, DynamoDB), so
//! that every store runs the same scenario. The cut is a process dying: the turn's tokio
//! runtime is dropped while a node of the next wave runs, so nothing commits or releases;
//! a second runtime over the same store takes the turn over once its lease has run out.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use baton_connectors::ConfiguredConnector;
use baton_core::Principal;
use baton_core::events::{Event, WireEvent};
use baton_core::plan::PlanCheckpoint;
use baton_core::ports::clock::FixedClock;
use baton_core::ports::store::Store;
use baton_inproc::scripted::ScriptedModel;
use baton_runtime::{Runtime, RuntimeConfig, TurnRequest};
use baton_testkit::registry::TestRegistry;
use futures::StreamExt;

const T0: u64 = 1_795_305_600_000;
const TURN: &str = "t-resume";
const TEXT: &str = "check my receipt, then points and deals, then a total";

/// The diamond: receipt (wave 1); balance and offers (wave 2); total (wave 3).
const NODES: [(&str, u32); 4] = [("receipt", 1), ("balance", 2), ("offers", 2), ("total", 3)];

fn skill(node: &str) -> (&'static str, &'static str) {
    match node {
        "receipt" => ("support.lookup_receipt", "{ query: receipt }"),
        "offers" => ("shop.search_offers", "{ query: coffee }"),
        _ => ("rewards.points_balance", "{}"),
    }
}

/// The planner's script; nodes of `hang_wave` never answer (past the last wave: the
/// planner's answer never comes).
fn script(hang_wave: u32) -> String {
    let compose_delay = if hang_wave > 3 { 3_600_000 } else { 0 };
    let mut out = String::from(
        r#"
agents:
  planner:
    - when: { purpose: route }
      tool_calls:
        - { name: dispatch_agent, args: { agent_id: receipt, mission: "find the receipt", skills: [support.lookup_receipt] } }
        - { name: dispatch_agent, args: { agent_id: balance, mission: "count the points", skills: [rewards.points_balance], depends_on: [receipt] } }
        - { name: dispatch_agent, args: { agent_id: offers, mission: "find deals", skills: [shop.search_offers], depends_on: [receipt] } }
        - { name: dispatch_agent, args: { agent_id: total, mission: "add it up", skills: [rewards.points_balance], depends_on: [balance, offers] } }
    - when: { purpose: compose }
      delay_ms: COMPOSE_DELAY
      text: ["Here is the whole picture."]
"#,
    )
    .replace("COMPOSE_DELAY", &compose_delay.to_string());
    for (node, wave) in NODES {
        let (skill, args) = skill(node);
        let delay = if wave == hang_wave { 3_600_000 } else { 0 };
        out.push_str(&format!(
            r#"
  {node}:
    - when: {{ after_tool_results: false }}
      delay_ms: {delay}
      tool_calls: [{{ name: use_skill, args: {{ skill: {skill}, arguments: {args} }} }}]
    - when: {{ after_tool_results: true }}
      text: ["{node} done."]
"#
        ));
    }
    out
}

fn runtime(store: Arc<dyn Store>, model: Arc<ScriptedModel>, now_ms: u64) -> Runtime {
    let registry = TestRegistry::default().with_planner("");
    Runtime::builder(Arc::new(registry.load().expect("the test registry loads")))
        .model_override(model)
        .store(store)
        .connector("test", Arc::new(ConfiguredConnector))
        .clock(Arc::new(FixedClock(now_ms)))
        .config(RuntimeConfig {
            orchestrator: Some("planner".into()),
            ..RuntimeConfig::default()
        })
        .build()
        .expect("the runtime builds")
}

fn request() -> TurnRequest {
    TurnRequest {
        turn_id: Some(TURN.to_owned()),
        ..TurnRequest::new(Principal::new("alice").expect("a principal"), TEXT)
    }
}

fn requests_by_agent(model: &ScriptedModel) -> BTreeMap<String, usize> {
    let mut by = BTreeMap::new();
    for r in model.requests() {
        *by.entry(r.agent_id.to_string()).or_default() += 1;
    }
    by
}

/// Runs the turn until wave `cut` has finished and its checkpoint is saved, then kills
/// it; returns the episode id and what the first run's model was asked.
fn run_until_cut(store: Arc<dyn Store>, cut: u32) -> (String, BTreeMap<String, usize>) {
    let (tx, rx) = std::sync::mpsc::channel();
    let (kill, killed) = std::sync::mpsc::channel::<()>();
    let model = Arc::new(
        ScriptedModel::from_yaml(&script(cut + 1))
            .expect("the script parses")
            .recording(),
    );
    let first = model.clone();
    let store_a = store.clone();
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        rt.block_on(async {
            let runtime = runtime(store_a, first, T0);
            let stream = runtime.run_turn(request()).await.expect("the turn starts");
            let _ = tx.send(stream.episode_id.clone());
            // Read the stream until told to die, as a client would.
            let reading = tokio::spawn(stream.collect::<Vec<WireEvent>>());
            tokio::task::spawn_blocking(move || killed.recv())
                .await
                .ok();
            reading.abort();
        });
        // Dropping the runtime drops the turn's task mid-wave: a killed process.
        drop(rt);
    });
    let episode = rx.recv().expect("the episode id");
    let checker = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let saved = checker.block_on(async {
        for _ in 0..1_000 {
            if let Ok(Some(json)) = store.checkpoint(&episode, TURN).await
                && let Ok(cp) = PlanCheckpoint::from_json(&json)
                && cp.waves_done == cut
            {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        false
    });
    let _ = kill.send(());
    thread.join().expect("the first run ends");
    assert!(saved, "wave {cut} was never checkpointed");
    (episode, requests_by_agent(&model))
}

/// Cuts the diamond after wave `cut` (1, 2, or 3: while the planner writes its answer)
/// and resumes it; panics on the first broken expectation.
pub(crate) async fn cut_after_wave_and_resume(store: Arc<dyn Store>, cut: u32) {
    let moved = store.clone();
    let (episode, before) = tokio::task::spawn_blocking(move || run_until_cut(moved, cut))
        .await
        .expect("the first run");
    for (node, wave) in NODES {
        let asked = before.get(node).copied().unwrap_or(0);
        if wave <= cut {
            assert_eq!(asked, 2, "{node} ran in the first run: {before:?}");
        } else if wave > cut + 1 {
            assert_eq!(asked, 0, "{node} had not started: {before:?}");
        }
    }

    // The same request again after the lease ran out: it goes on from the checkpoint.
    let model = Arc::new(
        ScriptedModel::from_yaml(&script(0))
            .expect("the script parses")
            .recording(),
    );
    let later = T0 + RuntimeConfig::default().lease_ms + 1_000;
    let runtime = runtime(store.clone(), model.clone(), later);
    let stream = runtime.run_turn(request()).await.expect("the retry starts");
    assert_eq!(stream.episode_id, episode);
    let events: Vec<WireEvent> = stream.collect().await;
    let after = requests_by_agent(&model);
    for (node, wave) in NODES {
        let asked = after.get(node).copied().unwrap_or(0);
        if wave <= cut {
            assert_eq!(
                asked, 0,
                "{node} finished before the cut and ran again: {after:?}"
            );
        } else {
            assert_eq!(asked, 2, "{node} ran after the cut: {after:?}");
        }
        let started = events
            .iter()
            .filter(|e| matches!(&e.event, Event::NodeStart { node: n, .. } if n == node))
            .count();
        assert_eq!(started, usize::from(wave > cut), "{node} started");
        let ended = events
            .iter()
            .filter(|e| matches!(&e.event, Event::NodeEnd { node: n, .. } if n == node))
            .count();
        assert_eq!(ended, 1, "{node} is shown ended once");
    }
    assert_eq!(
        after.get("planner"),
        Some(&1),
        "only the answer was asked: {after:?}"
    );
    let answer: String = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(answer, "Here is the whole picture.");
    let alice = Principal::new("alice").expect("a principal");
    let turns = store.turns(&alice, &episode, 10).await.expect("the turns");
    assert_eq!(turns.len(), 1, "committed once");
    let record = &turns[0];
    assert_eq!(record.turn_id, TURN);
    let plan = record.routing.plan.as_ref().expect("the plan is recorded");
    assert_eq!(plan.resumed_after_wave, Some(cut));
    let consulted: Vec<&str> = record
        .consulted
        .iter()
        .map(|c| c.agent_id.as_str())
        .collect();
    assert_eq!(
        consulted.len(),
        4,
        "every node that ran, before or after the cut: {consulted:?}"
    );
    assert_eq!(
        store.checkpoint(&episode, TURN).await,
        Ok(None),
        "the commit removed it"
    );
}
