//! The reference turn run in process, the way the reference implementation measures
//! itself: the runtime called directly, every event serialised as its SSE frame.

use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use baton_core::Principal;
use baton_core::events::Event;
use baton_inproc::HeapStore;
use baton_inproc::scripted::ScriptedModel;
use baton_runtime::registry_folder::{load_sources, read_sources};
use baton_runtime::{Runtime, RuntimeConfig, TurnRequest};
use futures::StreamExt;
use serde::Serialize;
use serde_json::{Value, json};

use crate::stats::{Summary, median, process_cpu, spread};
use crate::workload::{
    self, ANSWER_CHUNKS, DIRECT_PROMPT, Latencies, MIXED_PROMPT, PREAMBLE_CHUNKS, SINGLE_PROMPT,
    SUPPORT_PROMPT,
};

/// Builds a runtime over a workload folder, exactly as `baton` does (registry files,
/// connector checks), with an in-memory journal.
pub(crate) fn build(dir: &Path) -> anyhow::Result<Runtime> {
    build_with(dir, RuntimeConfig::default(), |b| b)
}

/// [`build`] from `config` (the reference's own settings laid over it), with `more` done to
/// the builder last (a memory store, say).
pub(crate) fn build_with(
    dir: &Path,
    config: RuntimeConfig,
    more: impl FnOnce(baton_runtime::RuntimeBuilder) -> baton_runtime::RuntimeBuilder,
) -> anyhow::Result<Runtime> {
    let connectors = baton_connectors::default_connectors(dir);
    // The workloads' tools declare their schemas: nothing to discover, so no async load.
    let registry = read_sources(dir)
        .and_then(|s| load_sources(&s, &connectors, &Default::default()))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let model = ScriptedModel::from_file(&dir.join("script.yaml")).context("reading the script")?;
    let mut builder = Runtime::builder(Arc::new(registry))
        .model_override(Arc::new(model))
        .store(Arc::new(HeapStore::new()))
        .config(RuntimeConfig {
            history_turns: 0,
            // The reference flushes a buffered specialist at once; so does this run.
            flush_pacing_ms: 0,
            ..config
        });
    builder = builder.connectors(connectors);
    if let Some(otlp) = baton_otel::metrics() {
        // `--otlp`: the metrics go out too, as from `baton` with the OTEL_* variables set.
        builder = builder.metrics(Arc::new(otlp));
    }
    Ok(more(builder).build()?)
}

/// One turn as a client sees it.
pub(crate) struct TurnRun {
    pub(crate) latency: Duration,
    pub(crate) ttfe: Duration,
    /// Time to the first answer text.
    pub(crate) ttft: Duration,
    pub(crate) events: usize,
    pub(crate) text: String,
    pub(crate) completed: bool,
}

/// Runs one turn and serialises each event as the SSE frame `baton serve` would send.
pub(crate) async fn turn(rt: &Runtime, prompt: &str) -> anyhow::Result<TurnRun> {
    let principal = Principal::new("bench-user").map_err(|e| anyhow::anyhow!("{e}"))?;
    let start = Instant::now();
    let request = TurnRequest::new(principal, prompt);
    let mut stream = rt
        .run_turn(request)
        .await
        .map_err(|e| anyhow::anyhow!("turn refused: {e}"))?;
    let mut ttfe = None;
    let mut ttft = None;
    let mut events = 0;
    let mut text = String::new();
    let mut completed = false;
    let mut frame = Vec::with_capacity(512);
    while let Some(e) = stream.next().await {
        ttfe.get_or_insert_with(|| start.elapsed());
        frame.clear();
        let _ = write!(frame, "id: {}\nevent: {}\ndata: ", e.seq, e.event.name());
        serde_json::to_writer(&mut frame, &e)?;
        frame.extend_from_slice(b"\n\n");
        events += 1;
        match &e.event {
            // A Direct Line answer streams as pieces; its delivery repeats them whole.
            Event::Text { text: t, .. } | Event::DelegatedText { text: t, .. } => {
                ttft.get_or_insert_with(|| start.elapsed());
                text.push_str(t);
            }
            Event::Completed { .. } => completed = true,
            _ => {}
        }
    }
    Ok(TurnRun {
        latency: start.elapsed(),
        ttfe: ttfe.unwrap_or_default(),
        ttft: ttft.unwrap_or_default(),
        events,
        text,
        completed,
    })
}

