//! Failed SDK calls and undecodable items as [`StoreError`]s, for each store of this crate
//! (the journal, long-term memory): a plain message for the caller, the detail (service,
//! code, request id, cause chain) for the log.

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_smithy_types::error::display::DisplayErrorContext;
use baton_core::ports::store::StoreError;

/// Error codes that mean "too much traffic right now" (DynamoDB, S3, S3 Vectors).
const BUSY_CODES: &[&str] = &[
    "ThrottlingException",
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
    "TransactionConflictException",
    "TransactionInProgressException",
    "SlowDown",
    "ServiceUnavailable",
    "TooManyRequestsException",
    "ServiceUnavailableException",
    "RequestTimeoutException",
];

/// What one store says of its failures.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Faults {
    /// The store's name in the log.
    pub(crate) store: &'static str,
    /// The message for "try again shortly" failures.
    pub(crate) busy: &'static str,
    /// The message for failures the caller cannot fix by waiting a moment.
    pub(crate) unreachable: &'static str,
    /// The message for stored data that does not decode.
    pub(crate) corrupt: &'static str,
}

impl Faults {
    /// Maps a failed SDK call made while `doing` something.
    pub(crate) fn sdk<E, R>(&self, doing: &'static str, err: &SdkError<E, R>) -> StoreError
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
        R: std::fmt::Debug + Send + Sync + 'static,
    {
        let code = err.as_service_error().and_then(ProvideErrorMetadata::code);
        let busy = code.is_some_and(|c| BUSY_CODES.contains(&c))
            || matches!(err, SdkError::TimeoutError(_));
        if busy {
            tracing::warn!(store = self.store, error = %DisplayErrorContext(err), doing, "request throttled or timed out");
            StoreError::Unavailable(self.busy.into())
        } else {
            tracing::error!(store = self.store, error = %DisplayErrorContext(err), doing, "request failed");
            StoreError::Unavailable(self.unreachable.into())
        }
    }

    /// A transaction cancelled for a reason other than a failed condition (a concurrent
    /// transaction on the same item, throttling, validation).
    pub(crate) fn cancelled(&self, doing: &'static str, codes: &[Option<&str>]) -> StoreError {
        let busy = codes.iter().flatten().any(|c| {
            matches!(
                *c,
                "TransactionConflict" | "ThrottlingError" | "ProvisionedThroughputExceeded"
            )
        });
        if busy {
            tracing::warn!(
                store = self.store,
                ?codes,
                doing,
                "transaction cancelled by contention"
            );
            StoreError::Unavailable(self.busy.into())
        } else {
            tracing::error!(store = self.store, ?codes, doing, "transaction cancelled");
            StoreError::Unavailable(self.unreachable.into())
        }
    }

    /// Stored data that does not decode (`what` names it for the log).
    pub(crate) fn undecodable(&self, what: &str, detail: &dyn std::fmt::Display) -> StoreError {
        tracing::error!(store = self.store, %detail, what, "stored data does not decode");
        StoreError::Corrupt(self.corrupt.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEST: Faults = Faults {
        store: "test",
        busy: "busy",
        unreachable: "unreachable",
        corrupt: "corrupt",
    };

    #[test]
    fn contention_is_busy_and_validation_is_not() {
        assert_eq!(
            TEST.cancelled("committing", &[None, Some("TransactionConflict")]),
            StoreError::Unavailable("busy".into())
        );
        assert_eq!(
            TEST.cancelled("committing", &[Some("ValidationError")]),
            StoreError::Unavailable("unreachable".into())
        );
    }
}
