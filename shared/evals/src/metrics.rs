//! The figures of a run: accuracy overall and by tag, per specialist, the confusion
//! matrix, switch pairs, and what it cost.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::{Case, CaseResult, Verdict};

/// The label of "nobody" in the confusion matrix (the Fastpath, or a missed call).
pub const NOBODY: &str = "(nobody)";

/// One tag's figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TagFigures {
    /// Cases with a route expectation and an observation.
    pub cases: usize,
    /// Of those, routed as expected.
    pub routed: usize,
    /// `routed / cases`.
    pub accuracy: f64,
}

/// One specialist's figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SpecialistFigures {
    /// Consulted and expected.
    pub true_positives: usize,
    /// Consulted, not expected.
    pub false_positives: usize,
    /// Expected, not consulted.
    pub false_negatives: usize,
    /// `tp / (tp + fp)` (1 when never consulted).
    pub precision: f64,
    /// `tp / (tp + fn)` (1 when never expected).
    pub recall: f64,
    /// Their harmonic mean.
    pub f1: f64,
}

/// Expected (rows) against consulted (columns), counted per expected specialist.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Confusion {
    /// Row and column labels: the specialists, then [`NOBODY`].
    pub labels: Vec<String>,
    /// `cells[expected][consulted]`.
    pub cells: Vec<Vec<usize>>,
}

/// A run's figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Metrics {
    /// Cases run.
    pub cases: usize,
    /// Passed.
    pub passed: usize,
    /// Failed.
    pub failed: usize,
    /// Errored (not observed).
    pub errored: usize,
    /// Routing accuracy over the cases with a route expectation.
    pub routing: TagFigures,
    /// The same by tag.
    pub by_tag: BTreeMap<String, TagFigures>,
    /// Per specialist.
    pub specialists: BTreeMap<String, SpecialistFigures>,
    /// The confusion matrix.
    pub confusion: Confusion,
    /// Of the specialists mixed-intent cases expect, the share consulted.
    pub mixed_recall: Option<f64>,
    /// Intent-switch cases by `from→to` pair (the previous turn's first specialist to the
    /// expected one): routed / cases.
    pub switch_pairs: BTreeMap<String, TagFigures>,
    /// Argument expectations that held.
    pub args_rate: Option<f64>,
    /// Answer expectations that held.
    pub answer_rate: Option<f64>,
    /// Plan expectations that held (a planner's suite).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_rate: Option<f64>,
    /// The context figures: what a switch carries over, what compaction keeps, what a
    /// partial failure says.
    #[serde(flatten)]
    pub context: ContextFigures,
    /// Failsafe re-asks, dropped calls and forced obligations, summed.
    pub failsafe_reasks: u64,
    /// Calls dropped.
    pub dropped_calls: u64,
    /// Obligations forced.
    pub obligations_forced: u64,
    /// Latency, ms: median and 95th percentile.
    pub latency_p50_ms: u64,
    /// 95th percentile.
    pub latency_p95_ms: u64,
    /// Tokens, all cases.
    pub tokens: u64,
    /// Cost, USD, all cases.
    pub cost_usd: f64,
}

/// The figures of the context expectations (seed-level observability metrics: prior-context
/// recall, cross-specialist reference resolution, compaction quality, partial failures
/// acknowledged); each `None` when no case of the run sets it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ContextFigures {
    /// Of the facts cases expect a specialist to be told, the share it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prior_context_recall: Option<f64>,
    /// Of the cases tagged `reference` (the user refers to something another specialist
    /// said earlier), the share routed as expected with every referenced fact told.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_resolution: Option<f64>,
    /// Of the facts compacted summaries must keep, the share kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction_recall: Option<f64>,
    /// Of the failed specialists whose failure answers must acknowledge, the share
    /// acknowledged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_acknowledged: Option<f64>,
    /// Memory recall@5 (D-43): of the facts said in earlier conversations that cases
    /// expect remembered, the share among the top five memories found for the turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_recall: Option<f64>,
    /// Of those facts, the share the answers used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_use: Option<f64>,
}

