//! `baton eval --compare a,b`: the same suites through the engine once per model, reported
//! side by side (routing accuracy, mixed-intent recall, passes, latency, tokens, cost).

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::process::ExitCode;

use baton_evals::{SuiteRun, percent, run_suite};

use super::EvalArgs;
use crate::config::{Settings, model_choice};
use crate::setup::{self, Purpose};

/// Runs the comparison and prints one table per suite.
///
/// # Errors
/// A model setting that does not parse, a runtime that cannot be assembled (a model
/// server that is not configured), a malformed suite.
pub(super) async fn run(settings: &Settings, args: &EvalArgs) -> anyhow::Result<ExitCode> {
    let routing_only = args.mode == "routing";
    let mut columns: Vec<(String, Vec<SuiteRun>)> = Vec::new();
    for name in &args.compare {
        let mut settings = settings.clone();
        settings.model = model_choice(name)?;
        let assembled = setup::assemble_for(&settings, Purpose::Eval { routing_only }).await?;
        let specialists: BTreeSet<String> = assembled
            .runtime
            .entry()
            .orchestration
            .as_ref()
            .map(|o| o.sub_agents.iter().map(|s| s.to_string()).collect())
            .unwrap_or_default();
        let files = if args.suites.is_empty() {
            super::suite_files(&settings.registry)?
        } else {
            args.suites.clone()
        };
        let suites = super::load_suites(&files, &assembled.runtime.entry().id, &specialists)?;
        let mut runs = Vec::new();
        let mut end_to_end = None;
        for suite in &suites {
            eprintln!("running {} with {name} …", suite.name);
            let target = super::for_suite(&settings, &assembled, &mut end_to_end, suite).await?;
            runs.push(run_suite(&target.runtime, &target.store, suite, args.concurrency).await);
        }
        columns.push((name.clone(), runs));
    }
    print!("{}", table(&columns));
    Ok(ExitCode::SUCCESS)
}

/// How one row's cell is read off a run.
type Figure = fn(&SuiteRun) -> String;

/// One table per suite: a row per figure, a column per model.
fn table(columns: &[(String, Vec<SuiteRun>)]) -> String {
    let mut out = String::new();
    let Some((_, first)) = columns.first() else {
        return out;
    };
    for (i, run) in first.iter().enumerate() {
        let _ = writeln!(out, "Suite {} ({} cases)", run.suite, run.metrics.cases);
        let _ = write!(out, "{:<22}", "");
        for (name, _) in columns {
            let _ = write!(out, "{name:>16}");
        }
        out.push('\n');
        let rows: [(&str, Figure); 11] = [
            ("routing accuracy", |r| percent(r.metrics.routing.accuracy)),
            ("mixed-intent recall", |r| {
                r.metrics.mixed_recall.map_or("-".into(), percent)
            }),
            ("prior-context recall", |r| {
                r.metrics
                    .context
                    .prior_context_recall
                    .map_or("-".into(), percent)
            }),
            ("reference resolution", |r| {
                r.metrics
                    .context
                    .reference_resolution
                    .map_or("-".into(), percent)
            }),
            ("compaction recall", |r| {
                r.metrics
                    .context
                    .compaction_recall
                    .map_or("-".into(), percent)
            }),
            ("failures acknowledged", |r| {
                r.metrics
                    .context
                    .failure_acknowledged
                    .map_or("-".into(), percent)
            }),
            ("cases passed", |r| {
                format!("{}/{}", r.metrics.passed, r.metrics.cases)
            }),
            ("errored", |r| r.metrics.errored.to_string()),
            ("latency p50 / p95", |r| {
                format!(
                    "{}/{} ms",
                    r.metrics.latency_p50_ms, r.metrics.latency_p95_ms
                )
            }),
            ("tokens", |r| r.metrics.tokens.to_string()),
            ("wall time", |r| format!("{} ms", r.duration_ms)),
        ];
        for (label, figure) in rows {
            let _ = write!(out, "{label:<22}");
            for (_, runs) in columns {
                let cell = runs.get(i).map_or_else(|| "-".to_owned(), figure);
                let _ = write!(out, "{cell:>16}");
            }
            out.push('\n');
        }
        out.push('\n');
    }
    out
}
