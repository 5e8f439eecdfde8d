//! Opening the SQLite file: connection settings, recognising a Baton store, the tables.

use std::path::Path;
use std::time::Duration;

use baton_core::ports::store::StoreError;
use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use super::error;

/// Marks the file as a Baton store (`PRAGMA application_id`), so another program's database
/// is never mistaken for one and changed.
const APPLICATION_ID: i32 = 0x4261_746e; // "Batn"

/// The layout below; a file with a higher one was written by a newer Baton.
const SCHEMA_VERSION: i32 = 9;

/// How much of the file each connection keeps in its own page cache, in KiB (SQLite's
/// default is 2,000 a connection). The file's pages stay in the system's page cache anyway,
/// so a page read again costs a copy, not a disk read; a full default cache held 2.4 MB more
/// in `baton serve` after a thousand turns than after one (docs/benchmark.md, "Memory under
/// 1,000 streams"). The writer walks more of the tree than a reader.
pub(crate) const WRITER_CACHE_KIB: i64 = 256;
/// See [`WRITER_CACHE_KIB`].
pub(crate) const READER_CACHE_KIB: i64 = 128;

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

/// Version 2 to 3: episode memory. The rolling summary becomes the compaction summary as
/// JSON; none was ever written (and free text would not read as one), so none is kept. An
/// episode due for compaction carries the time it became due, indexed for the queue.
const MIGRATE_2_TO_3: &str = "
ALTER TABLE episodes RENAME COLUMN rolling_summary TO summary;
UPDATE episodes SET summary = NULL;
ALTER TABLE episodes ADD COLUMN due_since_ms INTEGER;
CREATE INDEX episodes_due ON episodes (due_since_ms, episode_id)
    WHERE due_since_ms IS NOT NULL;
";

/// Version 3 to 4: each specialist's conversation with its upstream chat service.
const MIGRATE_3_TO_4: &str = "
CREATE TABLE upstream_conversations (
    episode_id TEXT NOT NULL REFERENCES episodes (episode_id),
    agent_id TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    expires_ms INTEGER NOT NULL,
    PRIMARY KEY (episode_id, agent_id)
);
";

/// Version 4 to 5: running turns' checkpoints, and which turn claimed each episode last
/// (a dead claim lingers, so the claims alone cannot tell a turn taken over from one whose
/// lease merely ran out). A claim made before this layout goes to the turn whose lease
/// ends last: a turn takes an episode over only once the lease before it has ended.
const MIGRATE_4_TO_5: &str = "
CREATE TABLE checkpoints (
    episode_id TEXT NOT NULL REFERENCES episodes (episode_id),
    turn_id TEXT NOT NULL,
    checkpoint TEXT NOT NULL,
    PRIMARY KEY (episode_id, turn_id)
);
ALTER TABLE episodes ADD COLUMN claimed_by TEXT;
UPDATE episodes SET claimed_by = (
    SELECT c.turn_id FROM claims c
    WHERE c.episode_id = episodes.episode_id AND c.principal = episodes.owner
    ORDER BY c.expires_ms DESC, c.rowid DESC LIMIT 1
);
";

/// Version 5 to 6: an upstream conversation's exchange awaiting the user's reply (a remote
/// agent that asked the user something).
const MIGRATE_5_TO_6: &str = "
ALTER TABLE upstream_conversations ADD COLUMN pending TEXT;
";

/// Version 6 to 7: account links (D-37), the tokens sealed before they reach the store.
const MIGRATE_6_TO_7: &str = "
CREATE TABLE links (
    principal TEXT NOT NULL,
    server TEXT NOT NULL,
    sealed TEXT NOT NULL,
    updated_ms INTEGER NOT NULL,
    PRIMARY KEY (principal, server)
);
";

/// Version 7 to 8: the pictures users sent with their turns (D-42), one file each in the
/// bodies folder.
const MIGRATE_7_TO_8: &str = "
CREATE TABLE pictures (
    episode_id TEXT NOT NULL REFERENCES episodes (episode_id),
    sha256 TEXT NOT NULL,
    media_type TEXT NOT NULL,
    path TEXT NOT NULL,
    PRIMARY KEY (episode_id, sha256)
);
";

