//! `baton eval`: the registry's suites through the engine with the configured model, as
//! a terminal report or JSON. Exit status 0 when every case passed, 3 when some failed or
//! errored; with `--baseline`, 0 when the gate passes and 4 when it does not (1 stays for
//! problems the user must fix first, such as a malformed suite).

mod capture;
mod compare;

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, anyhow};
use baton_evals::{Baseline, Stability, Suite, SuiteBaseline, Verdict, gate, repeated};
use baton_evals::{SuiteRun, run_suite};

use crate::config::Settings;
use crate::setup::{self, Purpose};
use crate::{logging, render};

/// The exit status of a run with failing or errored cases.
const FAILED: u8 = 3;
/// The exit status of a run the baseline gate refuses.
const GATE_FAILED: u8 = 4;

/// Runs `baton eval`.
///
/// # Errors
/// No suite, a malformed suite (every problem with file, line and field), a runtime that
/// cannot be assembled.
pub(crate) async fn run(settings: &Settings, args: &EvalArgs) -> anyhow::Result<ExitCode> {
    logging::init(settings.log.as_deref(), "error", false)?;
    if let Some(EvalAction::Capture(capture)) = &args.action {
        return capture::run(settings, capture).await;
    }
    if !args.compare.is_empty() {
        return compare::run(settings, args).await;
    }
    let routing_only = args.mode == "routing";
    let assembled = setup::assemble_for(settings, Purpose::Eval { routing_only }).await?;
    let runtime = &assembled.runtime;
    let specialists: BTreeSet<String> = runtime
        .entry()
        .orchestration
        .as_ref()
        .map(|o| o.sub_agents.iter().map(|s| s.to_string()).collect())
        .unwrap_or_default();
    let files = if args.suites.is_empty() {
        suite_files(&settings.registry)?
    } else {
        args.suites.clone()
    };
    let suites = load_suites(&files, &runtime.entry().id, &specialists)?;
    let mut runs = Vec::new();
    let mut end_to_end = None;
    for suite in &suites {
        let target = for_suite(settings, &assembled, &mut end_to_end, suite).await?;
        let mut first = run_suite(&target.runtime, &target.store, suite, args.concurrency).await;
        if args.repeat > 1 {
            let mut all = vec![first.results.clone()];
            for _ in 1..args.repeat {
                let again =
                    run_suite(&target.runtime, &target.store, suite, args.concurrency).await;
                all.push(again.results);
            }
            first.repeated = Some(repeated(&all));
        }
        runs.push(first);
    }
    if let Some(path) = &args.junit {
        std::fs::write(path, baton_evals::junit::render(&suites, &runs))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &args.html {
        std::fs::write(path, baton_evals::html::render(&suites, &runs))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&runs)?);
    } else {
        for (suite, run) in suites.iter().zip(&runs) {
            print!("{}", report(suite, run));
        }
    }
    let baseline_file = args
        .baseline_file
        .clone()
        .unwrap_or_else(|| settings.registry.join("evals").join("baseline.json"));
    if args.update_baseline {
        // The suites of this run replace theirs; another orchestrator's stay as they were.
        let mut baseline: Baseline = std::fs::read_to_string(&baseline_file)
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default();
        for run in &runs {
            baseline.suites.insert(
                run.suite.clone(),
                SuiteBaseline::of(&run.results, &run.metrics),
            );
        }
        write_atomically(&baseline_file, &serde_json::to_string_pretty(&baseline)?)?;
        eprintln!("wrote the baseline {}", baseline_file.display());
        return Ok(ExitCode::SUCCESS);
    }
    if args.baseline {
        let text = std::fs::read_to_string(&baseline_file).with_context(|| {
            format!(
                "reading the baseline {} (write one with --update-baseline)",
                baseline_file.display()
            )
        })?;
        let baseline: Baseline = serde_json::from_str(&text)
            .with_context(|| format!("the baseline {} is not valid", baseline_file.display()))?;
        let reasons: Vec<String> = suites
            .iter()
            .zip(&runs)
            .flat_map(|(s, r)| {
                gate(
                    &r.suite,
                    &s.thresholds,
                    baseline.suites.get(&r.suite),
                    &r.results,
                    &r.metrics,
                )
            })
            .collect();
        if reasons.is_empty() {
            eprintln!("the baseline gate passes ({})", baseline_file.display());
            return Ok(ExitCode::SUCCESS);
        }
        eprintln!("the baseline gate fails ({}):", baseline_file.display());
        for r in &reasons {
            eprintln!("  {r}");
        }
        return Ok(ExitCode::from(GATE_FAILED));
    }
    let clean = runs
        .iter()
        .all(|r| r.metrics.failed == 0 && r.metrics.errored == 0);
    Ok(if clean {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(FAILED)
    })
}

