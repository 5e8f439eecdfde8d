//! Repeated runs of a suite on a model that is not deterministic: pass@N (passed at least
//! once), pass^N (passed every time), and each case stable, flaky or failing.

use serde::Serialize;

use super::{CaseResult, Verdict};

/// How a case did over the runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stability {
    /// Passed every run.
    Stable,
    /// Passed some runs.
    Flaky,
    /// Passed none.
    Failing,
}

/// One case over the runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseStability {
    /// The case.
    pub id: String,
    /// Runs it passed.
    pub passes: usize,
    /// Runs it was observed in (errored runs left out).
    pub runs: usize,
    /// Its class.
    pub stability: Stability,
}

/// The suite over the runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Repeated {
    /// Runs made.
    pub runs: usize,
    /// Share of cases that passed at least once.
    pub pass_at_n: f64,
    /// Share of cases that passed every time.
    pub pass_all_n: f64,
    /// Each case, in suite order.
    pub cases: Vec<CaseStability>,
}

/// The stability of each case over `runs` (each a run's results, in suite order).
pub fn repeated(runs: &[Vec<CaseResult>]) -> Repeated {
    let Some(first) = runs.first() else {
        return Repeated {
            runs: 0,
            pass_at_n: 0.0,
            pass_all_n: 0.0,
            cases: Vec::new(),
        };
    };
    let cases: Vec<CaseStability> = first
        .iter()
        .enumerate()
        .map(|(i, case)| {
            let seen: Vec<&CaseResult> = runs
                .iter()
                .filter_map(|r| r.get(i))
                .filter(|r| !matches!(r.verdict, Verdict::Errored { .. }))
                .collect();
            let passes = seen.iter().filter(|r| r.verdict == Verdict::Passed).count();
            let stability = match passes {
                0 => Stability::Failing,
                p if p == seen.len() => Stability::Stable,
                _ => Stability::Flaky,
            };
            CaseStability {
                id: case.id.clone(),
                passes,
                runs: seen.len(),
                stability,
            }
        })
        .collect();
    let n = cases.len().max(1) as f64;
    Repeated {
        runs: runs.len(),
        pass_at_n: cases.iter().filter(|c| c.passes > 0).count() as f64 / n,
        pass_all_n: cases
            .iter()
            .filter(|c| c.stability == Stability::Stable)
            .count() as f64
            / n,
        cases,
    }
}
