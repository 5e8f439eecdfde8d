//! Runs the phases and prints the side-by-side table.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde_json::{Value, json};

use crate::stats::median;
use crate::workload::{DIRECT_PROMPT, Latencies, MIXED_PROMPT, SINGLE_PROMPT};
use crate::{Args, faces, inproc, serve_load, workload};

pub(crate) async fn run(args: &Args) -> anyhow::Result<Value> {
    let dir = tempfile::tempdir()?;
    // Sequential batches per figure: three, as the reference runs them.
    let (turns, warmup, conc_reps, seq_reps) = if args.smoke {
        (20, 5, 1, 1)
    } else {
        (args.turns, 200, 3, 3)
    };
    let mut out = json!({
        "framework": "baton",
        "version": env!("CARGO_PKG_VERSION"),
        "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        "config": { "runtime": if args.current_thread { "tokio current_thread" } else { "tokio multi_thread, 2 workers" }, "turns": turns, "sequential_reps": seq_reps, "warmup": warmup, "concurrency": 100, "conc_reps": conc_reps, "latency_reps": args.reps,
                    "store": "heap", "model": "scripted, zero cost" },
    });

    // First, while the heap is fresh: memory held per open turn.
    if !args.smoke {
        let d = tempfile::tempdir()?;
        out["held_turns_in_process"] =
            inproc::held_turns_resident_set(d.path(), args.streams).await?;
    }
    // Registry load + validation + runtime build, in process.
    workload::write(dir.path(), workload::FAITHFUL, Latencies::default())?;
    let mut builds = Vec::new();
    for _ in 0..if args.smoke { 3 } else { 30 } {
        let t = Instant::now();
        inproc::build(dir.path())?;
        builds.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    out["build_ms_median"] = json!(median(&builds));

    // The reference turn streams the specialists' answers, then composes: that policy's
    // figures are the ones beside the reference; `mediated` (nothing streamed before the
    // composed answer) is measured for comparison.
    let compositions: &[&str] = if args.smoke {
        &[workload::FAITHFUL]
    } else {
        &[workload::FAITHFUL, "mediated"]
    };
    for composition in compositions {
        workload::write(dir.path(), composition, Latencies::default())?;
        let rt = inproc::build(dir.path())?;
        for _ in 0..warmup {
            inproc::turn(&rt, MIXED_PROMPT).await?;
        }
        let single =
            inproc::sequential_runs(&rt, SINGLE_PROMPT, turns, composition, seq_reps).await?;
        let mixed =
            inproc::sequential_runs(&rt, MIXED_PROMPT, turns, composition, seq_reps).await?;
        let mut conc = serde_json::Map::new();
        for (name, prompt) in [("single", SINGLE_PROMPT), ("mixed", MIXED_PROMPT)] {
            let (mut walls, mut cpus) = (Vec::new(), Vec::new());
            for _ in 0..conc_reps {
                let (w, c) = inproc::concurrent(&rt, prompt, 100, composition).await?;
                walls.push(w.as_secs_f64() * 1000.0);
                cpus.push(c.as_secs_f64() * 1000.0);
            }
            conc.insert(
                format!("concurrent_100_{name}"),
                json!({ "wall_ms_median": median(&walls), "cpu_ms_median": median(&cpus) }),
            );
        }
        let mut section = json!({ "single": single, "mixed": mixed, "concurrency": conc });
        if *composition == workload::FAITHFUL {
            // The Direct Line turn does not depend on the composition policy.
            section["direct_line"] =
                inproc::sequential_runs(&rt, DIRECT_PROMPT, turns, composition, seq_reps).await?;
        }
        if !args.smoke {
            let lat_dir = tempfile::tempdir()?;
            section["fixed_latency"] =
                inproc::latency_phase(lat_dir.path(), composition, args.reps).await?;
        }
        out[*composition] = section;
    }

    if args.serve && !args.smoke {
        let baton = baton_of(args.baton.as_deref())?;
        let d = tempfile::tempdir()?;
        out["serve_cold_start"] = serve_load::cold_start(&baton, d.path(), 10).await?;
        let d = tempfile::tempdir()?;
        out["serve_streams"] = serve_load::streams(&baton, d.path(), args.streams).await?;
        let d = tempfile::tempdir()?;
        out["serve_stalled_readers"] = serve_load::stalled_readers(&baton, d.path(), 200).await?;
        let d = tempfile::tempdir()?;
        out["serve_reads_during_commits"] =
            serve_load::reads_during_commits(&baton, d.path(), 200).await?;
        let d = tempfile::tempdir()?;
        out["serve_faces"] = faces::overhead(&baton, d.path(), 500, 6).await?;
        let d = tempfile::tempdir()?;
        out["serve_idle_connections"] =
            serve_load::idle_connections(&baton, d.path(), args.streams).await?;
    }
    tokio::time::sleep(Duration::from_millis(1)).await;
    Ok(out)
}

