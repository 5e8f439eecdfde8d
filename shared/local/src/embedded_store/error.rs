//! Turns SQLite, file and decoding failures into what the caller can do about them.
//!
//! Messages stay plain (no SQL, no paths); the detail goes to the log.

use baton_core::ports::store::StoreError;
use rusqlite::ErrorCode;

/// The message for a file that is damaged or not a Baton store.
pub(crate) const DAMAGED: &str =
    "the local store file is damaged or is not a Baton store; it was left as it is";

/// The message for a disk with no room left.
pub(crate) const DISK_FULL: &str = "the disk holding the local store is full";

/// A store with no room left.
pub(crate) fn disk_full() -> StoreError {
    StoreError::Unavailable(DISK_FULL.into())
}

/// Whether `err` says the disk is full.
pub(crate) fn is_disk_full(err: &StoreError) -> bool {
    matches!(err, StoreError::Unavailable(m) if m == DISK_FULL)
}

/// Maps a SQLite failure met while `doing` something.
pub(crate) fn sql(doing: &str, err: rusqlite::Error) -> StoreError {
    let mapped = match &err {
        rusqlite::Error::SqliteFailure(failure, _) => match failure.code {
            ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => StoreError::Unavailable(
                "the local store is in use by another process; try again shortly".into(),
            ),
            ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase => {
                StoreError::Corrupt(DAMAGED.into())
            }
            ErrorCode::DiskFull => disk_full(),
            ErrorCode::CannotOpen | ErrorCode::PermissionDenied | ErrorCode::ReadOnly => {
                StoreError::Unavailable(
                    "the local store cannot be opened for writing; check the folder's permissions"
                        .into(),
                )
            }
            _ => unavailable(),
        },
        rusqlite::Error::FromSqlConversionFailure(..)
        | rusqlite::Error::IntegralValueOutOfRange(..)
        | rusqlite::Error::Utf8Error(..)
        | rusqlite::Error::InvalidColumnType(..) => unreadable(),
        _ => unavailable(),
    };
    tracing::warn!(error = %err, doing, "embedded store: sqlite call failed");
    mapped
}

/// Maps a failure to read or write a body file while `doing` something.
pub(crate) fn io(doing: &str, err: &std::io::Error) -> StoreError {
    tracing::warn!(error = %err, doing, "embedded store: file access failed");
    match err.kind() {
        std::io::ErrorKind::StorageFull => disk_full(),
        std::io::ErrorKind::PermissionDenied => StoreError::Unavailable(
            "the local store's folder cannot be written; check its permissions".into(),
        ),
        _ => unavailable(),
    }
}

/// Stored data that does not decode (`what` names it for the log).
pub(crate) fn undecodable(what: &str, detail: &dyn std::fmt::Display) -> StoreError {
    tracing::error!(%detail, what, "embedded store: stored data does not decode");
    unreadable()
}

fn unreadable() -> StoreError {
    StoreError::Corrupt("some stored data of the local store cannot be read".into())
}

fn unavailable() -> StoreError {
    StoreError::Unavailable("the local store could not be read or written".into())
}