/// Version 8 to 9: long-term memories (D-43): one row each, current or history, with its
/// vector; their full-text index (its rowid is the memory's); each principal's setting. A
/// new store creates them with the other tables.
const MIGRATE_8_TO_9: &str = "
CREATE TABLE memories (
    principal TEXT NOT NULL,
    id TEXT NOT NULL,
    kind TEXT NOT NULL,
    subject TEXT NOT NULL,
    text TEXT NOT NULL,
    origin TEXT NOT NULL,
    episode_id TEXT,
    turn_id TEXT,
    specialist TEXT,
    created_ms INTEGER NOT NULL,
    expires_ms INTEGER,
    replaced_by TEXT,
    model TEXT,
    vector BLOB,
    PRIMARY KEY (principal, id)
);
CREATE INDEX memories_by_subject ON memories (principal, subject) WHERE replaced_by IS NULL;
CREATE INDEX memories_by_time ON memories (principal, created_ms);
CREATE INDEX memories_by_replacement ON memories (principal, replaced_by)
    WHERE replaced_by IS NOT NULL;
CREATE VIRTUAL TABLE memory_text USING fts5 (body, tokenize = 'porter unicode61');
CREATE TABLE memory_settings (
    principal TEXT PRIMARY KEY,
    enabled INTEGER NOT NULL
);
";

/// Each step from a layout to the next, by the version it starts from.
const MIGRATIONS: &[(i32, &str)] = &[
    (1, MIGRATE_1_TO_2),
    (2, MIGRATE_2_TO_3),
    (3, MIGRATE_3_TO_4),
    (4, MIGRATE_4_TO_5),
    (5, MIGRATE_5_TO_6),
    (6, MIGRATE_6_TO_7),
    (7, MIGRATE_7_TO_8),
    (8, MIGRATE_8_TO_9),
];

/// One row per episode. `id` names the episode's body folder when its id is too long to.
/// `summary` is the compaction summary as JSON; `due_since_ms`, set only while the episode
/// is due for compaction, is when it became due (a partial index keeps the queue small).
/// Claims: one per turn id, at most one live per episode, with the store instance
/// (`owner`) that holds it and its request's fingerprint; a dead one lingers, so that a
/// turn id sent again finds its episode.
/// Turns: the record as JSON, keyed by position and by (principal, turn id).
/// Bodies: where each committed body's file is, relative to the bodies folder.
/// Pictures: each picture a committed turn sent, by episode and SHA-256 (the same picture
/// sent again is one row), with its media type and where its file is, likewise.
/// Upstream conversations: one per episode and specialist, owned through its episode row
/// (no owner of its own to disagree with it), kept expired or not: the caller judges;
/// `pending` is the exchange awaiting the user's reply, if any.
/// `claimed_by` is the turn id that claimed the episode last; it holds the claim (lease
/// running or not) for as long as its claim row is there, i.e. until it releases or
/// commits. Checkpoints: what a running turn saved last, kept across releases and dead
/// leases, deleted by the turn's commit. Links: a principal's account links by server,
/// sealed. Memories are created from [`MIGRATE_8_TO_9`].
const TABLES: &str = "
CREATE TABLE episodes (
    id INTEGER PRIMARY KEY,
    episode_id TEXT NOT NULL UNIQUE,
    owner TEXT NOT NULL,
    version INTEGER NOT NULL,
    created_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL,
    summary TEXT,
    state TEXT NOT NULL,
    due_since_ms INTEGER,
    claimed_by TEXT
);
CREATE INDEX episodes_due ON episodes (due_since_ms, episode_id)
    WHERE due_since_ms IS NOT NULL;
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
CREATE TABLE pictures (
    episode_id TEXT NOT NULL REFERENCES episodes (episode_id),
    sha256 TEXT NOT NULL,
    media_type TEXT NOT NULL,
    path TEXT NOT NULL,
    PRIMARY KEY (episode_id, sha256)
);
CREATE TABLE upstream_conversations (
    episode_id TEXT NOT NULL REFERENCES episodes (episode_id),
    agent_id TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    expires_ms INTEGER NOT NULL,
    pending TEXT,
    PRIMARY KEY (episode_id, agent_id)
);
CREATE TABLE checkpoints (
    episode_id TEXT NOT NULL REFERENCES episodes (episode_id),
    turn_id TEXT NOT NULL,
    checkpoint TEXT NOT NULL,
    PRIMARY KEY (episode_id, turn_id)
);
CREATE TABLE links (
    principal TEXT NOT NULL,
    server TEXT NOT NULL,
    sealed TEXT NOT NULL,
    updated_ms INTEGER NOT NULL,
    PRIMARY KEY (principal, server)
);";