/// The chunks `prefix0 ` … of one streamed part of the answer.
fn part(prefix: &str, n: usize) -> String {
    (0..n).map(|i| format!("{prefix}{i} ")).collect()
}

/// The texts a client may get for `prompt` under `composition`: exactly the workload's text.
///
/// For the reference's policy that is the reference's text: the preamble, the specialists'
/// answers one after the other (in whichever order they first spoke), then the composed
/// answer — Baton starts each specialist's answer and the composed answer on a new
/// paragraph (`\n\n`, where the text's source changes), and adds nothing else.
pub(crate) fn expected_texts(composition: &str, prompt: &str) -> Vec<String> {
    let agents: &[&str] = match prompt {
        MIXED_PROMPT => &["shopping", "support"],
        SUPPORT_PROMPT => &["support"],
        _ => &["shopping"],
    };
    let pre = part("pre", PREAMBLE_CHUNKS);
    let specialists = |order: &[&str]| -> String {
        order
            .iter()
            .map(|a| part(a, ANSWER_CHUNKS))
            .collect::<Vec<_>>()
            .join("\n\n")
    };
    let mut reversed = agents.to_vec();
    reversed.reverse();
    if prompt == DIRECT_PROMPT {
        // The Direct Line: the specialist's own answer, streamed and then delivered whole
        // (this run counts the streamed pieces), nothing from the orchestrator.
        vec![part("shopping", ANSWER_CHUNKS)]
    } else if composition == workload::FAITHFUL {
        let fin = part("final", ANSWER_CHUNKS);
        [agents, &reversed[..]]
            .iter()
            .map(|order| format!("{pre}\n\n{}\n\n{fin}", specialists(order)))
            .collect()
    } else if composition == "direct" {
        [agents, &reversed[..]]
            .iter()
            .map(|order| format!("{pre}\n\n{}", specialists(order)))
            .collect()
    } else {
        vec![format!("{pre}\n\n{}", part("final", ANSWER_CHUNKS))]
    }
}

/// Checks that the client got one of the `expected` texts, and the end of the turn.
pub(crate) fn check(run: &TurnRun, expected: &[String]) -> anyhow::Result<()> {
    if !run.completed {
        bail!("the turn did not complete");
    }
    if !expected.contains(&run.text) {
        bail!(
            "the client got {:?}; expected {:?}",
            run.text,
            expected.first()
        );
    }
    Ok(())
}

/// Checks that the client got exactly the workload's text, per composition policy.
pub(crate) fn validate(run: &TurnRun, composition: &str, prompt: &str) -> anyhow::Result<()> {
    check(run, &expected_texts(composition, prompt))
}

#[derive(Serialize)]
pub(crate) struct Sequential {
    turns: usize,
    wall_s: f64,
    turns_per_s: f64,
    cpu_s: f64,
    pub(crate) cpu_ms_per_turn: f64,
    events_per_turn: usize,
    pub(crate) latency: Summary,
    pub(crate) ttfe: Summary,
    ttft: Summary,
    cpu_per_turn: Summary,
}