/// The `baton` binary given, else the one next to this benchmark.
pub(crate) fn baton_of(given: Option<&Path>) -> anyhow::Result<PathBuf> {
    given.map_or_else(sibling_baton, |p| Ok(p.to_owned()))
}

fn sibling_baton() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let path = exe.with_file_name("baton");
    anyhow::ensure!(
        path.exists(),
        "no baton binary next to {}; build it (cargo build --release -p baton-cli) or pass --baton",
        exe.display()
    );
    Ok(path)
}

fn at<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(v, |v, k| v.get(k))
}

fn num(v: &Value, path: &str) -> Option<f64> {
    at(v, path).and_then(Value::as_f64)
}

/// The figures as a table, with the reference beside them when given.
pub(crate) fn table(b: &Value, reference: Option<&Path>) -> anyhow::Result<String> {
    let r: Value = match reference {
        Some(p) => serde_json::from_str(
            &std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?,
        )?,
        None => Value::Null,
    };
    // (label, baton path, reference path, lower is better)
    let rows: &[(&str, &str, &str, bool)] = &[
        (
            "single: CPU ms per turn",
            "direct_then_compose.single.cpu_ms_per_turn_over_runs.median",
            "zero_latency.single.cpu_ms_per_turn_over_runs.median",
            true,
        ),
        (
            "mixed: CPU ms per turn",
            "direct_then_compose.mixed.cpu_ms_per_turn_over_runs.median",
            "zero_latency.mixed.cpu_ms_per_turn_over_runs.median",
            true,
        ),
        (
            "single: CPU ms per turn, p50 of turns",
            "direct_then_compose.single.p50_cpu_ms_per_turn_over_runs.median",
            "zero_latency.single.p50_cpu_ms_per_turn_over_runs.median",
            true,
        ),
        (
            "mixed: CPU ms per turn, p50 of turns",
            "direct_then_compose.mixed.p50_cpu_ms_per_turn_over_runs.median",
            "zero_latency.mixed.p50_cpu_ms_per_turn_over_runs.median",
            true,
        ),
        (
            "single: turns/s",
            "direct_then_compose.single.turns_per_s_over_runs.median",
            "zero_latency.single.turns_per_s_over_runs.median",
            false,
        ),
        (
            "mixed: turns/s",
            "direct_then_compose.mixed.turns_per_s_over_runs.median",
            "zero_latency.mixed.turns_per_s_over_runs.median",
            false,
        ),
        (
            "single: latency p50 ms",
            "direct_then_compose.single.p50_latency_ms_over_runs.median",
            "zero_latency.single.p50_latency_ms_over_runs.median",
            true,
        ),
        (
            "mixed: latency p99 ms",
            "direct_then_compose.mixed.p99_latency_ms_over_runs.median",
            "zero_latency.mixed.p99_latency_ms_over_runs.median",
            true,
        ),
        (
            "single: first event p50 ms",
            "direct_then_compose.single.p50_ttfe_ms_over_runs.median",
            "zero_latency.single.p50_ttfe_ms_over_runs.median",
            true,
        ),
        (
            "mixed: first event p99 ms",
            "direct_then_compose.mixed.p99_ttfe_ms_over_runs.median",
            "zero_latency.mixed.p99_ttfe_ms_over_runs.median",
            true,
        ),
        (
            "Direct Line (strict) single: CPU ms per turn",
            "direct_then_compose.direct_line.cpu_ms_per_turn_over_runs.median",
            "zero_latency.single.cpu_ms_per_turn_over_runs.median",
            true,
        ),
        (
            "100 concurrent single: wall ms",
            "direct_then_compose.concurrency.concurrent_100_single.wall_ms_median",
            "zero_latency.concurrent_100_single.wall_ms.median",
            true,
        ),
        (
            "100 concurrent mixed: wall ms",
            "direct_then_compose.concurrency.concurrent_100_mixed.wall_ms_median",
            "zero_latency.concurrent_100_mixed.wall_ms.median",
            true,
        ),
        (
            "100 concurrent mixed: CPU ms",
            "direct_then_compose.concurrency.concurrent_100_mixed.cpu_ms_median",
            "zero_latency.concurrent_100_mixed.cpu_ms.median",
            true,
        ),
        (
            "fixed latency mixed: turn ms (ideal 700)",
            "direct_then_compose.fixed_latency.mixed.turn_ms_median",
            "fixed_latency.mixed.turn_ms.median",
            true,
        ),
        (
            "fan-out (D-10), mixed: ms over the ideal (max of the specialists + the orchestrator calls)",
            "direct_then_compose.fixed_latency.mixed.overhead_over_ideal_ms",
            "fixed_latency.mixed.overhead_over_ideal_ms_median",
            true,
        ),
        (
            "fan-out, mixed: ms over tokio's timer floor for the same sleeps",
            "direct_then_compose.fixed_latency.mixed.overhead_over_floor_ms",
            "",
            true,
        ),
        (
            "fixed latency single shopping: turn ms (ideal 300)",
            "direct_then_compose.fixed_latency.single_shopping.turn_ms_median",
            "fixed_latency.single_shopping.turn_ms.median",
            true,
        ),
        (
            "fixed latency single support: turn ms (ideal 700)",
            "direct_then_compose.fixed_latency.single_support.turn_ms_median",
            "fixed_latency.single_support.turn_ms.median",
            true,
        ),
        (
            "fixed latency Direct Line to shopping: turn ms (ideal 200; no orchestrator call)",
            "direct_then_compose.fixed_latency.direct_line_shopping.turn_ms_median",
            "fixed_latency.single_shopping.turn_ms.median",
            true,
        ),
        (
            "fixed latency 100 concurrent mixed: wall ms",
            "direct_then_compose.fixed_latency.concurrent_100_mixed_wall_ms",
            "fixed_latency.concurrent_100_mixed_wall_ms",
            true,
        ),
        (
            "cold start, process spawn to serving: ms",
            "serve_cold_start.ready_ms_median",
            "cold_start.process_wall_ms.median",
            true,
        ),
        (
            "registry load + validation + build, in process: ms",
            "build_ms_median",
            "cold_start.in_process_build_ms.median",
            true,
        ),
        (
            "RSS idle: MiB",
            "serve_cold_start.rss_idle_mib_median",
            "cold_start.rss_after_build_mib.median",
            true,
        ),
        (
            "peak RSS (baton: serve, N streams; reference: in process, 100 turns): MiB",
            "serve_streams.peak_rss_vmhwm_mib",
            "zero_latency.peak_rss_mib_after_concurrency",
            true,
        ),
        (
            "baton serve: server CPU ms per turn through /v1/turns",
            "serve_faces.turns.server_cpu_ms_per_turn_median",
            "",
            true,
        ),
        (
            "baton serve: server CPU ms per turn through chat completions",
            "serve_faces.chat_completions.server_cpu_ms_per_turn_median",
            "",
            true,
        ),
        (
            "baton serve: server CPU ms per turn through AG-UI",
            "serve_faces.ag_ui.server_cpu_ms_per_turn_median",
            "",
            true,
        ),
        (
            "baton serve: first byte p50 ms through /v1/turns",
            "serve_faces.turns.ttfb_ms_p50",
            "",
            true,
        ),
        (
            "baton serve: first byte p50 ms through chat completions",
            "serve_faces.chat_completions.ttfb_ms_p50",
            "",
            true,
        ),
        (
            "baton serve: first byte p50 ms through AG-UI",
            "serve_faces.ag_ui.ttfb_ms_p50",
            "",
            true,
        ),
        (
            "baton serve RSS with all N streams open: MiB",
            "serve_streams.rss_with_all_streams_open_mib",
            "",
            true,
        ),
        (
            "baton serve RSS 1 s after the N streams ended: MiB",
            "serve_streams.rss_after_streams_mib",
            "",
            true,
        ),
        (
            "baton serve RSS with 200 clients not reading a 4 MB answer: MiB",
            "serve_stalled_readers.rss_with_clients_mib",
            "",
            true,
        ),
        (
            "baton serve RSS 1 s after those clients left and their turns committed: MiB",
            "serve_stalled_readers.rss_after_their_turns_committed_mib.1s",
            "",
            true,
        ),
        (
            "baton serve RSS 15 s after those turns committed (idle: the row below): MiB",
            "serve_stalled_readers.rss_after_their_turns_committed_mib.15s",
            "",
            true,
        ),
        (
            "baton serve RSS idle before those clients came: MiB",
            "serve_stalled_readers.rss_idle_mib",
            "",
            true,
        ),
        (
            "baton serve: another request while they sit there: ms",
            "serve_stalled_readers.another_request_meanwhile_ms",
            "",
            true,
        ),
        (
            "baton serve: reading an episode while 200 clients commit 4.6 MB answers: p50 ms",
            "serve_reads_during_commits.episode_read_ms.p50",
            "",
            true,
        ),
        (
            "baton serve: the same read: p99 ms",
            "serve_reads_during_commits.episode_read_ms.p99",
            "",
            true,
        ),
        (
            "baton serve: /healthz meanwhile: p99 ms",
            "serve_reads_during_commits.healthz_ms.p99",
            "",
            true,
        ),
        (
            "baton serve: memory per idle keep-alive HTTP connection: KiB",
            "serve_idle_connections.kib_per_connection",
            "",
            true,
        ),
        (
            "engine memory per open turn, in process: KiB",
            "held_turns_in_process.kib_per_open_turn",
            "",
            true,
        ),
        (
            "mediated (specialists' text not streamed): single CPU ms per turn",
            "mediated.single.cpu_ms_per_turn_over_runs.median",
            "",
            true,
        ),
        (
            "mediated (specialists' text not streamed): mixed CPU ms per turn",
            "mediated.mixed.cpu_ms_per_turn_over_runs.median",
            "",
            true,
        ),
    ];
    let mut t = String::new();
    let _ = writeln!(t, "| measure | baton | reference | ratio |");
    let _ = writeln!(t, "|---|---:|---:|---:|");
    for (label, bp, rp, lower) in rows {
        let Some(bv) = num(b, bp) else { continue };
        let rv = num(&r, rp);
        let ratio = match rv {
            Some(rv) if bv > 0.0 && rv > 0.0 => {
                if *lower {
                    format!("{:.1}x less", rv / bv)
                } else {
                    format!("{:.1}x more", bv / rv)
                }
            }
            _ => String::new(),
        };
        let rv = rv.map(|v| format!("{v:.4}")).unwrap_or_default();
        let _ = writeln!(t, "| {label} | {bv:.4} | {rv} | {ratio} |");
    }
    if let Some(s) = at(b, "serve_streams") {
        let _ = writeln!(
            t,
            "\nserve under {} concurrent streams: {}",
            s["streams"], s
        );
    }
    Ok(t)
}