impl ContextFigures {
    /// Each figure with its name, as reports and the gate print them.
    pub fn named(&self) -> [(&'static str, Option<f64>); 6] {
        [
            ("prior-context recall", self.prior_context_recall),
            ("reference resolution", self.reference_resolution),
            ("compaction recall", self.compaction_recall),
            ("failures acknowledged", self.failure_acknowledged),
            ("memory recall@5", self.memory_recall),
            ("memory used in answers", self.memory_use),
        ]
    }
}

/// The context figures of `results` (of `cases`, in the same order). An errored case's
/// facts count as not carried: a model server that fails scores no better.
fn context_figures(cases: &[Case], results: &[CaseResult]) -> ContextFigures {
    let share = |found: u32, expected: u32| {
        (expected > 0).then(|| ratio(found as usize, expected as usize))
    };
    let (mut told, mut told_n, mut kept, mut kept_n, mut ack, mut ack_n) = (0, 0, 0, 0, 0, 0);
    let (mut recalled, mut recalled_n, mut used, mut used_n) = (0, 0, 0, 0);
    let (mut resolved, mut references) = (0usize, 0usize);
    for (case, result) in cases.iter().zip(results) {
        let c = &result.context;
        let errored = matches!(result.verdict, Verdict::Errored { .. });
        let facts = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        told_n += if errored {
            facts(case.expect.told.values().map(Vec::len).sum())
        } else {
            c.told_expected
        };
        kept_n += if errored {
            facts(case.expect.kept.len())
        } else {
            c.kept_expected
        };
        recalled_n += if errored {
            facts(case.expect.recalled.len())
        } else {
            c.recalled_expected
        };
        recalled += c.recalled_found;
        used += c.used_found;
        used_n += c.used_expected;
        told += c.told_found;
        kept += c.kept_found;
        ack += c.acknowledged_found;
        ack_n += if errored {
            facts(case.expect.acknowledged.len())
        } else {
            c.acknowledged_expected
        };
        if case.tags.iter().any(|t| t == "reference") {
            references += 1;
            resolved += usize::from(
                !errored && result.route_ok != Some(false) && c.told_found == c.told_expected,
            );
        }
    }
    ContextFigures {
        prior_context_recall: share(told, told_n),
        reference_resolution: (references > 0).then(|| ratio(resolved, references)),
        compaction_recall: share(kept, kept_n),
        failure_acknowledged: share(ack, ack_n),
        memory_recall: share(recalled, recalled_n),
        memory_use: share(used, used_n),
    }
}

fn ratio(n: usize, d: usize) -> f64 {
    if d == 0 { 1.0 } else { n as f64 / d as f64 }
}

/// The figures of `results` (of `cases`, in the same order) over `specialists`.
pub fn metrics(cases: &[Case], results: &[CaseResult], specialists: &BTreeSet<String>) -> Metrics {
    let mut m = Metrics {
        cases: results.len(),
        ..Metrics::default()
    };
    let mut labels: Vec<String> = specialists.iter().cloned().collect();
    labels.push(NOBODY.to_owned());
    let index = |label: &str| {
        labels
            .iter()
            .position(|l| l == label)
            .unwrap_or(labels.len() - 1)
    };
    let mut cells = vec![vec![0usize; labels.len()]; labels.len()];
    let mut per: BTreeMap<String, SpecialistFigures> = specialists
        .iter()
        .map(|s| (s.clone(), SpecialistFigures::default()))
        .collect();
    let (mut mixed_expected, mut mixed_found) = (0usize, 0usize);
    let (mut args_n, mut args_ok, mut answer_n, mut answer_ok) = (0, 0, 0, 0);
    let mut latencies = Vec::new();
    for (case, result) in cases.iter().zip(results) {
        match &result.verdict {
            Verdict::Passed => m.passed += 1,
            Verdict::Failed { .. } => m.failed += 1,
            Verdict::Errored { .. } => {
                m.errored += 1;
                // A case that expects a route and got no answer was not routed: it counts
                // against the accuracy (a model server that fails scores no better).
                if case.expect.route.is_some() {
                    m.routing.cases += 1;
                    for tag in &case.tags {
                        m.by_tag.entry(tag.clone()).or_default().cases += 1;
                    }
                }
                continue;
            }
        }
        let Some(obs) = &result.observed else {
            continue;
        };
        latencies.push(obs.latency_ms);
        m.tokens += obs.tokens;
        m.cost_usd += obs.cost_usd;
        m.failsafe_reasks += u64::from(obs.failsafe_reasks);
        m.dropped_calls += u64::from(obs.dropped_calls);
        m.obligations_forced += u64::from(obs.obligations_forced);
        if let Some(ok) = result.args_ok {
            args_n += 1;
            args_ok += usize::from(ok);
        }
        if let Some(ok) = result.answer_ok {
            answer_n += 1;
            answer_ok += usize::from(ok);
        }
        let Some(routed) = result.route_ok else {
            continue;
        };
        let add = |f: &mut TagFigures| {
            f.cases += 1;
            f.routed += usize::from(routed);
        };
        add(&mut m.routing);
        for tag in &case.tags {
            add(m.by_tag.entry(tag.clone()).or_default());
        }
        if case.tags.iter().any(|t| t == "switch")
            && let (Some(from), Some(to)) = (
                case.history.last().and_then(|t| t.consulted.first()),
                result.expected.first(),
            )
        {
            add(m.switch_pairs.entry(format!("{from}→{to}")).or_default());
        }
        let expected = &result.expected;
        let consulted: Vec<&String> = obs.consulted.iter().collect();
        for s in specialists {
            let (e, c) = (expected.contains(s), consulted.contains(&s));
            let f = per.entry(s.clone()).or_default();
            match (e, c) {
                (true, true) => f.true_positives += 1,
                (false, true) => f.false_positives += 1,
                (true, false) => f.false_negatives += 1,
                (false, false) => {}
            }
        }
        if expected.len() > 1 {
            mixed_expected += expected.len();
            mixed_found += expected.iter().filter(|e| consulted.contains(e)).count();
        }
        let extra: Vec<&String> = consulted
            .iter()
            .copied()
            .filter(|c| !expected.contains(c))
            .collect();
        for e in expected.iter() {
            if consulted.contains(&e) {
                cells[index(e)][index(e)] += 1;
            } else if extra.is_empty() {
                cells[index(e)][index(NOBODY)] += 1;
            } else {
                for c in &extra {
                    cells[index(e)][index(c)] += 1;
                }
            }
        }
        if expected.is_empty() {
            if consulted.is_empty() {
                cells[index(NOBODY)][index(NOBODY)] += 1;
            }
            for c in &consulted {
                cells[index(NOBODY)][index(c)] += 1;
            }
        }
    }
    let finish = |f: &mut TagFigures| f.accuracy = ratio(f.routed, f.cases);
    finish(&mut m.routing);
    m.by_tag.values_mut().for_each(finish);
    m.switch_pairs.values_mut().for_each(finish);
    for f in per.values_mut() {
        f.precision = ratio(f.true_positives, f.true_positives + f.false_positives);
        f.recall = ratio(f.true_positives, f.true_positives + f.false_negatives);
        f.f1 = if f.precision + f.recall == 0.0 {
            0.0
        } else {
            2.0 * f.precision * f.recall / (f.precision + f.recall)
        };
    }
    m.specialists = per;
    m.confusion = Confusion { labels, cells };
    m.mixed_recall = (mixed_expected > 0).then(|| ratio(mixed_found, mixed_expected));
    m.args_rate = (args_n > 0).then(|| ratio(args_ok, args_n));
    m.answer_rate = (answer_n > 0).then(|| ratio(answer_ok, answer_n));
    let plans: Vec<bool> = results.iter().filter_map(|r| r.plan_ok).collect();
    m.plan_rate =
        (!plans.is_empty()).then(|| ratio(plans.iter().filter(|ok| **ok).count(), plans.len()));
    latencies.sort_unstable();
    let pct = |p: f64| -> u64 {
        if latencies.is_empty() {
            return 0;
        }
        let i = ((latencies.len() as f64 - 1.0) * p).round() as usize;
        latencies[i.min(latencies.len() - 1)]
    };
    m.context = context_figures(cases, results);
    m.latency_p50_ms = pct(0.5);
    m.latency_p95_ms = pct(0.95);
    m
}
