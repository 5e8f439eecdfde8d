//! The committed baseline (`evals/baseline.json`) and the gate: what passed before must
//! still pass, no intent-switch pair may fall below its floor, and routing accuracy may
//! not drop.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{CaseResult, Metrics, Verdict};

/// The lowest accuracy an intent-switch pair may have (DESIGN §13).
pub const SWITCH_PAIR_FLOOR: f64 = 0.95;

/// One suite's record in the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteBaseline {
    /// Routing accuracy when the baseline was written.
    pub routing_accuracy: f64,
    /// Each case's outcome then: `passed`, `failed` or `errored`.
    pub cases: BTreeMap<String, String>,
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
        }
    }
}

/// Why a run does not pass the gate, each in plain words; empty when it passes. An
/// improvement (a case that failed and now passes, a higher accuracy) is never a reason;
/// a case new since the baseline is judged only by the switch floor.
pub fn gate(
    suite: &str,
    baseline: Option<&SuiteBaseline>,
    results: &[CaseResult],
    metrics: &Metrics,
) -> Vec<String> {
    let mut reasons = Vec::new();
    for (pair, f) in &metrics.switch_pairs {
        if f.accuracy < SWITCH_PAIR_FLOOR {
            reasons.push(format!(
                "{suite}: the switch {pair} routed {:.0}% of its cases, below the {:.0}% floor",
                f.accuracy * 100.0,
                SWITCH_PAIR_FLOOR * 100.0
            ));
        }
    }
    let Some(baseline) = baseline else {
        return reasons;
    };
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