/// `n` turns one after the other. Every turn's text is checked, outside the measured time
/// (as the reference does not time its checks): CPU per turn is the sum of the turns' own
/// CPU windows.
pub(crate) async fn sequential(
    rt: &Runtime,
    prompt: &str,
    n: usize,
    composition: &str,
) -> anyhow::Result<Sequential> {
    let expected = expected_texts(composition, prompt);
    let (mut lat, mut ttfe, mut ttft, mut cpus) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut events = 0;
    let mut cpu = Duration::ZERO;
    let wall0 = Instant::now();
    for _ in 0..n {
        let c = process_cpu();
        let run = turn(rt, prompt).await?;
        let used = process_cpu().saturating_sub(c);
        cpu += used;
        cpus.push(used);
        check(&run, &expected)?;
        lat.push(run.latency);
        ttfe.push(run.ttfe);
        ttft.push(run.ttft);
        events = run.events;
    }
    let wall = wall0.elapsed().as_secs_f64();
    let cpu = cpu.as_secs_f64();
    Ok(Sequential {
        turns: n,
        wall_s: wall,
        turns_per_s: n as f64 / wall,
        cpu_s: cpu,
        cpu_ms_per_turn: cpu / n as f64 * 1000.0,
        events_per_turn: events,
        latency: Summary::of(&lat),
        ttfe: Summary::of(&ttfe),
        ttft: Summary::of(&ttft),
        cpu_per_turn: Summary::of(&cpus),
    })
}

/// `reps` sequential batches, reported as the reference reports them: the batch with the
/// median throughput, and each figure's spread over the batches.
pub(crate) async fn sequential_runs(
    rt: &Runtime,
    prompt: &str,
    n: usize,
    composition: &str,
    reps: usize,
) -> anyhow::Result<Value> {
    let mut runs = Vec::new();
    for _ in 0..reps.max(1) {
        runs.push(sequential(rt, prompt, n, composition).await?);
    }
    let over = |f: &dyn Fn(&Sequential) -> f64| spread(&runs.iter().map(f).collect::<Vec<_>>());
    let mut out = json!({
        "cpu_ms_per_turn_over_runs": over(&|r| r.cpu_ms_per_turn),
        "p50_cpu_ms_per_turn_over_runs": over(&|r| r.cpu_per_turn.p50_ms),
        "turns_per_s_over_runs": over(&|r| r.turns_per_s),
        "p50_latency_ms_over_runs": over(&|r| r.latency.p50_ms),
        "p99_latency_ms_over_runs": over(&|r| r.latency.p99_ms),
        "p50_ttfe_ms_over_runs": over(&|r| r.ttfe.p50_ms),
        "p99_ttfe_ms_over_runs": over(&|r| r.ttfe.p99_ms),
    });
    runs.sort_by(|a, b| a.turns_per_s.total_cmp(&b.turns_per_s));
    out["representative_run"] = json!(runs.swap_remove(runs.len() / 2));
    Ok(out)
}

/// `n` turns started together; (wall, process CPU).
pub(crate) async fn concurrent(
    rt: &Runtime,
    prompt: &str,
    n: usize,
    composition: &str,
) -> anyhow::Result<(Duration, Duration)> {
    let cpu0 = process_cpu();
    let t0 = Instant::now();
    let runs = futures::future::join_all((0..n).map(|_| turn(rt, prompt))).await;
    let wall = t0.elapsed();
    let cpu = process_cpu().saturating_sub(cpu0);
    for run in runs {
        validate(&run?, composition, prompt)?;
    }
    Ok((wall, cpu))
}

/// The same sleeps in the same shape with no runtime around them: tokio's timer floor.
async fn sleep_floor(lat: Latencies, kind: &str, compose: bool) -> Duration {
    let ms = Duration::from_millis;
    let sub = |x: u64| async move {
        tokio::time::sleep(ms(x)).await;
        tokio::time::sleep(ms(x)).await;
    };
    let t0 = Instant::now();
    if kind == "direct_line_shopping" {
        sub(lat.shopping).await;
        return t0.elapsed();
    }
    tokio::time::sleep(ms(lat.orchestrator)).await;
    match kind {
        "mixed" => {
            futures::join!(sub(lat.shopping), sub(lat.support));
        }
        "single_support" => sub(lat.support).await,
        _ => sub(lat.shopping).await,
    }
    if compose {
        tokio::time::sleep(ms(lat.orchestrator)).await;
    }
    t0.elapsed()
}

