//! `baton-bench`: Baton's figures for the reference turn, optionally beside the reference
//! implementation's results (`--reference langgraph-….json`) as ratios.
//!
//! In process: CPU per turn, turns/s, latency and first-event percentiles, 100 concurrent
//! turns, fixed model latencies against the ideal, registry load + build time. Against the
//! real server (`--serve`, needs the `baton` binary): cold start and resident memory idle
//! and holding N concurrent streaming turns.
//!
//! `--memory` runs the long-conversation memory benchmark instead (see `memory`): prompt
//! sizes over a 300-turn conversation with and without compaction, compaction's tokens and
//! cost.
//!
//! `--pictures` measures what a phone photo costs a turn instead (see `pictures`): CPU and
//! memory in process with and without a 4 MB photo, the picture check alone, and `baton
//! serve` holding 100 photo turns at once against a stated memory bound.
//!
//! `--recall` measures long-term memory across conversations instead (see `recall`):
//! search over 10,000 memories of one principal in the embedded store, what memory adds to
//! the reference turn, and what extraction costs.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

// The allocator of `baton`'s server build, so that the in-process figures are its figures.
#[cfg(feature = "jemalloc")]
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

mod faces;
mod inproc;
mod local_model;
mod memory;
mod pictures;
mod planner;
mod recall;
mod report;
mod serve_load;
mod soak;
mod stats;
mod workload;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context as _;
use clap::Parser;

#[derive(Parser, Clone)]
#[command(about = "Baton's benchmark of the reference turn")]
struct Args {
    /// Tiny sizes, in process only: checks the benchmark runs (used by the test suite).
    #[arg(long)]
    smoke: bool,
    /// Sequential turns per measurement.
    #[arg(long, default_value_t = 2000)]
    turns: usize,
    /// Repetitions of each fixed-latency turn.
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// Also measure `baton serve` (cold start, memory under concurrent streams).
    #[arg(long)]
    serve: bool,
    /// Concurrent streaming turns held against `baton serve`.
    #[arg(long, default_value_t = 1000)]
    streams: usize,
    /// Measure only `baton serve`'s memory under `--streams` concurrent streaming turns,
    /// this many times, each on a fresh server.
    #[arg(long, value_name = "RUNS")]
    streams_only: Option<usize>,
    /// The `baton` binary (defaults to the one next to this benchmark).
    #[arg(long)]
    baton: Option<PathBuf>,
    /// Reference results (JSON written by the reference implementation) to compare with.
    #[arg(long)]
    reference: Option<PathBuf>,
    /// One thread runs everything (as one Lambda instance serving one turn at a time);
    /// the default is tokio's multi-thread scheduler with two workers, as `baton serve`.
    #[arg(long)]
    current_thread: bool,
    /// Write the JSON results here as well as to stdout.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Run the long-conversation memory benchmark instead: prompt sizes over one long
    /// episode without and with compaction, compaction's tokens and cost.
    #[arg(long)]
    memory: bool,
    /// Turns of the memory benchmark's conversation (`--smoke`: 30).
    #[arg(long, default_value_t = 300, requires = "memory")]
    memory_turns: usize,
    /// The registry of the memory and pictures benchmarks (default: shared/registry).
    #[arg(long)]
    registry: Option<PathBuf>,
    /// Measure what a phone photo costs a turn instead: in process with and without a
    /// 4 MB photo, the picture check alone, and `baton serve` holding
    /// `--picture-clients` photo turns at once.
    #[arg(long)]
    pictures: bool,
    /// Turns per batch of the pictures benchmark's in-process figures (`--smoke`: 2).
    #[arg(long, default_value_t = 20, requires = "pictures")]
    picture_turns: usize,
    /// Concurrent photo turns against `baton serve` (`--smoke`: 3).
    #[arg(long, default_value_t = 100, requires = "pictures")]
    picture_clients: usize,
    /// Measure time to first token and tokens/s through Baton's OpenAI-compatible provider
    /// against this server (its API root, e.g. http://127.0.0.1:8080/v1) read raw.
    #[arg(long, value_name = "URL")]
    local_model: Option<String>,
    /// The model id the `--local-model` server serves.
    #[arg(
        long,
        default_value = "SmolLM2-135M-Instruct",
        requires = "local_model"
    )]
    local_model_id: String,
    /// Measure planning instead: the engine's cost per planned node and per wave, a
    /// diamond against its critical path, and one request by routing and by the planner.
    #[arg(long)]
    planner: bool,
    /// Export the engine's spans and metrics over OTLP to this receiver (its root, e.g.
    /// http://127.0.0.1:4318) while measuring: what export costs a turn.
    #[arg(long, value_name = "URL")]
    otlp: Option<String>,
    /// Run the soak for this many minutes against `baton serve` (see `soak`).
    #[arg(long, value_name = "MINUTES")]
    soak_minutes: Option<f64>,
    /// Turns a second the soak starts.
    #[arg(long, default_value_t = 20.0, requires = "soak_minutes")]
    soak_rate: f64,
    /// Measure long-term memory across conversations instead: saving and searching
    /// `--recall-memories` memories of one principal in the embedded store, what memory
    /// adds to the reference turn's CPU, and extraction's cost.
    #[arg(long)]
    recall: bool,
    /// Memories of the recall benchmark's principal (`--smoke`: 300).
    #[arg(long, default_value_t = 10_000, requires = "recall")]
    recall_memories: usize,
    /// Rounds of the `--local-model` comparison.
    #[arg(long, default_value_t = 20, requires = "local_model")]
    rounds: usize,
}

