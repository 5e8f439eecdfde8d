//! Opening the SQLite file: connection settings, recognising a Baton store, the tables.

use std::path::Path;
use std::time::Duration;

use baton_core::ports::store::StoreError;
use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use super::failure;

/// Marks the file as a Baton store (`PRAGMA application_id`), so another program's database
/// is never mistaken for one and changed.
const APPLICATION_ID: i32 = 0x4261_746e; // "Batn"

/// The layout below; a file with a higher one was written by a newer Baton.
const SCHEMA_VERSION: i32 = 2;

/// Version 1 to 2: claims are kept per turn id (a dead one stays when another turn takes
/// its episode over) and know the store that made them and what their request asked.
const MIGRATE_1_TO_2: &str = "
CREATE TABLE claims_v2 (
    principal TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    episode_id TEXT NOT NULL REFERENCES episodes (episode_id),
    expires_ms INTEGER NOT NULL,
    owner TEXT NOT NULL DEFAULT '',
    fingerprint TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (principal, turn_id)
);
INSERT OR REPLACE INTO claims_v2 (principal, turn_id, episode_id, expires_ms)
    SELECT principal, turn_id, episode_id, expires_ms FROM claims;
DROP TABLE claims;
ALTER TABLE claims_v2 RENAME TO claims;
CREATE INDEX claims_by_episode ON claims (episode_id);
";

/// One row per episode. `id` names the episode's body folder when its id is too long to.
/// Claims: one per turn id, at most one live per episode, with the store instance
/// (`owner`) that holds it and its request's fingerprint; a dead one lingers, so that a
/// turn id sent again finds its episode.
/// Turns: the record as JSON, keyed by position and by (principal, turn id).
/// Bodies: where each committed body's file is, relative to the bodies folder.
const TABLES: &str = "
CREATE TABLE episodes (
    id INTEGER PRIMARY KEY,
    episode_id TEXT NOT NULL UNIQUE,
    owner TEXT NOT NULL,
    version INTEGER NOT NULL,
    created_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL,
    rolling_summary TEXT,
    state TEXT NOT NULL
);
CREATE TABLE claims (
    principal TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    episode_id TEXT NOT NULL REFERENCES episodes (episode_id),
    expires_ms INTEGER NOT NULL,
    owner TEXT NOT NULL DEFAULT '',
    fingerprint TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (principal, turn_id)
);
CREATE INDEX claims_by_episode ON claims (episode_id);
CREATE TABLE turns (
    episode_id TEXT NOT NULL REFERENCES episodes (episode_id),
    seq INTEGER NOT NULL,
    principal TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (episode_id, seq),
    UNIQUE (principal, turn_id)
);
CREATE TABLE bodies (
    episode_id TEXT NOT NULL REFERENCES episodes (episode_id),
    key TEXT NOT NULL,
    path TEXT NOT NULL,
    PRIMARY KEY (episode_id, key)
);
";

/// Whether the file at `path` still looks as this store left it: there, and starting with
/// SQLite's header and Baton's application id. Read from the disk, not through the
/// connection, whose cache would not notice the file being overwritten under it. With
/// write-ahead logging a new store's first pages may still be in the log: an empty file,
/// or a header whose id is not written yet, is fine.
pub(crate) fn header_intact(path: &Path) -> Result<(), StoreError> {
    use std::io::Read;
    let damaged = |detail: &dyn std::fmt::Display| {
        tracing::error!(%detail, "embedded store: the store file is not as it was left");
        StoreError::Corrupt(failure::DAMAGED.into())
    };
    let mut head = Vec::with_capacity(72);
    std::fs::File::open(path)
        .and_then(|f| f.take(72).read_to_end(&mut head))
        .map_err(|e| damaged(&e))?;
    if head.is_empty() {
        return Ok(());
    }
    if head.len() < 72 || &head[..16] != b"SQLite format 3\0" {
        return Err(damaged(&"no SQLite header"));
    }
    let app_id = i32::from_be_bytes([head[68], head[69], head[70], head[71]]);
    if app_id != 0 && app_id != APPLICATION_ID {
        return Err(damaged(&format!("application id {app_id:#x}")));
    }
    Ok(())
}

