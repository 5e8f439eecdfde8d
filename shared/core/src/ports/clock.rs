//! The `Clock` port: wall time for journal timestamps, dates and rate windows.
//!
//! Durations inside a turn use the runtime's monotonic timer; only wall-clock facts go
//! through this port, so tests can pin them.

/// A source of wall-clock time.
pub trait Clock: Send + Sync {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> u64;
}

/// A clock that always says the same time (tests, golden transcripts).
#[derive(Debug, Clone, Copy)]
pub struct FixedClock(pub u64);

impl Clock for FixedClock {
    fn now_ms(&self) -> u64 {
        self.0
    }
}