/// Whether the file at `path` still looks as this store left it: there, and starting with
/// SQLite's header and Baton's application id. Read from the disk, not through the
/// connection, whose cache would not notice the file being overwritten under it. With
/// write-ahead logging a new store's first pages may still be in the log: an empty file,
/// or a header whose id is not written yet, is fine.
pub(crate) fn header_intact(path: &Path) -> Result<(), StoreError> {
    use std::io::Read;
    let damaged = |detail: &dyn std::fmt::Display| {
        tracing::error!(%detail, "embedded store: the store file is not as it was left");
        StoreError::Corrupt(error::DAMAGED.into())
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
        Connection::open_with_flags(path, flags).map_err(|e| error::sql("opening", e))?;
    conn.busy_timeout(busy_timeout)
        .map_err(|e| error::sql("setting the busy timeout", e))?;

    let (app_id, version, tables) = identity(&conn)?;
    let fresh = app_id == 0 && version == 0 && tables == 0;
    if !fresh && app_id != APPLICATION_ID {
        tracing::error!(app_id, version, tables, "embedded store: not a Baton store");
        return Err(StoreError::Corrupt(error::DAMAGED.into()));
    }
    if version > SCHEMA_VERSION {
        tracing::error!(version, "embedded store: written by a newer Baton");
        return Err(StoreError::Corrupt(
            "the local store was written by a newer version of Baton; it was left as it is".into(),
        ));
    }

    let mode: String = conn
        .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
        .map_err(|e| error::sql("turning on write-ahead logging", e))?;
    if !mode.eq_ignore_ascii_case("wal") {
        tracing::warn!(mode, "embedded store: write-ahead logging unavailable");
    }
    // WAL with NORMAL sync: a power cut may lose the last commits, never corrupt the file.
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(|e| error::sql("setting the sync mode", e))?;
    conn.pragma_update(None, "foreign_keys", true)
        .map_err(|e| error::sql("turning on foreign keys", e))?;
    // Deleted content is zeroed where its page is written anyway: a forgotten memory's
    // words do not linger in the file (D-43) at no extra I/O.
    conn.pragma_update(None, "secure_delete", "FAST")
        .map_err(|e| error::sql("turning on secure delete", e))?;
    set_cache(&conn, WRITER_CACHE_KIB)?;

    if fresh {
        create_tables(&mut conn)?;
    } else if version < SCHEMA_VERSION {
        migrate(&mut conn)?;
    }
    Ok(conn)
}

/// Opens a read-only connection to the store file that [`open`] has set up (write-ahead
/// logging lets it read while the writer writes).
pub(crate) fn open_reader(path: &Path, busy_timeout: Duration) -> Result<Connection, StoreError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)
        .map_err(|e| error::sql("opening for reading", e))?;
    conn.busy_timeout(busy_timeout)
        .map_err(|e| error::sql("setting the busy timeout", e))?;
    set_cache(&conn, READER_CACHE_KIB)?;
    Ok(conn)
}

/// Caps the connection's page cache at `kib` KiB (a negative `cache_size` is in KiB).
fn set_cache(conn: &Connection, kib: i64) -> Result<(), StoreError> {
    conn.pragma_update(None, "cache_size", -kib)
        .map_err(|e| error::sql("setting the page cache size", e))
}

/// Checkpoints the write-ahead log and truncates it to nothing, giving its disk space
/// back; a failure (a reader still on an old snapshot) only leaves it as it was.
pub(crate) fn shrink_log(conn: &Connection) {
    if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())) {
        tracing::warn!(error = %e, "embedded store: the write-ahead log could not be truncated");
    }
}

/// Application id, schema version and number of tables: what the file says it is.
fn identity(conn: &Connection) -> Result<(i32, i32, i64), StoreError> {
    let read = |pragma: &str| -> Result<i32, StoreError> {
        conn.pragma_query_value(None, pragma, |row| row.get(0))
            .map_err(|e| error::sql("reading the store's identity", e))
    };
    let app_id = read("application_id")?;
    let version = read("user_version")?;
    let tables = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table'",
            [],
            |row| row.get(0),
        )
        .map_err(|e| error::sql("reading the store's identity", e))?;
    Ok((app_id, version, tables))
}

