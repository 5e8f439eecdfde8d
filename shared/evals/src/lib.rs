//! Baton's evals (docs/design.md §13): routing cases as data, run through the real engine,
//! each judged against what the run observed, and the figures and reports of a suite's run.
//!
//! A suite is one YAML file under the registry's `evals/` (format in `docs/evals.md`): an
//! optional conversation so far, the user's turn, and expectations on the route, the
//! `ask_<id>` arguments, the answer and the trust layers, with tags to slice the report by.
//!
//! - Reading: [`suite_files`] lists a registry's suites, [`read_suites`] reads and checks
//!   them ([`load_suite`] for one text).
//! - Running: [`run_suite`] drives each case through a [`baton_runtime::Runtime`] and hands
//!   its [`Observation`] to [`judge`]; that and everything after it (metrics, coverage,
//!   baselines, repeats) is pure.
//! - Reporting: [`html`] and [`junit`] render runs.
//!
//! `baton eval` and the eval-runner function are thin callers of this crate.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

mod baseline;
mod capture;
mod coverage;
mod files;
pub mod html;
mod judge;
pub mod junit;
mod load;
mod metrics;
mod outage;
mod repeat;
mod runner;
mod suite;

#[cfg(test)]
mod tests;

pub use baseline::{Baseline, SWITCH_PAIR_FLOOR, SuiteBaseline, gate};
pub use capture::capture;
pub use coverage::{MIN_SINGLE_CASES, coverage};
pub use files::{read_suite_files, read_suites, suite_files};
pub use judge::judge;
pub use load::{EvalLoadError, load_suite, load_suite_for};
pub use metrics::{
    Confusion, ContextFigures, Metrics, NOBODY, SpecialistFigures, TagFigures, metrics,
};
pub use outage::with_outages;
pub use repeat::{CaseStability, Repeated, Stability, repeated};
pub use runner::*;
pub use suite::*;
