//! Copying the write-ahead log into the store file off the writer connection.
//!
//! SQLite's own checkpoint runs on the connection that committed, once the log passes a
//! threshold: with one writer connection, a commit that carries a large answer would make
//! the claim queued behind it wait for the copy and two syncs of the disk as well, and so a
//! new turn's first event. Here the writer only notes how big the log has grown (a WAL
//! hook); past [`LOG_PAGES`] it hands the copy to a job on the async runtime's blocking
//! threads, which checkpoints from a connection of its own in the mode that never waits for,
//! nor holds up, writers and readers. Wake-ups that come while a copy runs fold into one
//! more.
//!
//! A job, not a thread of its own: the runtime's threads end when idle, where a thread kept
//! for the life of the server kept its allocator cache full after a burst. With no runtime
//! to run on, the writer copies the log itself, as SQLite would. See D-41 in
//! docs/design.md.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use baton_core::ports::store::StoreError;
use rusqlite::wal::CheckpointMode;
use rusqlite::{Connection, OpenFlags};

use super::error;

/// Pages in the log past which a checkpoint runs: SQLite's own default threshold.
pub(crate) const LOG_PAGES: i32 = 1000;

/// Bytes the log file is cut back to when it starts over, so that one burst of large
/// commits does not keep its disk space for good.
const LOG_SIZE_LIMIT: i64 = 64 * 1024 * 1024;

/// Checkpoints the store file at `path` off `writer` from now on, woken by `writer`'s
/// commits, whose own automatic checkpoints this replaces.
///
/// # Errors
/// `Unavailable` when the checkpoint connection cannot be opened or the hook cannot be set.
pub(crate) fn start(
    writer: &mut Connection,
    path: &Path,
    busy_timeout: Duration,
) -> Result<(), StoreError> {
    let copier = Arc::new(Copier {
        conn: Mutex::new(open(path, busy_timeout)?),
        running: AtomicBool::new(false),
        again: AtomicBool::new(false),
    });
    writer
        .pragma_update(None, "journal_size_limit", LOG_SIZE_LIMIT)
        .map_err(|e| error::sql("limiting the log's size", e))?;
    // Set last: setting the hook turns SQLite's automatic checkpoints off for `writer`.
    writer
        .wal_hook(Some(move |wal: &mut rusqlite::hooks::Wal, pages| {
            if pages >= LOG_PAGES && !copier.wake() {
                checkpoint(wal.checkpoint_v2(CheckpointMode::PASSIVE));
            }
            Ok(())
        }))
        .map_err(|e| error::sql("handing checkpoints off the writer", e))
}

/// The checkpoint connection and whether a job runs on it.
struct Copier {
    conn: Mutex<Connection>,
    /// A job is running, or about to.
    running: AtomicBool,
    /// A checkpoint was asked for since the running job last started one.
    again: AtomicBool,
}

impl Copier {
    /// Asks for a checkpoint on the runtime's blocking threads. False when there is no
    /// runtime to run it on.
    fn wake(self: &Arc<Self>) -> bool {
        self.again.store(true, Ordering::SeqCst);
        if self.running.swap(true, Ordering::SeqCst) {
            return true; // the running job sees `again`
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.running.store(false, Ordering::SeqCst);
            return false;
        };
        let copier = Arc::clone(self);
        // A runtime shutting down drops the job unrun and `running` stays set: the process is
        // ending, and the next open checkpoints what the log holds.
        runtime.spawn_blocking(move || copier.run());
        true
    }

    /// Checkpoints while asked to, then ends.
    fn run(&self) {
        loop {
            while self.again.swap(false, Ordering::SeqCst) {
                let conn = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
                checkpoint(conn.wal_checkpoint_v2(None::<&str>, CheckpointMode::PASSIVE));
            }
            self.running.store(false, Ordering::SeqCst);
            // A wake-up between the last look and the line above saw the job still running
            // and left its checkpoint to it: take the job back, unless a new one has it.
            if !self.again.load(Ordering::SeqCst) || self.running.swap(true, Ordering::SeqCst) {
                return;
            }
        }
    }
}

/// The job's connection: it writes only pages the log already holds.
fn open(path: &Path, busy_timeout: Duration) -> Result<Connection, StoreError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)
        .map_err(|e| error::sql("opening for checkpoints", e))?;
    conn.busy_timeout(busy_timeout)
        .map_err(|e| error::sql("setting the busy timeout", e))?;
    // A connection that has read nothing does not know yet that the file keeps a log, and
    // its checkpoints would do nothing.
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))
        .map_err(|e| error::sql("opening for checkpoints", e))?;
    Ok(conn)
}

fn checkpoint(done: rusqlite::Result<(i32, i32)>) {
    match done {
        Ok((log, copied)) => tracing::trace!(log, copied, "embedded store: checkpoint"),
        // A checkpoint that could not run leaves the log as it was: the next one copies it.
        Err(e) => tracing::warn!(error = %e, "embedded store: checkpoint failed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store file in WAL mode with one table, its writer handing checkpoints off.
    fn writer(dir: &Path) -> (Connection, std::path::PathBuf) {
        let path = dir.join("t.sqlite");
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
        (writer, path)
    }

    /// About 2,000 pages of log: only a checkpoint moves them into the store file.
    fn big_row(writer: &Connection) {
        let big = "x".repeat(8 * 1024 * 1024);
        writer.execute("INSERT INTO t VALUES (?1)", [&big]).unwrap();
    }

    fn file_len(path: &Path) -> u64 {
        std::fs::metadata(path).unwrap().len()
    }

    #[test]
    fn large_commits_are_checkpointed_by_a_blocking_job_not_the_writer() {
        let dir = tempfile::tempdir().unwrap();
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let _inside = runtime.enter();
        let (writer, path) = writer(dir.path());
        for round in 1..=2_u64 {
            big_row(&writer);
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while file_len(&path) < round * 8 * 1024 * 1024 {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the log was never checkpointed (round {round})"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    #[test]
    fn with_no_runtime_the_writer_checkpoints_itself() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, path) = writer(dir.path());
        big_row(&writer);
        // Done by the commit itself, before it returned.
        assert!(file_len(&path) >= 8 * 1024 * 1024);
    }
}