/// Brings a store of an older layout up to this one, step by step, in one transaction.
fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    let doing = "updating the store's layout";
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| error::sql(doing, e))?;
    // Another process may have done it while we waited for the write lock.
    let (_, from, _) = identity(&tx)?;
    let mut version = from;
    for &(step_from, step) in MIGRATIONS {
        if version == step_from {
            tx.execute_batch(step).map_err(|e| error::sql(doing, e))?;
            version = step_from + 1;
        }
    }
    if version != from {
        tx.pragma_update(None, "user_version", version)
            .map_err(|e| error::sql(doing, e))?;
        tracing::info!(from, to = version, "embedded store: layout updated");
    }
    tx.commit().map_err(|e| error::sql(doing, e))
}

fn create_tables(conn: &mut Connection) -> Result<(), StoreError> {
    let doing = "creating the tables";
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| error::sql(doing, e))?;
    // Another process may have created them while we waited for the write lock.
    let (app_id, _, _) = identity(&tx)?;
    if app_id == APPLICATION_ID {
        return Ok(());
    }
    tx.execute_batch(TABLES).map_err(|e| error::sql(doing, e))?;
    tx.execute_batch(MIGRATE_8_TO_9)
        .map_err(|e| error::sql(doing, e))?;
    tx.pragma_update(None, "application_id", APPLICATION_ID)
        .map_err(|e| error::sql(doing, e))?;
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)
        .map_err(|e| error::sql(doing, e))?;
    tx.commit().map_err(|e| error::sql(doing, e))
}

#[cfg(test)]
mod tests {
    use baton_core::ports::store::{
        CheckpointStore as _, LinkStore as _, SummaryStore as _, TurnStore as _, UpstreamStore as _,
    };
    use std::collections::BTreeMap;

    use baton_core::memory::EpisodeSummary;
    use baton_core::picture::MediaType;
    use baton_core::ports::store::StoreError;
    use baton_core::ports::upstream::UpstreamConversation;
    use baton_testkit::store::records::{
        LEASE_MS, claim_ok, claim_request, commit_of, picture, principal, run_turn, turn_record,
    };

    use crate::embedded_store::{DATABASE_FILE, EmbeddedStore};

    /// The second layout, as Baton wrote it, with one episode and no turn yet.
    const LAYOUT_2: &str = "
        CREATE TABLE episodes (id INTEGER PRIMARY KEY, episode_id TEXT NOT NULL UNIQUE,
            owner TEXT NOT NULL, version INTEGER NOT NULL, created_ms INTEGER NOT NULL,
            updated_ms INTEGER NOT NULL, rolling_summary TEXT, state TEXT NOT NULL);
        CREATE TABLE claims (principal TEXT NOT NULL, turn_id TEXT NOT NULL,
            episode_id TEXT NOT NULL REFERENCES episodes (episode_id),
            expires_ms INTEGER NOT NULL, owner TEXT NOT NULL DEFAULT '',
            fingerprint TEXT NOT NULL DEFAULT '', PRIMARY KEY (principal, turn_id));
        CREATE INDEX claims_by_episode ON claims (episode_id);
        CREATE TABLE turns (episode_id TEXT NOT NULL REFERENCES episodes (episode_id),
            seq INTEGER NOT NULL, principal TEXT NOT NULL, turn_id TEXT NOT NULL,
            record TEXT NOT NULL, PRIMARY KEY (episode_id, seq), UNIQUE (principal, turn_id));
        CREATE TABLE bodies (episode_id TEXT NOT NULL REFERENCES episodes (episode_id),
            key TEXT NOT NULL, path TEXT NOT NULL, PRIMARY KEY (episode_id, key));
        INSERT INTO episodes (episode_id, owner, version, created_ms, updated_ms, state)
            VALUES ('ep-1', 'alice', 0, 1000, 1000, '{}');
        PRAGMA application_id = 1113683054;
        PRAGMA user_version = 2;";

    fn summary() -> EpisodeSummary {
        EpisodeSummary {
            upto_seq: 1,
            text: "The user asked about points.".into(),
            agents: BTreeMap::from([("rewards".into(), "12,400 points.".into())]),
        }
    }

