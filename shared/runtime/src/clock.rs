//! The system clock.

use std::time::{SystemTime, UNIX_EPOCH};

use baton_core::ports::clock::Clock;

/// Wall time from the operating system.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        // An injected jump (D-39): `return(<ms>)` moves the clock that far ahead, `return(-<ms>)` back.
        match baton_core::fault_arg!("clock.now").and_then(|skew| skew.parse::<i64>().ok()) {
            Some(skew) => now.saturating_add_signed(skew),
            None => now,
        }
    }
}
