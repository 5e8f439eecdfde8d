//! SDK failures (DynamoDB and S3 Vectors) and undecodable items as [`StoreError`]s: plain
//! messages for the caller, the detail for the log, as the journal does.

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_smithy_types::error::display::DisplayErrorContext;
use baton_core::ports::store::StoreError;

/// Error codes that mean "too much traffic right now".
const BUSY_CODES: &[&str] = &[
    // DynamoDB
    "ThrottlingException",
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
    "TransactionConflictException",
    "TransactionInProgressException",
    // S3 Vectors
    "TooManyRequestsException",
    "ServiceUnavailableException",
    "RequestTimeoutException",
];

/// The message for "try again shortly" failures.
pub(crate) const BUSY: &str = "long-term memory is busy; try again shortly";
/// The message for failures the caller cannot fix by waiting a moment.
pub(crate) const UNREACHABLE: &str = "long-term memory cannot be reached right now";

/// Maps a failed SDK call made while `doing` something.
pub(crate) fn sdk<E, R>(doing: &'static str, err: &SdkError<E, R>) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    let code = err.as_service_error().and_then(ProvideErrorMetadata::code);
    let busy =
        code.is_some_and(|c| BUSY_CODES.contains(&c)) || matches!(err, SdkError::TimeoutError(_));
    if busy {
        tracing::warn!(error = %DisplayErrorContext(err), doing, "memory: request throttled or timed out");
        StoreError::Unavailable(BUSY.into())
    } else {
        tracing::error!(error = %DisplayErrorContext(err), doing, "memory: request failed");
        StoreError::Unavailable(UNREACHABLE.into())
    }
}

/// A transaction cancelled for a reason other than a failed condition.
pub(crate) fn cancelled(doing: &'static str, codes: &[Option<&str>]) -> StoreError {
    let busy = codes.iter().flatten().any(|c| {
        matches!(
            *c,
            "TransactionConflict" | "ThrottlingError" | "ProvisionedThroughputExceeded"
        )
    });
    if busy {
        tracing::warn!(?codes, doing, "memory: transaction cancelled by contention");
        StoreError::Unavailable(BUSY.into())
    } else {
        tracing::error!(?codes, doing, "memory: transaction cancelled");
        StoreError::Unavailable(UNREACHABLE.into())
    }
}

/// What stays undone after every attempt (unprocessed batch items, conditions that kept
/// moving under concurrent writers).
pub(crate) fn gave_up(doing: &'static str) -> StoreError {
    tracing::warn!(doing, "memory: gave up after repeated attempts");
    StoreError::Unavailable(BUSY.into())
}

/// Stored data that does not decode (`what` names it for the log).
pub(crate) fn undecodable(what: &str, detail: &dyn std::fmt::Display) -> StoreError {
    tracing::error!(%detail, what, "memory: stored data does not decode");
    StoreError::Corrupt("some of long-term memory cannot be read".into())
}

/// A request that could not be built: a bug here, reported as unavailable.
pub(crate) fn build(err: &dyn std::fmt::Display) -> StoreError {
    tracing::error!(error = %err, "memory: a request could not be built");
    StoreError::Unavailable(UNREACHABLE.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contention_is_busy_and_validation_is_not() {
        assert_eq!(
            cancelled("saving", &[None, Some("TransactionConflict")]),
            StoreError::Unavailable(BUSY.into())
        );
        assert_eq!(
            cancelled("saving", &[Some("ValidationError")]),
            StoreError::Unavailable(UNREACHABLE.into())
        );
    }
}