/// The runtime `suite` runs on: `main` (built for the run's mode), or, for a suite that
/// needs the whole turn (`mode: end-to-end`) in a routing run, an end-to-end one built the
/// first time a suite asks for it.
pub(crate) async fn for_suite<'a>(
    settings: &Settings,
    main: &'a setup::Assembled,
    end_to_end: &'a mut Option<setup::Assembled>,
    suite: &Suite,
) -> anyhow::Result<&'a setup::Assembled> {
    if suite.mode != Some(baton_evals::EvalMode::EndToEnd) || !main.runtime.config().routing_only {
        return Ok(main);
    }
    if end_to_end.is_none() {
        let purpose = Purpose::Eval {
            routing_only: false,
        };
        *end_to_end = Some(setup::assemble_for(settings, purpose).await?);
    }
    end_to_end
        .as_ref()
        .ok_or_else(|| anyhow!("the end-to-end runtime was not built"))
}

/// Writes `text` to `path` through a temporary file renamed over it, so an interrupted
/// run never leaves half a baseline.
fn write_atomically(path: &Path, text: &str) -> anyhow::Result<()> {
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
}

/// Reads and checks suite files.
///
/// # Errors
/// An unreadable file, or every problem of the malformed ones.
pub(crate) fn load_suites(
    files: &[PathBuf],
    entry: &str,
    specialists: &BTreeSet<String>,
) -> anyhow::Result<Vec<Suite>> {
    baton_evals::read_suite_files(files, entry, specialists).map_err(|e| anyhow!(e))
}

/// The registry's `evals/*.yaml`, sorted.
pub(crate) fn suite_files(registry: &Path) -> anyhow::Result<Vec<PathBuf>> {
    baton_evals::suite_files(registry).map_err(|e| anyhow!(e))
}

use baton_evals::percent;
use clap::{Args, Subcommand};

/// `baton eval`.
#[derive(Debug, Args)]
#[command(subcommand_precedence_over_arg = true)]
pub(crate) struct EvalArgs {
    /// Instead of running suites: turn a stored turn into a case.
    #[command(subcommand)]
    pub(crate) action: Option<EvalAction>,
    /// Suite files [default: every `evals/*.yaml` of the registry]
    #[arg(value_name = "FILE")]
    pub(crate) suites: Vec<PathBuf>,
    /// `routing` (the orchestrator's decision only: cheap) or `end-to-end` (the
    /// specialists run, and answers are checked too)
    #[arg(long, value_name = "MODE", default_value = "routing", value_parser = ["routing", "end-to-end"])]
    pub(crate) mode: String,
    /// Cases run at once.
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub(crate) concurrency: usize,
    /// Run each suite N times (a model that is not deterministic): pass@N, pass^N, and
    /// each case stable, flaky or failing. The figures and the gate use the first run.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub(crate) repeat: u32,
    /// Print the results as JSON.
    #[arg(long)]
    pub(crate) json: bool,
    /// Also write the results as JUnit XML (one test suite per eval suite), for CI.
    #[arg(long, value_name = "FILE")]
    pub(crate) junit: Option<PathBuf>,
    /// Also write one self-contained HTML page: the figures, the confusion matrix as a heat
    /// map, and the failing cases with their routing records.
    #[arg(long, value_name = "FILE")]
    pub(crate) html: Option<PathBuf>,
    /// Gate the run on the committed baseline: a case that passed there and fails now, a
    /// lower routing accuracy, or an intent-switch pair below 95% fails with exit status 4.
    #[arg(long)]
    pub(crate) baseline: bool,
    /// Write this run as the new baseline.
    #[arg(long, conflicts_with = "baseline")]
    pub(crate) update_baseline: bool,
    /// The baseline file [default: the registry's `evals/baseline.json`]
    #[arg(long, value_name = "FILE")]
    pub(crate) baseline_file: Option<PathBuf>,
    /// Run the suites once per model and report them side by side, e.g.
    /// `--compare offline,llama-cpp` (each as `--model` takes it)
    #[arg(
        long,
        value_name = "MODELS",
        value_delimiter = ',',
        conflicts_with_all = ["baseline", "update_baseline", "json", "junit", "html"]
    )]
    pub(crate) compare: Vec<String>,
}

/// What `baton eval` can do besides running suites.
#[derive(Debug, Subcommand)]
pub(crate) enum EvalAction {
    /// Print a case that expects what a stored turn did (its conversation before it, its
    /// text, the route its routing record shows), to add to a suite.
    Capture(CaptureArgs),
}

/// `baton eval capture`.
#[derive(Debug, Args)]
pub(crate) struct CaptureArgs {
    /// The episode (the principal's).
    #[arg(value_name = "EPISODE")]
    pub(crate) episode: String,
    /// The turn's number in the episode [default: the last]
    #[arg(value_name = "TURN")]
    pub(crate) turn: Option<u64>,
    /// Earlier turns kept as the case's conversation.
    #[arg(long, value_name = "N", default_value_t = 6)]
    pub(crate) history: usize,
}

