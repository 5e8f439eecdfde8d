//! The committed baseline (`evals/baseline.json`) and the gate: what passed before must
//! still pass, no intent-switch pair may fall below its floor, and routing accuracy may
//! not drop.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{CaseResult, ContextFigures, Metrics, Thresholds, Verdict};

/// The lowest accuracy an intent-switch pair may have unless a suite sets its own.
pub const SWITCH_PAIR_FLOOR: f64 = 0.95;

/// One suite's record in the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteBaseline {
    /// Routing accuracy when the baseline was written.
    pub routing_accuracy: f64,
    /// Each case's outcome then: `passed`, `failed` or `errored`.
    pub cases: BTreeMap<String, String>,
    /// The context figures then (those the suite's cases set).
    #[serde(default, flatten)]
    pub context: ContextFigures,
}

/// The baseline: each suite's record, by suite name.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Baseline {
    /// By suite name.
    pub suites: BTreeMap<String, SuiteBaseline>,
}

fn outcome(v: &Verdict) -> &'static str {
    match v {
        Verdict::Passed => "passed",
        Verdict::Failed { .. } => "failed",
        Verdict::Errored { .. } => "errored",
    }
}

impl SuiteBaseline {
    /// The record of a run.
    pub fn of(results: &[CaseResult], metrics: &Metrics) -> SuiteBaseline {
        SuiteBaseline {
            routing_accuracy: metrics.routing.accuracy,
            cases: results
                .iter()
                .map(|r| (r.id.clone(), outcome(&r.verdict).to_owned()))
                .collect(),
            context: metrics.context,
        }
    }
}

/// Why a run does not pass the gate, each in plain words; empty when it passes. An
/// improvement (a case that failed and now passes, a higher accuracy) is never a reason;
/// a case new since the baseline is judged only by the switch floor.
pub fn gate(
    suite: &str,
    thresholds: &Thresholds,
    baseline: Option<&SuiteBaseline>,
    results: &[CaseResult],
    metrics: &Metrics,
) -> Vec<String> {
    let mut reasons = Vec::new();
    for (pair, f) in &metrics.switch_pairs {
        if f.accuracy < thresholds.switch_pair {
            reasons.push(format!(
                "{suite}: the switch {pair} routed {:.0}% of its cases, below the {:.0}% floor",
                f.accuracy * 100.0,
                thresholds.switch_pair * 100.0
            ));
        }
    }
    if let Some(floor) = thresholds.routing_accuracy
        && metrics.routing.accuracy < floor
    {
        reasons.push(format!(
            "{suite}: routing accuracy {:.1}% is below its {:.1}% floor",
            metrics.routing.accuracy * 100.0,
            floor * 100.0
        ));
    }
    for (id, floor) in &thresholds.specialists {
        let Some(f) = metrics.specialists.get(id) else {
            continue;
        };
        for (what, value, min) in [
            ("precision", f.precision, floor.precision),
            ("recall", f.recall, floor.recall),
        ] {
            if let Some(min) = min
                && value < min
            {
                reasons.push(format!(
                    "{suite}: {id}'s {what} {:.1}% is below its {:.1}% floor",
                    value * 100.0,
                    min * 100.0
                ));
            }
        }
    }
    let floors = ContextFigures {
        prior_context_recall: thresholds.prior_context_recall,
        reference_resolution: thresholds.reference_resolution,
        compaction_recall: thresholds.compaction_recall,
        failure_acknowledged: thresholds.failure_acknowledged,
        memory_recall: thresholds.memory_recall,
        memory_use: thresholds.memory_use,
    };
    for ((name, now), (_, floor)) in metrics.context.named().into_iter().zip(floors.named()) {
        if let (Some(now), Some(floor)) = (now, floor)
            && now < floor
        {
            reasons.push(format!(
                "{suite}: {name} {:.1}% is below its {:.1}% floor",
                now * 100.0,
                floor * 100.0
            ));
        }
    }
    let Some(baseline) = baseline else {
        return reasons;
    };
    for ((name, now), (_, then)) in metrics
        .context
        .named()
        .into_iter()
        .zip(baseline.context.named())
    {
        match (now, then) {
            (Some(now), Some(then)) if now + 1e-9 < then => reasons.push(format!(
                "{suite}: {name} fell from {:.1}% to {:.1}%",
                then * 100.0,
                now * 100.0
            )),
            // A figure the baseline has and the run lost (its cases were removed, or the
            // run's mode cannot judge them) is not a pass by default.
            (None, Some(_)) => reasons.push(format!(
                "{suite}: {name} was measured in the baseline and not in this run"
            )),
            _ => {}
        }
    }
    for r in results {
        let before = baseline.cases.get(&r.id).map(String::as_str);
        let now = outcome(&r.verdict);
        if before == Some("passed") && now != "passed" {
            reasons.push(format!(
                "{suite}: case {} passed in the baseline and now {now}",
                r.id
            ));
        }
    }
    // A small tolerance: the accuracy is a ratio of counts, rounded in the file.
    if metrics.routing.accuracy + 1e-9 < baseline.routing_accuracy {
        reasons.push(format!(
            "{suite}: routing accuracy fell from {:.1}% to {:.1}%",
            baseline.routing_accuracy * 100.0,
            metrics.routing.accuracy * 100.0
        ));
    }
    reasons
}
