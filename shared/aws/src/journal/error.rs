//! SDK failures and undecodable items as [`StoreError`]s: plain messages for the caller,
//! the detail (service, code, request id, cause chain) for the log.

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_smithy_types::error::display::DisplayErrorContext;
use baton_core::ports::store::StoreError;

/// Error codes that mean "too much traffic right now" (DynamoDB and S3).
const BUSY_CODES: &[&str] = &[
    "ThrottlingException",
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
    "TransactionConflictException",
    "TransactionInProgressException",
    "SlowDown",
    "ServiceUnavailable",
];

/// The message for "try again shortly" failures.
pub(crate) const BUSY: &str = "the episode journal is busy; try again shortly";
/// The message for failures the caller cannot fix by waiting a moment.
pub(crate) const UNREACHABLE: &str = "the episode journal cannot be reached right now";

/// Maps a failed SDK call (DynamoDB or S3) made while `doing` something.
pub(crate) fn sdk<E, R>(doing: &'static str, err: &SdkError<E, R>) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    let code = err.as_service_error().and_then(ProvideErrorMetadata::code);
    let busy =
        code.is_some_and(|c| BUSY_CODES.contains(&c)) || matches!(err, SdkError::TimeoutError(_));
    if busy {
        tracing::warn!(error = %DisplayErrorContext(err), doing, "journal: request throttled or timed out");
        StoreError::Unavailable(BUSY.into())
    } else {
        tracing::error!(error = %DisplayErrorContext(err), doing, "journal: request failed");
        StoreError::Unavailable(UNREACHABLE.into())
    }
}

/// A transaction cancelled for a reason other than a failed condition (a concurrent
/// transaction on the same item, throttling, validation).
pub(crate) fn cancelled(doing: &'static str, codes: &[Option<&str>]) -> StoreError {
    let busy = codes.iter().flatten().any(|c| {
        matches!(
            *c,
            "TransactionConflict" | "ThrottlingError" | "ProvisionedThroughputExceeded"
        )
    });
    if busy {
        tracing::warn!(
            ?codes,
            doing,
            "journal: transaction cancelled by contention"
        );
        StoreError::Unavailable(BUSY.into())
    } else {
        tracing::error!(?codes, doing, "journal: transaction cancelled");
        StoreError::Unavailable(UNREACHABLE.into())
    }
}

/// Stored data that does not decode (`what` names it for the log).
pub(crate) fn undecodable(what: &str, detail: &dyn std::fmt::Display) -> StoreError {
    tracing::error!(%detail, what, "journal: stored data does not decode");
    StoreError::Corrupt("some data in the episode journal cannot be read".into())
}

/// A request the journal refuses to send because it cannot succeed (too large, too many
/// items, an id past DynamoDB's key limits). Nothing was written.
pub(crate) fn refused(message: &str) -> StoreError {
    tracing::warn!(message, "journal: request refused before sending");
    StoreError::Unavailable(message.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contention_is_busy_and_validation_is_not() {
        assert_eq!(
            cancelled("committing", &[None, Some("TransactionConflict")]),
            StoreError::Unavailable(BUSY.into())
        );
        assert_eq!(
            cancelled("committing", &[Some("ValidationError")]),
            StoreError::Unavailable(UNREACHABLE.into())
        );
    }
}
