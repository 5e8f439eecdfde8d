//! `--planner`: what planning costs (D-16).
//!
//! 1. The engine's own cost per planned node and per wave, with a scripted model that
//!    answers at once: CPU per turn of a one-node plan, eight nodes in one wave and eight
//!    nodes in a chain of eight waves (every node makes one tool call), so that
//!    (8 in one wave − 1) ÷ 7 is a node and (8 in a chain − 8 in one wave) ÷ 7 a wave.
//! 2. A diamond (1 → 2 → 1 nodes) with fixed model latencies against its critical path,
//!    the critical path measured by running the same model calls one after another
//!    without Baton (so timer granularity counts on both sides).
//! 3. The same request answered by routing and by the planner on the shipped registry and
//!    the offline model: model calls, tokens and wall time, side by side.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use baton_connectors::ConfiguredConnector;
use baton_core::Principal;
use baton_core::events::Event;
use baton_core::ports::connector::Connector;
use baton_core::ports::model::{CallPurpose, Model, ModelRequest};
use baton_inproc::HeapStore;
use baton_inproc::scripted::ScriptedModel;
use baton_runtime::registry_folder::{load_sources, read_sources};
use baton_runtime::{Runtime, RuntimeConfig, TurnRequest};
use futures::StreamExt;
use serde_json::{Value, json};

use crate::stats::{median, process_cpu};

/// Nodes of the wide and the deep plan.
const NODES: usize = 8;

/// A planner script: one step dispatching `nodes` (each after the one before when
/// `chain`), each node one tool call then its answer; `delay_ms` on every model call.
fn script(nodes: usize, chain: bool, delay: impl Fn(&str) -> u64) -> String {
    let mut step = String::new();
    for i in 0..nodes {
        let deps = if chain && i > 0 {
            format!("n{}", i - 1)
        } else {
            String::new()
        };
        step.push_str(&format!(
            "        - {{ name: dispatch_agent, args: {{ agent_id: n{i}, mission: \"part {i}\", skills: [rewards.points_balance], depends_on: [{deps}] }} }}\n"
        ));
    }
    let mut out = format!(
        r#"
agents:
  planner:
    - when: {{ purpose: route }}
      delay_ms: {}
      tool_calls:
{step}
    - when: {{ purpose: compose }}
      delay_ms: {}
      text: ["All done."]
"#,
        delay("route"),
        delay("compose")
    );
    for i in 0..nodes {
        let d = delay(&format!("n{i}"));
        out.push_str(&format!(
            r#"
  n{i}:
    - when: {{ after_tool_results: false }}
      delay_ms: {d}
      tool_calls: [{{ name: use_skill, args: {{ skill: rewards.points_balance, arguments: {{}} }} }}]
    - when: {{ after_tool_results: true }}
      delay_ms: {d}
      text: ["You have 1200 points."]
"#
        ));
    }
    out
}

/// The registry of the engine figures: a planner over three specialists whose tools answer
/// from `tools.yaml`.
const PLANNER_REGISTRY: &str = "shared/bench/planner-registry";

/// A runtime over [`PLANNER_REGISTRY`] with the planner as its entry.
fn planner_runtime(script: &str) -> anyhow::Result<(Runtime, Arc<ScriptedModel>)> {
    let connectors = BTreeMap::from([(
        "configured".to_owned(),
        Arc::new(ConfiguredConnector) as Arc<dyn Connector>,
    )]);
    let registry = read_sources(Path::new(PLANNER_REGISTRY))
        .and_then(|s| load_sources(&s, &connectors, &Default::default()))
        .map_err(|e| anyhow::anyhow!("the registry {PLANNER_REGISTRY}: {e}"))?;
    let model = Arc::new(ScriptedModel::from_yaml(script).map_err(|e| anyhow::anyhow!("{e}"))?);
    let runtime = Runtime::builder(Arc::new(registry))
        .model_override(model.clone())
        .store(Arc::new(HeapStore::new()))
        .connectors(connectors)
        .config(RuntimeConfig {
            orchestrator: Some("planner".into()),
            history_turns: 0,
            ..RuntimeConfig::default()
        })
        .build()?;
    Ok((runtime, model))
}

/// What one turn came to, as a client reads it.
struct Ran {
    wall: Duration,
    text: String,
    nodes_ended: usize,
    calls: u32,
    input: u64,
    output: u64,
}

async fn turn(rt: &Runtime, text: &str) -> anyhow::Result<Ran> {
    let principal = Principal::new("bench-user").map_err(|e| anyhow::anyhow!("{e}"))?;
    let start = Instant::now();
    let mut stream = rt
        .run_turn(TurnRequest::new(principal, text))
        .await
        .map_err(|e| anyhow::anyhow!("turn refused: {e}"))?;
    let mut ran = Ran {
        wall: Duration::ZERO,
        text: String::new(),
        nodes_ended: 0,
        calls: 0,
        input: 0,
        output: 0,
    };
    while let Some(e) = stream.next().await {
        // Serialised as a client would receive it.
        let _ = serde_json::to_vec(&e)?;
        match &e.event {
            Event::Text { text, .. } => ran.text.push_str(text),
            Event::NodeEnd { .. } => ran.nodes_ended += 1,
            Event::Usage { models, .. } => {
                for m in models {
                    ran.calls += m.calls;
                    ran.input += m.tokens.input;
                    ran.output += m.tokens.output;
                }
            }
            _ => {}
        }
    }
    ran.wall = start.elapsed();
    Ok(ran)
}

