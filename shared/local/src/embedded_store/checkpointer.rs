//! Copying the write-ahead log into the store file on a thread of its own.
//!
//! SQLite's own checkpoint runs on the connection that committed, once the log passes a
//! threshold: with one writer connection, a commit that carries a large answer would make
//! the claim queued behind it wait for the copy and two syncs of the disk as well, and so a
//! new turn's first event. Here the writer only notes how big the log has grown (a WAL
//! hook); past [`LOG_PAGES`] it wakes this thread, which checkpoints from its own
//! connection in the mode that never waits for, nor holds up, writers and readers. Wake-ups
//! that come while a checkpoint runs fold into one.
//!
//! The thread ends when the writer connection is dropped (its hook holds the only sender).
//! See D-41 in docs/design.md.

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use baton_core::ports::store::StoreError;
use rusqlite::wal::CheckpointMode;
use rusqlite::{Connection, OpenFlags};

use super::failure;

/// Pages in the log past which a checkpoint runs: SQLite's own default threshold.
pub(crate) const LOG_PAGES: i32 = 1000;

/// Bytes the log file is cut back to when it starts over, so that one burst of large
/// commits does not keep its disk space for good.
const LOG_SIZE_LIMIT: i64 = 64 * 1024 * 1024;

/// Starts the checkpoint thread for the store file at `path` and hands its wake-ups to
/// `writer`, whose own automatic checkpoints it replaces.
///
/// # Errors
/// `Unavailable` when the thread's connection cannot be opened, the thread cannot be
/// started or the hook cannot be set.
pub(crate) fn start(
    writer: &mut Connection,
    path: &Path,
    busy_timeout: Duration,
) -> Result<(), StoreError> {
    let conn = open(path, busy_timeout)?;
    writer
        .pragma_update(None, "journal_size_limit", LOG_SIZE_LIMIT)
        .map_err(|e| failure::sql("limiting the log's size", e))?;
    let (wake, woken) = mpsc::sync_channel::<()>(1);
    std::thread::Builder::new()
        .name("baton-store-checkpoint".into())
        .spawn(move || run(&conn, &woken))
        .map_err(|e| failure::io("starting the checkpoint thread", &e))?;
    // Set last: setting the hook turns SQLite's automatic checkpoints off for `writer`.
    writer
        .wal_hook(Some(move |_: &mut rusqlite::hooks::Wal, pages| {
            if pages >= LOG_PAGES {
                // Full means a wake-up is already pending; closed means the thread is gone
                // and the next open checkpoints instead.
                let _ = wake.try_send(());
            }
            Ok(())
        }))
        .map_err(|e| failure::sql("handing checkpoints to their thread", e))
}

/// The thread's connection: it writes only pages the log already holds.
fn open(path: &Path, busy_timeout: Duration) -> Result<Connection, StoreError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)
        .map_err(|e| failure::sql("opening for checkpoints", e))?;
    conn.busy_timeout(busy_timeout)
        .map_err(|e| failure::sql("setting the busy timeout", e))?;
    // A connection that has read nothing does not know yet that the file keeps a log, and
    // its checkpoints would do nothing.
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))
        .map_err(|e| failure::sql("opening for checkpoints", e))?;
    Ok(conn)
}

fn run(conn: &Connection, woken: &mpsc::Receiver<()>) {
    while woken.recv().is_ok() {
        match conn.wal_checkpoint_v2(None::<&str>, CheckpointMode::PASSIVE) {
            Ok((log, copied)) => tracing::trace!(log, copied, "embedded store: checkpoint"),
            // A checkpoint that could not run leaves the log as it was: the next one copies it.
            Err(e) => tracing::warn!(error = %e, "embedded store: checkpoint failed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_commits_are_checkpointed_by_the_thread_not_the_writer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.sqlite");
        let mut writer = Connection::open(&path).unwrap();
        writer
            .pragma_update_and_check(None, "journal_mode", "WAL", |_| Ok(()))
            .unwrap();
        writer
            .execute("CREATE TABLE t (v TEXT NOT NULL)", [])
            .unwrap();
        start(&mut writer, &path, Duration::from_secs(5)).unwrap();
        let automatic: i64 = writer
            .pragma_query_value(None, "wal_autocheckpoint", |r| r.get(0))
            .unwrap();
        assert_eq!(automatic, 0, "the writer still checkpoints by itself");

        // About 2,000 pages: only a checkpoint moves them into the store file.
        let big = "x".repeat(8 * 1024 * 1024);
        writer.execute("INSERT INTO t VALUES (?1)", [&big]).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while std::fs::metadata(&path).unwrap().len() < 8 * 1024 * 1024 {
            assert!(
                std::time::Instant::now() < deadline,
                "the log was never checkpointed"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
