//! SDK failures (DynamoDB and S3 Vectors) and undecodable items as [`StoreError`]s: plain
//! messages for the caller, the detail for the log, as the journal does.

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use baton_core::ports::store::StoreError;

use crate::faults::Faults;

/// The message for "try again shortly" failures.
pub(crate) const BUSY: &str = "long-term memory is busy; try again shortly";
/// The message for failures the caller cannot fix by waiting a moment.
pub(crate) const UNREACHABLE: &str = "long-term memory cannot be reached right now";

pub(crate) const FAULTS: Faults = Faults {
    store: "memory",
    busy: BUSY,
    unreachable: UNREACHABLE,
    corrupt: "some of long-term memory cannot be read",
};

/// Maps a failed SDK call (DynamoDB or S3 Vectors) made while `doing` something.
pub(crate) fn sdk<E, R>(doing: &'static str, err: &SdkError<E, R>) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    FAULTS.sdk(doing, err)
}

/// A transaction cancelled for a reason other than a failed condition.
pub(crate) fn cancelled(doing: &'static str, codes: &[Option<&str>]) -> StoreError {
    FAULTS.cancelled(doing, codes)
}

/// What stays undone after every attempt (unprocessed batch items, conditions that kept
/// moving under concurrent writers).
pub(crate) fn gave_up(doing: &'static str) -> StoreError {
    tracing::warn!(doing, "memory: gave up after repeated attempts");
    StoreError::Unavailable(BUSY.into())
}

/// Stored data that does not decode (`what` names it for the log).
pub(crate) fn undecodable(what: &str, detail: &dyn std::fmt::Display) -> StoreError {
    FAULTS.undecodable(what, detail)
}

/// A request that could not be built: a bug here, reported as unavailable.
pub(crate) fn build(err: &dyn std::fmt::Display) -> StoreError {
    tracing::error!(error = %err, "memory: a request could not be built");
    StoreError::Unavailable(UNREACHABLE.into())
}