/// CPU and wall per turn of a zero-latency plan, over `turns` turns.
async fn zero_latency(nodes: usize, chain: bool, turns: usize) -> anyhow::Result<Value> {
    let (rt, _) = planner_runtime(&script(nodes, chain, |_| 0))?;
    // Warm-up: first-use allocations are not the steady state.
    for _ in 0..turns.min(50) {
        turn(&rt, "plan it").await?;
    }
    let cpu0 = process_cpu();
    let wall0 = Instant::now();
    for _ in 0..turns {
        let ran = turn(&rt, "plan it").await?;
        if ran.nodes_ended != nodes || ran.text != "All done." {
            bail!(
                "the plan of {nodes} did not run whole: {} nodes ended, answer {:?}",
                ran.nodes_ended,
                ran.text
            );
        }
    }
    let cpu = (process_cpu() - cpu0).as_secs_f64() * 1e6 / turns as f64;
    let wall = wall0.elapsed().as_secs_f64() * 1e6 / turns as f64;
    Ok(
        json!({"nodes": nodes, "chain": chain, "cpu_us_per_turn": round(cpu), "wall_us_per_turn": round(wall)}),
    )
}

fn round(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// The diamond with fixed latencies against the same calls made one after another.
async fn diamond(reps: usize) -> anyhow::Result<Value> {
    // route 30 ms; each node's two calls 20 ms each; compose 30 ms. Nodes: a (wave 1);
    // b, c (wave 2, after a); d (wave 3, after b and c).
    let delays = |who: &str| match who {
        "route" | "compose" => 30,
        _ => 20,
    };
    let mut step = String::new();
    for (id, deps) in [("a", ""), ("b", "a"), ("c", "a"), ("d", "b, c")] {
        step.push_str(&format!(
            "        - {{ name: dispatch_agent, args: {{ agent_id: {id}, mission: \"part {id}\", skills: [rewards.points_balance], depends_on: [{deps}] }} }}\n"
        ));
    }
    let mut script_text = format!(
        "\nagents:\n  planner:\n    - when: {{ purpose: route }}\n      delay_ms: {}\n      tool_calls:\n{step}\n    - when: {{ purpose: compose }}\n      delay_ms: {}\n      text: [\"All done.\"]\n",
        delays("route"),
        delays("compose")
    );
    for id in ["a", "b", "c", "d"] {
        let d = delays(id);
        script_text.push_str(&format!(
            "\n  {id}:\n    - when: {{ after_tool_results: false }}\n      delay_ms: {d}\n      tool_calls: [{{ name: use_skill, args: {{ skill: rewards.points_balance, arguments: {{}} }} }}]\n    - when: {{ after_tool_results: true }}\n      delay_ms: {d}\n      text: [\"done\"]\n"
        ));
    }
    let (rt, model) = planner_runtime(&script_text)?;
    turn(&rt, "plan it").await?; // warm-up
    let mut walls = Vec::new();
    for _ in 0..reps {
        let ran = turn(&rt, "plan it").await?;
        if ran.nodes_ended != 4 {
            bail!("the diamond did not run whole");
        }
        walls.push(ran.wall.as_secs_f64() * 1000.0);
    }
    // The critical path: route, a's two calls, b's two calls, d's two calls, compose, each
    // as the same scripted model serves it, one after another.
    let mut floors = Vec::new();
    for _ in 0..reps {
        let start = Instant::now();
        for (agent, purpose, after) in [
            ("planner", CallPurpose::Route, false),
            ("a", CallPurpose::Agent, false),
            ("a", CallPurpose::Agent, true),
            ("b", CallPurpose::Agent, false),
            ("b", CallPurpose::Agent, true),
            ("d", CallPurpose::Agent, false),
            ("d", CallPurpose::Agent, true),
            ("planner", CallPurpose::Compose, true),
        ] {
            let request = bare_request(agent, purpose, after);
            let mut s = model.stream(&request);
            while s.next().await.is_some() {}
        }
        floors.push(start.elapsed().as_secs_f64() * 1000.0);
    }
    let wall = median(&walls);
    let floor = median(&floors);
    Ok(json!({
        "wall_ms": wall,
        "critical_path_ms": floor,
        "scripted_delays_ms": 30 + 6 * 20 + 30,
        "overhead_ms": round(wall - floor),
        "overhead_ms_per_wave": round((wall - floor) / 3.0),
    }))
}

/// A request the scripted model answers as it would the engine's.
fn bare_request(agent: &str, purpose: CallPurpose, after_results: bool) -> ModelRequest {
    use baton_core::message::{Content, Message, Role, ToolResultStatus};
    let mut messages = vec![Message::user("part")];
    if after_results {
        messages.push(Message {
            role: Role::Assistant,
            content: vec![Content::ToolUse {
                id: "c".into(),
                name: "use_skill".into(),
                input: json!({}).into(),
            }],
        });
        messages.push(Message {
            role: Role::User,
            content: vec![Content::ToolResult {
                id: "c".into(),
                status: ToolResultStatus::Ok,
                content: json!("{}"),
            }],
        });
    }
    ModelRequest {
        agent_id: Arc::from(agent),
        model_id: Arc::from("test-model-1"),
        purpose,
        system: Vec::new(),
        messages,
        tools: Arc::from(Vec::new()),
        tool_choice: Default::default(),
        inference: Default::default(),
    }
}

/// The shipped registry on the offline model, with `entry` as the orchestrator.
fn shipped(dir: &Path, entry: &str) -> anyhow::Result<Runtime> {
    let connectors = baton_connectors::default_connectors(dir);
    let registry = read_sources(dir)
        .and_then(|s| load_sources(&s, &connectors, &Default::default()))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let registry = Arc::new(registry);
    let model = baton_local::offline::OfflineModel::new(registry.clone());
    Ok(Runtime::builder(registry)
        .model_override(Arc::new(model))
        .store(Arc::new(HeapStore::new()))
        .connectors(connectors)
        .config(RuntimeConfig {
            orchestrator: Some(entry.into()),
            history_turns: 0,
            ..RuntimeConfig::default()
        })
        .build()?)
}

/// One request by routing and by the planner: model calls, tokens, wall time.
async fn side_by_side(turns: usize) -> anyhow::Result<Value> {
    let dir = Path::new("shared/registry");
    let text = "what's my points balance and find me coffee deals";
    let mut rows = Vec::new();
    for entry in ["orchestrator", "planner"] {
        let rt = shipped(dir, entry).with_context(|| format!("the shipped registry as {entry}"))?;
        let first = turn(&rt, text).await?;
        let mut walls = Vec::new();
        for _ in 0..turns {
            walls.push(turn(&rt, text).await?.wall.as_secs_f64() * 1e6);
        }
        rows.push(json!({
            "entry": entry,
            "model_calls": first.calls,
            "input_tokens": first.input,
            "output_tokens": first.output,
            "wall_us": median(&walls),
        }));
    }
    Ok(json!({"request": text, "model": "offline", "rows": rows}))
}

/// Runs the planner benchmark.
pub(crate) async fn run(smoke: bool, turns: usize, reps: usize) -> anyhow::Result<Value> {
    let turns = if smoke { 5 } else { turns };
    let reps = if smoke { 1 } else { reps };
    let one = zero_latency(1, false, turns).await?;
    let wide = zero_latency(NODES, false, turns).await?;
    let deep = zero_latency(NODES, true, turns).await?;
    let cpu = |v: &Value| v["cpu_us_per_turn"].as_f64().unwrap_or_default();
    let wall = |v: &Value| v["wall_us_per_turn"].as_f64().unwrap_or_default();
    let per = (NODES - 1) as f64;
    Ok(json!({
        "zero_latency": [one.clone(), wide.clone(), deep.clone()],
        "per_node": {"cpu_us": round((cpu(&wide) - cpu(&one)) / per), "wall_us": round((wall(&wide) - wall(&one)) / per)},
        "per_wave": {"cpu_us": round((cpu(&deep) - cpu(&wide)) / per), "wall_us": round((wall(&deep) - wall(&wide)) / per)},
        "diamond": diamond(reps).await?,
        "routing_vs_planner": side_by_side(turns).await?,
    }))
}

/// The figures as a table.
pub(crate) fn table(r: &Value) -> String {
    let mut out = String::from("| planner figure | value |\n| --- | ---: |\n");
    for z in r["zero_latency"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "| {} node(s){}: CPU / wall per turn (µs) | {} / {} |\n",
            z["nodes"],
            if z["chain"].as_bool() == Some(true) {
                " in a chain"
            } else {
                " in one wave"
            },
            z["cpu_us_per_turn"],
            z["wall_us_per_turn"]
        ));
    }
    out.push_str(&format!(
        "| per node: CPU / wall (µs) | {} / {} |\n| per wave: CPU / wall (µs) | {} / {} |\n",
        r["per_node"]["cpu_us"],
        r["per_node"]["wall_us"],
        r["per_wave"]["cpu_us"],
        r["per_wave"]["wall_us"]
    ));
    let d = &r["diamond"];
    out.push_str(&format!(
        "| diamond: wall / critical path (ms) | {} / {} |\n| diamond: overhead per wave (ms) | {} |\n",
        d["wall_ms"], d["critical_path_ms"], d["overhead_ms_per_wave"]
    ));
    for row in r["routing_vs_planner"]["rows"]
        .as_array()
        .into_iter()
        .flatten()
    {
        out.push_str(&format!(
            "| {}: model calls, tokens in / out, wall (µs) | {}, {} / {}, {} |\n",
            row["entry"],
            row["model_calls"],
            row["input_tokens"],
            row["output_tokens"],
            row["wall_us"]
        ));
    }
    out
}