/// The terminal report of one suite's run.
fn report(suite: &Suite, run: &SuiteRun) -> String {
    let m = &run.metrics;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Suite {} ({}), {} mode: {} cases, {} passed, {} failed, {} errored in {} ms",
        run.suite,
        suite.file,
        match run.mode {
            baton_evals::EvalMode::Routing => "routing",
            baton_evals::EvalMode::EndToEnd => "end-to-end",
        },
        m.cases,
        m.passed,
        m.failed,
        m.errored,
        run.duration_ms
    );
    if let Some(rate) = m.plan_rate {
        let _ = writeln!(out, "Plans as expected {}", percent(rate));
    }
    // A planner's suite routes to no specialist: no routing figure to show.
    if m.routing.cases > 0 || m.plan_rate.is_none() {
        let _ = writeln!(
            out,
            "Routing accuracy {} ({}/{})",
            percent(m.routing.accuracy),
            m.routing.routed,
            m.routing.cases
        );
    }
    for (tag, f) in &m.by_tag {
        let _ = writeln!(
            out,
            "  {tag:<12} {:>6}  ({}/{})",
            percent(f.accuracy),
            f.routed,
            f.cases
        );
    }
    if let Some(r) = m.mixed_recall {
        let _ = writeln!(out, "Mixed-intent recall {}", percent(r));
    }
    if let Some(r) = m.args_rate {
        let _ = writeln!(out, "Arguments matched {}", percent(r));
    }
    if let Some(r) = m.answer_rate {
        let _ = writeln!(out, "Answers passed {}", percent(r));
    }
    for (name, r) in m.context.named() {
        if let Some(r) = r {
            let mut name = name.to_owned();
            name[..1].make_ascii_uppercase();
            let _ = writeln!(out, "{name} {}", percent(r));
        }
    }
    let _ = writeln!(
        out,
        "{:<12} {:>9} {:>7} {:>6}",
        "specialist", "precision", "recall", "F1"
    );
    for (id, f) in &m.specialists {
        let _ = writeln!(
            out,
            "{id:<12} {:>9} {:>7} {:>6}",
            percent(f.precision),
            percent(f.recall),
            format!("{:.2}", f.f1)
        );
    }
    let low: Vec<String> = m
        .switch_pairs
        .iter()
        .filter(|(_, f)| f.accuracy < 1.0)
        .map(|(pair, f)| format!("{pair} {}", percent(f.accuracy)))
        .collect();
    let _ = writeln!(
        out,
        "Intent switches: {} pairs{}",
        m.switch_pairs.len(),
        if low.is_empty() {
            ", all routed".to_owned()
        } else {
            format!("; below 100%: {}", low.join(", "))
        }
    );
    let _ = writeln!(out, "Confusion (rows expected, columns consulted):");
    let width = m
        .confusion
        .labels
        .iter()
        .map(String::len)
        .max()
        .unwrap_or(8)
        .max(4);
    let _ = write!(out, "  {:width$}", "");
    for l in &m.confusion.labels {
        let _ = write!(out, " {l:>width$}");
    }
    out.push('\n');
    for (l, row) in m.confusion.labels.iter().zip(&m.confusion.cells) {
        let _ = write!(out, "  {l:width$}");
        for c in row {
            let _ = write!(out, " {c:>width$}");
        }
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "Failsafe re-asks {}, dropped calls {}, obligations forced {}; latency p50 {} ms, p95 {} ms; {} tokens, {}",
        m.failsafe_reasks,
        m.dropped_calls,
        m.obligations_forced,
        m.latency_p50_ms,
        m.latency_p95_ms,
        m.tokens,
        render::money(m.cost_usd)
    );
    if let Some(rep) = &run.repeated {
        let ids = |s: Stability| {
            rep.cases
                .iter()
                .filter(|c| c.stability == s)
                .map(|c| format!("{} ({}/{})", c.id, c.passes, c.runs))
                .collect::<Vec<_>>()
        };
        let _ = writeln!(
            out,
            "Over {} runs: pass@{n} {}, pass^{n} {}",
            rep.runs,
            percent(rep.pass_at_n),
            percent(rep.pass_all_n),
            n = rep.runs
        );
        for (label, s) in [("flaky", Stability::Flaky), ("failing", Stability::Failing)] {
            let list = ids(s);
            if !list.is_empty() {
                let _ = writeln!(out, "  {label}: {}", list.join(", "));
            }
        }
    }
    for r in &run.results {
        match &r.verdict {
            Verdict::Passed => {}
            Verdict::Failed { reasons } => {
                let _ = writeln!(out, "FAILED {}: {}", r.id, reasons.join("; "));
            }
            Verdict::Errored { error } => {
                let _ = writeln!(out, "ERRORED {}: {error}", r.id);
            }
        }
    }
    out.push('\n');
    out
}
