//! Counting the requests an SDK client sends, per service and operation: a turn's
//! DynamoDB and S3 requests are its cost.
//!
//! [`RequestCounter`] is an SDK interceptor. Attach a clone to each client's config
//! (`aws_sdk_dynamodb::config::Builder::interceptor`, likewise for S3); every clone shares
//! the same counts. It counts HTTP attempts, so a retried call counts once per attempt,
//! as the service bills it.
//!
//! ```no_run
//! # async fn example(sdk: &aws_config::SdkConfig) {
//! use baton_tests::requests::RequestCounter;
//!
//! let counter = RequestCounter::new();
//! let dynamodb = aws_sdk_dynamodb::Client::from_conf(
//!     aws_sdk_dynamodb::config::Builder::from(sdk)
//!         .interceptor(counter.clone())
//!         .build(),
//! );
//! let before = counter.snapshot();
//! // ... run a turn ...
//! let turn = counter.snapshot().since(&before);
//! println!("{} DynamoDB requests", turn.service_total("DynamoDB"));
//! # }
//! ```

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::interceptors::context::BeforeTransmitInterceptorContextRef;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;

/// Service name the SDK gives DynamoDB requests.
pub const DYNAMODB: &str = "DynamoDB";
/// Service name the SDK gives S3 requests.
pub const S3: &str = "S3";

/// Counts of requests by (service, operation), e.g. `("DynamoDB", "TransactWriteItems")`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestCounts(BTreeMap<(String, String), u64>);

impl RequestCounts {
    /// Requests of one operation of one service.
    pub fn get(&self, service: &str, operation: &str) -> u64 {
        self.0
            .get(&(service.to_owned(), operation.to_owned()))
            .copied()
            .unwrap_or(0)
    }

    /// Requests to one service, all operations.
    pub fn service_total(&self, service: &str) -> u64 {
        self.0
            .iter()
            .filter(|((s, _), _)| s == service)
            .map(|(_, n)| n)
            .sum()
    }

    /// Requests to every service.
    pub fn total(&self) -> u64 {
        self.0.values().sum()
    }

    /// What was counted after `earlier` (a snapshot of the same counter).
    pub fn since(&self, earlier: &RequestCounts) -> RequestCounts {
        RequestCounts(
            self.0
                .iter()
                .filter_map(|(key, n)| {
                    let delta = n.saturating_sub(earlier.0.get(key).copied().unwrap_or(0));
                    (delta > 0).then(|| (key.clone(), delta))
                })
                .collect(),
        )
    }

    /// Every (service, operation, count), sorted by service then operation.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str, u64)> + '_ {
        self.0
            .iter()
            .map(|((s, o), n)| (s.as_str(), o.as_str(), *n))
    }
}

impl std::fmt::Display for RequestCounts {
    /// `DynamoDB.GetItem=1 DynamoDB.TransactWriteItems=1`, or `none`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_empty() {
            return f.write_str("none");
        }
        for (i, (service, operation, n)) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{service}.{operation}={n}")?;
        }
        Ok(())
    }
}

/// An SDK interceptor counting requests per service and operation; clones share counts.
#[derive(Debug, Clone, Default)]
pub struct RequestCounter {
    counts: Arc<Mutex<BTreeMap<(String, String), u64>>>,
}

impl RequestCounter {
    /// A counter at zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// The counts so far.
    pub fn snapshot(&self) -> RequestCounts {
        RequestCounts(self.lock().clone())
    }

    /// Sets every count back to zero.
    pub fn reset(&self) {
        self.lock().clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<(String, String), u64>> {
        // The map is always consistent (one insert per update), so a poisoned lock is safe
        // to keep using.
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn record(&self, service: &str, operation: &str) {
        *self
            .lock()
            .entry((service.to_owned(), operation.to_owned()))
            .or_insert(0) += 1;
    }
}

impl Intercept for RequestCounter {
    fn name(&self) -> &'static str {
        "BatonRequestCounter"
    }

    fn read_before_transmit(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        match cfg.load::<Metadata>() {
            Some(metadata) => self.record(metadata.service(), metadata.name()),
            None => self.record("unknown", "unknown"),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_counts_and_since_subtracts() {
        let counter = RequestCounter::new();
        let clone = counter.clone();
        clone.record(DYNAMODB, "GetItem");
        let before = counter.snapshot();
        counter.record(DYNAMODB, "GetItem");
        counter.record(DYNAMODB, "TransactWriteItems");
        counter.record(S3, "PutObject");

        let now = clone.snapshot();
        assert_eq!(now.get(DYNAMODB, "GetItem"), 2);
        assert_eq!(now.service_total(DYNAMODB), 3);
        assert_eq!(now.total(), 4);
        let delta = now.since(&before);
        assert_eq!(delta.get(DYNAMODB, "GetItem"), 1);
        assert_eq!(delta.total(), 3);
        assert_eq!(
            delta.to_string(),
            "DynamoDB.GetItem=1 DynamoDB.TransactWriteItems=1 S3.PutObject=1"
        );
        counter.reset();
        assert_eq!(clone.snapshot().to_string(), "none");
    }
}