/// Opens (creating if needed) the store file at `path`.
///
/// Reads come first: a file that is not a Baton store is refused before anything could be
/// written to it.
pub(crate) fn open(path: &Path, busy_timeout: Duration) -> Result<Connection, StoreError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let mut conn =
        Connection::open_with_flags(path, flags).map_err(|e| failure::sql("opening", e))?;
    conn.busy_timeout(busy_timeout)
        .map_err(|e| failure::sql("setting the busy timeout", e))?;

    let (app_id, version, tables) = identity(&conn)?;
    let fresh = app_id == 0 && version == 0 && tables == 0;
    if !fresh && app_id != APPLICATION_ID {
        tracing::error!(app_id, version, tables, "embedded store: not a Baton store");
        return Err(StoreError::Corrupt(failure::DAMAGED.into()));
    }
    if version > SCHEMA_VERSION {
        tracing::error!(version, "embedded store: written by a newer Baton");
        return Err(StoreError::Corrupt(
            "the local store was written by a newer version of Baton; it was left as it is".into(),
        ));
    }

    let mode: String = conn
        .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
        .map_err(|e| failure::sql("turning on write-ahead logging", e))?;
    if !mode.eq_ignore_ascii_case("wal") {
        tracing::warn!(mode, "embedded store: write-ahead logging unavailable");
    }
    // WAL with NORMAL sync: a power cut may lose the last commits, never corrupt the file.
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(|e| failure::sql("setting the sync mode", e))?;
    conn.pragma_update(None, "foreign_keys", true)
        .map_err(|e| failure::sql("turning on foreign keys", e))?;

    if fresh {
        create_tables(&mut conn)?;
    } else if version < SCHEMA_VERSION {
        migrate(&mut conn)?;
    }
    Ok(conn)
}

/// Application id, schema version and number of tables: what the file says it is.
fn identity(conn: &Connection) -> Result<(i32, i32, i64), StoreError> {
    let read = |pragma: &str| -> Result<i32, StoreError> {
        conn.pragma_query_value(None, pragma, |row| row.get(0))
            .map_err(|e| failure::sql("reading the store's identity", e))
    };
    let app_id = read("application_id")?;
    let version = read("user_version")?;
    let tables = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table'",
            [],
            |row| row.get(0),
        )
        .map_err(|e| failure::sql("reading the store's identity", e))?;
    Ok((app_id, version, tables))
}

/// Brings a store of an older layout up to this one, in one transaction.
fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    let doing = "updating the store's layout";
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| failure::sql(doing, e))?;
    // Another process may have done it while we waited for the write lock.
    let (_, version, _) = identity(&tx)?;
    if version == 1 {
        tx.execute_batch(MIGRATE_1_TO_2)
            .map_err(|e| failure::sql(doing, e))?;
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(|e| failure::sql(doing, e))?;
        tracing::info!(
            from = version,
            to = SCHEMA_VERSION,
            "embedded store: layout updated"
        );
    }
    tx.commit().map_err(|e| failure::sql(doing, e))
}

fn create_tables(conn: &mut Connection) -> Result<(), StoreError> {
    let doing = "creating the tables";
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| failure::sql(doing, e))?;
    // Another process may have created them while we waited for the write lock.
    let (app_id, _, _) = identity(&tx)?;
    if app_id == APPLICATION_ID {
        return Ok(());
    }
    tx.execute_batch(TABLES)
        .map_err(|e| failure::sql(doing, e))?;
    tx.pragma_update(None, "application_id", APPLICATION_ID)
        .map_err(|e| failure::sql(doing, e))?;
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)
        .map_err(|e| failure::sql(doing, e))?;
    tx.commit().map_err(|e| failure::sql(doing, e))
}
