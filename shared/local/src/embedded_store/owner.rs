//! Which process holds which claims, so that the claims of a process that died are
//! reclaimed at once instead of blocking their episodes until their leases run out.
//!
//! Each open store takes an exclusive lock on a file of its own, `owners/<id>.lock`, held
//! for as long as it is open. The kernel drops the lock when the process ends, however it
//! ends (SIGKILL included), so a lock file that can be locked again belongs to a dead owner.

use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};

use baton_core::ports::store::StoreError;
use rusqlite::{Connection, Transaction, TransactionBehavior, params};

use super::error;

/// The folder of owners' lock files inside the store folder.
pub const OWNERS_DIR: &str = "owners";

/// This store's claim on being alive: its id and its locked file.
#[derive(Debug)]
pub(crate) struct Owner {
    pub(crate) id: String,
    path: PathBuf,
    /// Locked while the store is open; closing it lets the lock go.
    _lock: File,
}

impl Owner {
    /// Takes a fresh owner id in `dir` and locks its file.
    pub(crate) fn take(dir: &Path) -> Result<Owner, StoreError> {
        let owners = dir.join(OWNERS_DIR);
        std::fs::create_dir_all(&owners).map_err(|e| error::io("creating the folder", &e))?;
        let id = format!("{}-{}", std::process::id(), uuid::Uuid::new_v4().simple());
        let path = owners.join(format!("{id}.lock"));
        let lock = File::create(&path).map_err(|e| error::io("creating a lock file", &e))?;
        lock.try_lock().map_err(|e| {
            tracing::warn!(error = %e, "embedded store: cannot lock the owner file");
            StoreError::Unavailable("the local store's folder cannot be locked".into())
        })?;
        Ok(Owner {
            id,
            path,
            _lock: lock,
        })
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        // Best effort: a file left behind is only a dead owner found later.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Whether the owner `id` of some claims is gone: its lock file is missing or lockable.
fn is_gone(owners: &Path, id: &str) -> bool {
    // Ids are made by `Owner::take`; anything else (an empty one from an older store) has
    // no file and so no living owner.
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return true;
    }
    let path = owners.join(format!("{id}.lock"));
    let Ok(file) = File::open(&path) else {
        return true;
    };
    match file.try_lock() {
        Ok(()) => {
            drop(file);
            let _ = std::fs::remove_file(&path);
            true
        }
        Err(TryLockError::WouldBlock) => false,
        Err(TryLockError::Error(e)) => {
            tracing::warn!(error = %e, owner = id, "embedded store: cannot tell if an owner lives");
            false
        }
    }
}

/// Ends the live claims of owners that are gone (their turns were interrupted); returns
/// how many. The claims stay, dead, so that a retry of such a turn id finds its episode.
pub(crate) fn reclaim(conn: &mut Connection, dir: &Path, me: &str) -> Result<usize, StoreError> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| error::sql(RECLAIMING, e))?;
    let reclaimed = reclaim_in(&tx, dir, me)?;
    tx.commit().map_err(|e| error::sql(RECLAIMING, e))?;
    Ok(reclaimed)
}

const RECLAIMING: &str = "reclaiming interrupted turns";

/// [`reclaim`] inside a write transaction already open: what a claim does when a live
/// claim stands in its way, so that a process running beside one that died (`baton chat`
/// beside `baton serve` on one folder) frees the dead one's claims without a restart.
pub(crate) fn reclaim_in(tx: &Transaction<'_>, dir: &Path, me: &str) -> Result<usize, StoreError> {
    let sql = |e| error::sql(RECLAIMING, e);
    let owners: Vec<String> = {
        let mut stmt = tx
            .prepare("SELECT DISTINCT owner FROM claims WHERE expires_ms > 0 AND owner <> ?1")
            .map_err(sql)?;
        let rows = stmt
            .query_map(params![me], |row| row.get::<_, String>(0))
            .map_err(sql)?;
        rows.collect::<Result<_, _>>().map_err(sql)?
    };
    let dir = dir.join(OWNERS_DIR);
    let mut reclaimed = 0;
    for owner in owners.iter().filter(|o| is_gone(&dir, o)) {
        reclaimed += tx
            .execute(
                "UPDATE claims SET expires_ms = 0 WHERE owner = ?1",
                params![owner],
            )
            .map_err(sql)?;
    }
    if reclaimed > 0 {
        tracing::warn!(
            reclaimed,
            "embedded store: turns interrupted by a process that is gone were reclaimed"
        );
    }
    Ok(reclaimed)
}