fn main() -> anyhow::Result<()> {
    // The load generator's own reqwest clients need the process's crypto provider.
    baton_connectors::install_tls_provider();
    let args = Args::parse();
    let telemetry = match &args.otlp {
        Some(url) => Some(trace_export(url)?),
        None => None,
    };
    let rt = if args.current_thread {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?
    };
    let started = Instant::now();
    if let Some(url) = args.local_model.clone() {
        let (model, rounds) = (args.local_model_id.clone(), args.rounds);
        let results = on_task(&rt, "the local-model benchmark", async move {
            local_model::run(&url, &model, rounds).await
        })?;
        return finish(&args, &results, local_model::table(&results), started);
    }
    if args.planner {
        let (smoke, turns, reps) = (args.smoke, args.turns, args.reps);
        let results = on_task(&rt, "the planner benchmark", async move {
            planner::run(smoke, turns, reps).await
        })?;
        return finish(&args, &results, planner::table(&results), started);
    }
    if let Some(minutes) = args.soak_minutes {
        let baton = report::baton_of(args.baton.as_deref())?;
        let rate = args.soak_rate;
        let results = on_task(&rt, "the soak", async move {
            soak::run(&baton, minutes, rate).await
        })?;
        return finish(&args, &results, soak::table(&results), started);
    }
    if let Some(runs) = args.streams_only {
        let baton = report::baton_of(args.baton.as_deref())?;
        let n = args.streams;
        let results = on_task(&rt, "the streams benchmark", async move {
            serve_load::streams_runs(&baton, n, runs).await
        })?;
        return finish(
            &args,
            &results,
            serve_load::streams_table(&results),
            started,
        );
    }
    if args.pictures {
        let task_args = args.clone();
        let results = on_task(&rt, "the pictures benchmark", async move {
            pictures::run(&task_args).await
        })?;
        return finish(&args, &results, pictures::table(&results), started);
    }
    if args.recall {
        let task_args = args.clone();
        let results = on_task(&rt, "the recall benchmark", async move {
            recall::run(&task_args).await
        })?;
        return finish(&args, &results, recall::table(&results), started);
    }
    if args.memory {
        let task_args = args.clone();
        let results = on_task(&rt, "the memory benchmark", async move {
            memory::run(&task_args).await
        })?;
        return finish(&args, &results, memory::table(&results), started);
    }
    // Like a server's connection task, the client side runs as a task on the runtime.
    let task_args = args.clone();
    let results = on_task(&rt, "the benchmark", async move {
        report::run(&task_args).await
    })?;
    let table = report::table(&results, args.reference.as_deref())?;
    let finished = finish(&args, &results, table, started);
    if let Some(telemetry) = telemetry {
        // Outside the runtime: the exporter's client blocks. Its log says how many spans
        // the full queue dropped, if any.
        drop(rt);
        telemetry.shutdown()?;
    }
    finished
}

/// Turns trace and metric export on for the whole process, as `baton` does when the
/// OTEL_* variables name a receiver, with the exporter's own warnings (dropped spans) on
/// stderr.
fn trace_export(url: &str) -> anyhow::Result<baton_otel::Telemetry> {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let telemetry = baton_otel::Telemetry::to_endpoint("baton-bench", url)?;
    let warnings = tracing_subscriber::filter::Targets::new()
        .with_target("opentelemetry_sdk", tracing::Level::WARN)
        .with_target("opentelemetry_otlp", tracing::Level::WARN);
    tracing_subscriber::registry()
        .with(baton_otel::layer().map(|otel| otel.with_filter(baton_otel::spans_only())))
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_filter(warnings),
        )
        .try_init()?;
    eprintln!("trace and metric export: on, to {url}");
    Ok(telemetry)
}

/// Prints the JSON results (and writes them to `--out`), then the table on stderr.
/// Runs `task` as a task on `rt` (as a server runs its connections) and waits for it.
fn on_task<T: Send + 'static>(
    rt: &tokio::runtime::Runtime,
    what: &str,
    task: impl std::future::Future<Output = anyhow::Result<T>> + Send + 'static,
) -> anyhow::Result<T> {
    rt.block_on(rt.spawn(task))
        .with_context(|| format!("{what} stopped"))?
}

fn finish(
    args: &Args,
    results: &serde_json::Value,
    table: String,
    started: Instant,
) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(results)?;
    println!("{text}");
    if let Some(out) = &args.out {
        std::fs::write(out, &text).with_context(|| format!("writing {}", out.display()))?;
    }
    eprintln!("{table}");
    eprintln!("benchmark took {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}
