//! SDK failures and undecodable items as [`StoreError`]s: plain messages for the caller,
//! the detail (service, code, request id, cause chain) for the log.

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use baton_core::ports::store::StoreError;

use crate::faults::Faults;

/// The message for "try again shortly" failures.
pub(crate) const BUSY: &str = "the episode journal is busy; try again shortly";
/// The message for failures the caller cannot fix by waiting a moment.
pub(crate) const UNREACHABLE: &str = "the episode journal cannot be reached right now";

pub(crate) const FAULTS: Faults = Faults {
    store: "journal",
    busy: BUSY,
    unreachable: UNREACHABLE,
    corrupt: "some data in the episode journal cannot be read",
};

/// Maps a failed SDK call (DynamoDB or S3) made while `doing` something.
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

/// Stored data that does not decode (`what` names it for the log).
pub(crate) fn undecodable(what: &str, detail: &dyn std::fmt::Display) -> StoreError {
    FAULTS.undecodable(what, detail)
}

/// A request the journal refuses to send because it cannot succeed (too large, too many
/// items, an id past DynamoDB's key limits). Nothing was written.
pub(crate) fn refused(message: &str) -> StoreError {
    tracing::warn!(message, "journal: request refused before sending");
    StoreError::Unavailable(message.to_owned())
}