/// Turn times with the reference's fixed model latencies, against the ideal.
pub(crate) async fn latency_phase(
    dir: &Path,
    composition: &str,
    reps: usize,
) -> anyhow::Result<Value> {
    workload::write(dir, composition, Latencies::FIXED)?;
    let rt = build(dir)?;
    let l = Latencies::FIXED;
    let ideal = |kind: &str| match kind {
        "direct_line_shopping" => 2 * l.shopping,
        "single_shopping" => 2 * l.orchestrator + 2 * l.shopping,
        "single_support" => 2 * l.orchestrator + 2 * l.support,
        _ => 2 * l.orchestrator + 2 * l.shopping.max(l.support),
    };
    turn(&rt, MIXED_PROMPT).await?; // warm-up
    let mut out = serde_json::Map::new();
    for (kind, prompt) in [
        ("single_shopping", SINGLE_PROMPT),
        ("single_support", SUPPORT_PROMPT),
        ("mixed", MIXED_PROMPT),
        ("direct_line_shopping", DIRECT_PROMPT),
    ] {
        let mut turns = Vec::new();
        let mut ttfts = Vec::new();
        let mut floors = Vec::new();
        for _ in 0..reps {
            let run = turn(&rt, prompt).await?;
            validate(&run, composition, prompt)?;
            turns.push(run.latency.as_secs_f64() * 1000.0);
            ttfts.push(run.ttft.as_secs_f64() * 1000.0);
            floors.push(
                sleep_floor(l, kind, composition != "direct")
                    .await
                    .as_secs_f64()
                    * 1000.0,
            );
        }
        // Direct composition has no composition call: its ideal has one orchestrator call.
        let ideal_ms = (ideal(kind)
            - if composition == "direct" && kind != "direct_line_shopping" {
                l.orchestrator
            } else {
                0
            }) as f64;
        let med = median(&turns);
        out.insert(
            kind.into(),
            json!({
                "turn_ms_median": med,
                "turn_ms": turns,
                "ideal_ms": ideal_ms,
                "first_text_ms_median": median(&ttfts),
                "overhead_over_ideal_ms": med - ideal_ms,
                "tokio_sleep_floor_ms": median(&floors),
                "overhead_over_floor_ms": med - median(&floors),
            }),
        );
    }
    let (wall, _) = concurrent(&rt, MIXED_PROMPT, 100, composition).await?;
    out.insert(
        "concurrent_100_mixed_wall_ms".into(),
        json!(wall.as_secs_f64() * 1000.0),
    );
    Ok(Value::Object(out))
}

/// Resident memory of this process while it holds `n` turns open in process (no HTTP):
/// the engine's share of the server's memory under many streams.
pub(crate) async fn held_turns_resident_set(dir: &Path, n: usize) -> anyhow::Result<Value> {
    let hold = Latencies {
        orchestrator: 500,
        shopping: 1000,
        support: 2000,
    };
    workload::write(dir, workload::FAITHFUL, hold)?;
    let rt = build(dir)?;
    let me = std::process::id();
    let before = crate::stats::rss_mib(me).map(|r| r.0).unwrap_or_default();
    let turns = futures::future::join_all((0..n).map(|_| turn(&rt, MIXED_PROMPT)));
    let sample = async {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        crate::stats::rss_mib(me).map(|r| r.0).unwrap_or_default()
    };
    let (runs, during) = futures::join!(turns, sample);
    for run in runs {
        validate(&run?, workload::FAITHFUL, MIXED_PROMPT)?;
    }
    Ok(
        json!({ "turns": n, "rss_before_mib": before, "rss_while_open_mib": during,
               "kib_per_open_turn": (during - before) * 1024.0 / n as f64 }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn check(composition: &str, prompt: &str) {
        let dir = tempfile::tempdir().unwrap();
        workload::write(dir.path(), composition, Latencies::default()).unwrap();
        let rt = build(dir.path()).unwrap();
        let run = turn(&rt, prompt).await.unwrap();
        if let Err(e) = validate(&run, composition, prompt) {
            panic!("{composition} {prompt:?}: {e}");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_workload_text_reaches_the_client_in_every_policy() {
        for composition in [workload::FAITHFUL, "mediated", "direct"] {
            for prompt in [SINGLE_PROMPT, SUPPORT_PROMPT, MIXED_PROMPT, DIRECT_PROMPT] {
                check(composition, prompt).await;
            }
        }
    }
}
