//! When and after how long a failed attempt is repeated.

use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{HeaderMap, RETRY_AFTER};

/// No wait between attempts is longer than this, whatever the service asks.
pub(super) const MAX_WAIT: Duration = Duration::from_secs(10);

/// Statuses that say "try again shortly": throttled, or a gateway without its backend.
pub(super) fn retryable_status(status: StatusCode) -> bool {
    matches!(status.as_u16(), 429 | 502 | 503 | 504)
}

/// The `Retry-After` header in seconds (its HTTP-date form is ignored: the backoff
/// applies then).
pub(super) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let seconds: u64 = headers
        .get(RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(Duration::from_secs(seconds))
}

/// The wait after failed attempt number `attempt` (1-based): the exponential backoff
/// `base * 2^(attempt-1)` scaled by `jitter` (0..1) into its upper half, or the service's
/// `Retry-After` when that is longer; never more than [`MAX_WAIT`].
pub(super) fn wait_before_retry(
    attempt: u32,
    base: Duration,
    retry_after: Option<Duration>,
    jitter: f64,
) -> Duration {
    let exponent = attempt.saturating_sub(1).min(16);
    let backoff = base.saturating_mul(1 << exponent).min(MAX_WAIT);
    let jittered = backoff.mul_f64(0.5 + 0.5 * jitter.clamp(0.0, 1.0));
    retry_after
        .map_or(jittered, |ra| ra.max(jittered))
        .min(MAX_WAIT)
}

/// A number in 0..1 that differs per call: spreads the retries of many callers apart.
pub(super) fn jitter() -> f64 {
    // RandomState is seeded randomly per process and per instance: enough for jitter,
    // without a random-number crate.
    let bits = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_within_its_jitter_and_is_capped() {
        let base = Duration::from_millis(100);
        assert_eq!(wait_before_retry(1, base, None, 1.0), base);
        assert_eq!(wait_before_retry(1, base, None, 0.0), base / 2);
        assert_eq!(
            wait_before_retry(3, base, None, 1.0),
            Duration::from_millis(400)
        );
        assert_eq!(wait_before_retry(30, base, None, 1.0), MAX_WAIT);
        for _ in 0..100 {
            let j = jitter();
            assert!((0.0..1.0).contains(&j), "{j}");
        }
    }

    #[test]
    fn retry_after_is_honoured_up_to_the_cap() {
        let base = Duration::from_millis(100);
        assert_eq!(
            wait_before_retry(1, base, Some(Duration::from_secs(2)), 1.0),
            Duration::from_secs(2)
        );
        assert_eq!(
            wait_before_retry(1, base, Some(Duration::from_secs(0)), 1.0),
            base
        );
        assert_eq!(
            wait_before_retry(1, base, Some(Duration::from_secs(3600)), 1.0),
            MAX_WAIT
        );
        let mut h = HeaderMap::new();
        h.insert(RETRY_AFTER, "3".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(3)));
        h.insert(
            RETRY_AFTER,
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&h), None);
    }

    #[test]
    fn only_throttling_and_gateway_failures_are_retried() {
        for s in [429, 502, 503, 504] {
            assert!(retryable_status(StatusCode::from_u16(s).unwrap()), "{s}");
        }
        for s in [200, 400, 401, 404, 500, 501] {
            assert!(!retryable_status(StatusCode::from_u16(s).unwrap()), "{s}");
        }
    }
}
