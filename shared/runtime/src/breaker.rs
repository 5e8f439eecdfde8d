//! Per-tool circuit breakers (D-15): open after consecutive failures, half-open (one
//! trial call) after a cool-down, closed again on a success.
//!
//! A call goes ahead only with a [`Permit`], and a permit that is dropped without an
//! outcome (the call's future was cancelled by a sub-agent's timeout or the turn's
//! deadline, or an early return) counts as a failure: a half-open breaker's trial can
//! never leave it stuck refusing every call.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::time::{Duration, Instant};

#[derive(Debug, Clone, Copy)]
enum State {
    Closed { failures: u32 },
    Open { since: Instant },
    HalfOpen,
}

/// Breakers for every tool, shared by all turns of a runtime.
#[derive(Debug, Default)]
pub(crate) struct Breakers {
    states: Mutex<HashMap<String, State>>,
}

/// Leave for one call to a tool; its outcome is recorded exactly once, as a failure
/// unless [`Permit::succeeded`] says otherwise.
#[must_use = "a permit dropped at once records a failure"]
pub(crate) struct Permit<'a> {
    breakers: &'a Breakers,
    tool: String,
    threshold: u32,
    recorded: bool,
}

impl Permit<'_> {
    /// Records the call's outcome.
    pub(crate) fn record(mut self, ok: bool) {
        self.recorded = true;
        self.breakers.record(&self.tool, ok, self.threshold);
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        if !self.recorded {
            self.breakers.record(&self.tool, false, self.threshold);
        }
    }
}

impl Breakers {
    /// Leave for a call to `tool` now, or `None` while its breaker is open. An open
    /// breaker past its cool-down lets exactly one trial call through; `threshold`
    /// consecutive failures open it.
    pub(crate) fn allow(
        &self,
        tool: &str,
        cooldown: Duration,
        threshold: u32,
    ) -> Option<Permit<'_>> {
        let permit = |recorded| Permit {
            breakers: self,
            tool: tool.to_owned(),
            threshold,
            recorded,
        };
        let Ok(mut states) = self.states.lock() else {
            // A poisoned lock only means another call panicked mid-update: let calls
            // through rather than refuse every tool, and record nothing.
            return Some(permit(true));
        };
        let state = states
            .entry(tool.to_owned())
            .or_insert(State::Closed { failures: 0 });
        let allowed = match *state {
            State::Closed { .. } => true,
            State::HalfOpen => false,
            State::Open { since } if since.elapsed() >= cooldown => {
                *state = State::HalfOpen;
                true
            }
            State::Open { .. } => false,
        };
        drop(states);
        allowed.then(|| permit(false))
    }

    fn record(&self, tool: &str, ok: bool, threshold: u32) {
        let Ok(mut states) = self.states.lock() else {
            return;
        };
        let state = states
            .entry(tool.to_owned())
            .or_insert(State::Closed { failures: 0 });
        *state = match (*state, ok) {
            (_, true) => State::Closed { failures: 0 },
            (State::HalfOpen, false) => State::Open {
                since: Instant::now(),
            },
            (State::Closed { failures }, false) if failures + 1 >= threshold => State::Open {
                since: Instant::now(),
            },
            (State::Closed { failures }, false) => State::Closed {
                failures: failures + 1,
            },
            (open @ State::Open { .. }, false) => open,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COOL: Duration = Duration::from_secs(30);

    #[tokio::test(start_paused = true)]
    async fn opens_after_consecutive_failures_and_half_opens_after_cooldown() {
        let b = Breakers::default();
        for _ in 0..3 {
            b.allow("t", COOL, 3).unwrap().record(false);
        }
        assert!(b.allow("t", COOL, 3).is_none(), "open after 3 failures");
        tokio::time::advance(Duration::from_secs(31)).await;
        let trial = b
            .allow("t", COOL, 3)
            .expect("one trial call after the cool-down");
        assert!(b.allow("t", COOL, 3).is_none(), "only one trial at a time");
        trial.record(true);
        assert!(
            b.allow("t", COOL, 3).is_some(),
            "closed again after a success"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_trial_reopens() {
        let b = Breakers::default();
        b.allow("t", COOL, 1).unwrap().record(false);
        tokio::time::advance(Duration::from_secs(31)).await;
        b.allow("t", COOL, 1).unwrap().record(false);
        assert!(b.allow("t", COOL, 1).is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn a_trial_that_never_reports_counts_as_a_failure_and_is_tried_again_later() {
        let b = Breakers::default();
        b.allow("t", COOL, 1).unwrap().record(false);
        tokio::time::advance(Duration::from_secs(31)).await;
        // The trial's call is cancelled: its permit is dropped without an outcome.
        let trial = b.allow("t", COOL, 1).unwrap();
        drop(trial);
        assert!(
            b.allow("t", COOL, 1).is_none(),
            "open again, not half-open forever"
        );
        tokio::time::advance(Duration::from_secs(31)).await;
        assert!(
            b.allow("t", COOL, 1).is_some(),
            "tried again after the cool-down"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_refusal_is_not_a_failure() {
        let b = Breakers::default();
        b.allow("t", COOL, 2).unwrap().record(false);
        b.allow("t", COOL, 2).unwrap().record(true);
        b.allow("t", COOL, 2).unwrap().record(false);
        assert!(
            b.allow("t", COOL, 2).is_some(),
            "one failure since the success"
        );
    }
}
