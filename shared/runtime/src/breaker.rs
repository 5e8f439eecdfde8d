//! Per-tool circuit breakers (D-15): open after consecutive failures, half-open (one
//! trial call) after a cool-down, closed again on a success.

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

impl Breakers {
    /// Whether a call to `tool` may go ahead now. An open breaker past its cool-down lets
    /// exactly one trial call through.
    pub(crate) fn allow(&self, tool: &str, cooldown: Duration) -> bool {
        let Ok(mut states) = self.states.lock() else {
            return true;
        };
        let state = states
            .entry(tool.to_owned())
            .or_insert(State::Closed { failures: 0 });
        match *state {
            State::Closed { .. } => true,
            State::HalfOpen => false,
            State::Open { since } if since.elapsed() >= cooldown => {
                *state = State::HalfOpen;
                true
            }
            State::Open { .. } => false,
        }
    }

    /// Records a call's outcome.
    pub(crate) fn record(&self, tool: &str, ok: bool, threshold: u32) {
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

    #[tokio::test(start_paused = true)]
    async fn opens_after_consecutive_failures_and_half_opens_after_cooldown() {
        let b = Breakers::default();
        let cool = Duration::from_secs(30);
        for _ in 0..3 {
            assert!(b.allow("t", cool));
            b.record("t", false, 3);
        }
        assert!(!b.allow("t", cool), "open after 3 failures");
        tokio::time::advance(Duration::from_secs(31)).await;
        assert!(b.allow("t", cool), "one trial call after the cool-down");
        assert!(!b.allow("t", cool), "only one trial at a time");
        b.record("t", true, 3);
        assert!(b.allow("t", cool), "closed again after a success");
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_trial_reopens() {
        let b = Breakers::default();
        let cool = Duration::from_secs(30);
        b.record("t", false, 1);
        tokio::time::advance(Duration::from_secs(31)).await;
        assert!(b.allow("t", cool));
        b.record("t", false, 1);
        assert!(!b.allow("t", cool));
    }
}