    #[test]
    fn the_writer_and_the_readers_keep_small_page_caches() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(DATABASE_FILE);
        let timeout = std::time::Duration::from_secs(1);
        let cache = |conn: &rusqlite::Connection| -> i64 {
            conn.pragma_query_value(None, "cache_size", |r| r.get(0))
                .unwrap()
        };
        let writer = super::open(&file, timeout).unwrap();
        assert_eq!(cache(&writer), -super::WRITER_CACHE_KIB);
        let reader = super::open_reader(&file, timeout).unwrap();
        assert_eq!(cache(&reader), -super::READER_CACHE_KIB);
    }

    #[tokio::test]
    async fn a_store_of_the_second_layout_gains_episode_memory() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(DATABASE_FILE);
        rusqlite::Connection::open(&file)
            .unwrap()
            .execute_batch(LAYOUT_2)
            .unwrap();

        let alice = principal("alice");
        {
            let store = EmbeddedStore::open(dir.path()).unwrap();
            assert_eq!(store.episode(&alice, "ep-1").await.unwrap().summary, None);
            claim_ok(
                &store,
                claim_request(&alice, Some("ep-1"), "unused", "t-1", 2_000),
            )
            .await;
            let mut commit = commit_of(&alice, 0, turn_record("ep-1", 1, "t-1", 2_001), vec![]);
            commit.compaction_due = true;
            store.commit(&commit).await.unwrap();
            let due = store.due_episodes(10).await.unwrap();
            assert_eq!(due.len(), 1);
            assert_eq!(
                (due[0].episode_id.as_str(), due[0].since_ms),
                ("ep-1", 2_001)
            );
            store
                .save_summary(&alice, "ep-1", 1, &summary())
                .await
                .unwrap();
        }
        // Opened again: already the current layout, and everything is still there.
        let store = EmbeddedStore::open(dir.path()).unwrap();
        assert_eq!(
            store.episode(&alice, "ep-1").await.unwrap().summary,
            Some(summary())
        );
        assert_eq!(store.due_episodes(10).await.unwrap(), vec![]);
        let version: i32 = rusqlite::Connection::open(&file)
            .unwrap()
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .unwrap();
        assert_eq!(version, super::SCHEMA_VERSION);
    }

    #[tokio::test]
    async fn a_store_of_the_third_layout_gains_upstream_conversations() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(DATABASE_FILE);
        let alice = principal("alice");
        {
            let store = EmbeddedStore::open(dir.path()).unwrap();
            claim_ok(&store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
        }
        // The third layout is this one without the upstream table and the fifth's, the
        // seventh's and the eighth's additions (the sixth's is in the upstream table).
        rusqlite::Connection::open(&file)
            .unwrap()
            .execute_batch(
                "DROP TABLE upstream_conversations; DROP TABLE checkpoints; DROP TABLE links;
                 DROP TABLE pictures; DROP TABLE memories; DROP TABLE memory_text; DROP TABLE memory_settings;
                 ALTER TABLE episodes DROP COLUMN claimed_by; PRAGMA user_version = 3;",
            )
            .unwrap();

        let store = EmbeddedStore::open(dir.path()).unwrap();
        assert_eq!(
            store.upstream_conversation(&alice, "ep-1", "support").await,
            Ok(None)
        );
        let kept = UpstreamConversation {
            agent_id: "support".into(),
            conversation_id: "c-1".into(),
            expires_ms: 9_000,
            pending: Some("task-1".into()),
        };
        store
            .save_upstream_conversation(&alice, "ep-1", &kept)
            .await
            .unwrap();
        assert_eq!(
            store.upstream_conversation(&alice, "ep-1", "support").await,
            Ok(Some(kept))
        );
        assert_eq!(store.episode(&alice, "ep-1").await.unwrap().version, 0);
        let version: i32 = rusqlite::Connection::open(&file)
            .unwrap()
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .unwrap();
        assert_eq!(version, super::SCHEMA_VERSION);
    }

    #[tokio::test]
    async fn a_store_of_the_fourth_layout_gains_checkpoints_and_keeps_its_claims() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(DATABASE_FILE);
        let alice = principal("alice");
        {
            let store = EmbeddedStore::open(dir.path()).unwrap();
            claim_ok(&store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
            claim_ok(&store, claim_request(&alice, None, "ep-2", "t-2", 1_000)).await;
            // t-2's lease runs out and t-3 takes ep-2 over; t-2's dead claim lingers.
            let over = claim_request(&alice, Some("ep-2"), "unused", "t-3", 1_000 + LEASE_MS);
            claim_ok(&store, over).await;
        }
        // The fourth layout is this one without the later layouts' additions.
        rusqlite::Connection::open(&file)
            .unwrap()
            .execute_batch(
                "DROP TABLE checkpoints; DROP TABLE links; DROP TABLE pictures; DROP TABLE memories; DROP TABLE memory_text; DROP TABLE memory_settings;
                 ALTER TABLE episodes DROP COLUMN claimed_by;
                 ALTER TABLE upstream_conversations DROP COLUMN pending;
                 PRAGMA user_version = 4;",
            )
            .unwrap();

        let store = EmbeddedStore::open(dir.path()).unwrap();
        store
            .save_checkpoint("ep-1", "t-1", "wave 1")
            .await
            .unwrap();
        assert_eq!(
            store.checkpoint("ep-1", "t-1").await,
            Ok(Some("wave 1".to_owned()))
        );
        assert_eq!(
            store.save_checkpoint("ep-2", "t-2", "wave 1").await,
            Err(StoreError::Conflict)
        );
        store
            .save_checkpoint("ep-2", "t-3", "wave 1")
            .await
            .unwrap();
        let version: i32 = rusqlite::Connection::open(&file)
            .unwrap()
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .unwrap();
        assert_eq!(version, super::SCHEMA_VERSION);
    }

    #[tokio::test]
    async fn a_summary_that_does_not_decode_is_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open(dir.path()).unwrap();
        let alice = principal("alice");
        claim_ok(&store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
        rusqlite::Connection::open(dir.path().join(DATABASE_FILE))
            .unwrap()
            .execute(
                "UPDATE episodes SET summary = 'not json' WHERE episode_id = 'ep-1'",
                [],
            )
            .unwrap();
        assert!(matches!(
            store.episode(&alice, "ep-1").await,
            Err(StoreError::Corrupt(_))
        ));
    }
    #[tokio::test]
    async fn a_store_of_the_fifth_layout_keeps_its_conversations_and_gains_pending() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(DATABASE_FILE);
        let alice = principal("alice");
        let kept = UpstreamConversation {
            agent_id: "stores".into(),
            conversation_id: "ctx-1".into(),
            expires_ms: 9_000,
            pending: None,
        };
        {
            let store = EmbeddedStore::open(dir.path()).unwrap();
            claim_ok(&store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
            store
                .save_upstream_conversation(&alice, "ep-1", &kept)
                .await
                .unwrap();
        }
        rusqlite::Connection::open(&file)
            .unwrap()
            .execute_batch(
                "ALTER TABLE upstream_conversations DROP COLUMN pending; DROP TABLE links;
                 DROP TABLE pictures; DROP TABLE memories; DROP TABLE memory_text; DROP TABLE memory_settings; PRAGMA user_version = 5;",
            )
            .unwrap();
        let store = EmbeddedStore::open(dir.path()).unwrap();
        // The seventh layout's links come with the migration.
        assert_eq!(store.links(&alice).await, Ok(Vec::new()));
        assert_eq!(
            store.upstream_conversation(&alice, "ep-1", "stores").await,
            Ok(Some(kept.clone()))
        );
        let waiting = UpstreamConversation {
            pending: Some("task-1".into()),
            ..kept
        };
        store
            .save_upstream_conversation(&alice, "ep-1", &waiting)
            .await
            .unwrap();
        assert_eq!(
            store.upstream_conversation(&alice, "ep-1", "stores").await,
            Ok(Some(waiting))
        );
    }

    #[tokio::test]
    async fn a_store_of_the_seventh_layout_keeps_its_turns_and_gains_pictures() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(DATABASE_FILE);
        let alice = principal("alice");
        {
            let store = EmbeddedStore::open(dir.path()).unwrap();
            run_turn(&store, &alice, "ep-1", true, "t-1", 1_000).await;
        }
        rusqlite::Connection::open(&file)
            .unwrap()
            .execute_batch(
                "DROP TABLE pictures; DROP TABLE memories; DROP TABLE memory_text;
                 DROP TABLE memory_settings; PRAGMA user_version = 7;",
            )
            .unwrap();

        let store = EmbeddedStore::open(dir.path()).unwrap();
        assert_eq!(store.turns(&alice, "ep-1", 10).await.unwrap().len(), 1);
        let meta = claim_ok(
            &store,
            claim_request(&alice, Some("ep-1"), "unused", "t-2", 2_000),
        )
        .await;
        let sent = picture(MediaType::Png, 1);
        let mut commit = commit_of(
            &alice,
            meta.version,
            turn_record("ep-1", 2, "t-2", 2_001),
            vec![],
        );
        commit.pictures = vec![sent.clone()];
        assert_eq!(store.commit(&commit).await, Ok(2));
        let stored = store.picture(&alice, "ep-1", &sent.sha256).await.unwrap();
        assert_eq!(stored.bytes, sent.bytes);
        let version: i32 = rusqlite::Connection::open(&file)
            .unwrap()
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .unwrap();
        assert_eq!(version, super::SCHEMA_VERSION);
    }
}
