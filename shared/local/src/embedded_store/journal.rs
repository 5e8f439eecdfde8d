//! The store's operations as blocking SQLite work, one transaction each.
//!
//! Claims and commits run in `BEGIN IMMEDIATE` transactions: they take the write lock
//! before reading, so their checks still hold when they write, across processes too.

use std::collections::HashSet;
use std::path::Path;

use baton_core::Principal;
use baton_core::memory::EpisodeSummary;
use baton_core::ports::store::{Claim, ClaimRequest, Commit, DueEpisode, EpisodeMeta, StoreError};
use baton_core::turn::{EpisodeState, TurnRecord};
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};

use super::{error, owner, room};

/// SQLite integers are signed; times and versions past `i64::MAX` are clamped (never
/// reached in practice, and a clamped version simply never matches).
pub(super) fn int(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn uint(value: i64, what: &str) -> Result<u64, StoreError> {
    u64::try_from(value).map_err(|e| error::undecodable(what, &e))
}

fn immediate<'c>(conn: &'c mut Connection, doing: &str) -> Result<Transaction<'c>, StoreError> {
    conn.transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| error::sql(doing, e))
}

fn decode_record(json: &str) -> Result<TurnRecord, StoreError> {
    serde_json::from_str(json).map_err(|e| error::undecodable("a turn record", &e))
}

fn encode<T: serde::Serialize>(value: &T, what: &str) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| {
        tracing::warn!(error = %e, what, "embedded store: value does not serialize");
        StoreError::Unavailable("the turn could not be saved".into())
    })
}

/// The episode if it exists and belongs to `principal`; another's is "not found" (D-30).
fn owned(
    conn: &Connection,
    principal: &Principal,
    episode_id: &str,
) -> Result<EpisodeMeta, StoreError> {
    let doing = "reading an episode";
    let row = conn
        .query_row(
            "SELECT owner, version, created_ms, updated_ms, summary, state
             FROM episodes WHERE episode_id = ?1",
            params![episode_id],
            |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, i64>(1)?,
                    row.get::<_, i64>(2)?,
                    row.get::<_, i64>(3)?,
                    row.get::<_, Option<String>>(4)?,
                    row.get::<_, String>(5)?,
                ))
            },
        )
        .optional()
        .map_err(|e| error::sql(doing, e))?;
    let Some((owner, version, created_ms, updated_ms, summary, state)) = row else {
        return Err(StoreError::NotFound);
    };
    if owner != principal.as_str() {
        return Err(StoreError::NotFound);
    }
    let state: EpisodeState =
        serde_json::from_str(&state).map_err(|e| error::undecodable("an episode state", &e))?;
    let summary: Option<EpisodeSummary> = summary
        .map(|json| serde_json::from_str(&json))
        .transpose()
        .map_err(|e| error::undecodable("an episode summary", &e))?;
    Ok(EpisodeMeta {
        episode_id: episode_id.to_owned(),
        owner: principal.clone(),
        version: uint(version, "an episode version")?,
        created_ms: uint(created_ms, "an episode time")?,
        updated_ms: uint(updated_ms, "an episode time")?,
        summary,
        state,
    })
}

/// Claims a turn (see the `Store` contract and the crate's tests for the rules).
pub(crate) fn claim(
    conn: &mut Connection,
    req: &ClaimRequest,
    owner: &str,
    dir: &Path,
) -> Result<Claim, StoreError> {
    let doing = "claiming a turn";
    let sql = |e| error::sql(doing, e);
    let tx = immediate(conn, doing)?;
    let principal = req.principal.as_str();
    let now = int(req.now_ms);

    let completed: Option<String> = tx
        .query_row(
            "SELECT record FROM turns WHERE principal = ?1 AND turn_id = ?2",
            params![principal, req.turn_id],
            |row| row.get(0),
        )
        .optional()
        .map_err(sql)?;
    if let Some(json) = completed {
        let record = decode_record(&json)?;
        if let Some(mismatch) = req.mismatch(&record.episode_id, &record.fingerprint) {
            return Ok(Claim::Mismatch(mismatch));
        }
        return Ok(Claim::Completed(Box::new(record)));
    }
    // An earlier claim of this turn id: running, or dead and restarted where it was.
    let earlier_claim =
        |tx: &Transaction<'_>| -> Result<Option<(String, i64, String)>, StoreError> {
            tx.query_row(
                "SELECT episode_id, expires_ms, fingerprint FROM claims
             WHERE principal = ?1 AND turn_id = ?2",
                params![principal, req.turn_id],
                |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
            )
            .optional()
            .map_err(sql)
        };
    let mut earlier = earlier_claim(&tx)?;
    // A live claim in the way may belong to a process that died since this one opened
    // the store: its claims are freed now, not when its lease ends (D-25).
    if earlier.as_ref().is_some_and(|e| e.1 > now) && owner::reclaim_in(&tx, dir, owner)? > 0 {
        earlier = earlier_claim(&tx)?;
    }
    let mut target = req.episode_id.clone();
    if let Some((episode_id, expires_ms, fingerprint)) = earlier {
        if let Some(mismatch) = req.mismatch(&episode_id, &fingerprint) {
            return Ok(Claim::Mismatch(mismatch));
        }
        if expires_ms > now {
            return Ok(Claim::InFlight);
        }
        target = Some(episode_id);
    }

    let meta = match &target {
        Some(episode_id) => {
            let meta = owned(&tx, &req.principal, episode_id)?;
            let busy = |tx: &Transaction<'_>| -> Result<bool, StoreError> {
                tx.query_row(
                    "SELECT EXISTS (SELECT 1 FROM claims
                     WHERE episode_id = ?1 AND expires_ms > ?2)",
                    params![episode_id, now],
                    |row| row.get(0),
                )
                .map_err(sql)
            };
            if busy(&tx)? && (owner::reclaim_in(&tx, dir, owner)? == 0 || busy(&tx)?) {
                return Ok(Claim::Busy);
            }
            meta
        }
        None => {
            let taken: bool = tx
                .query_row(
                    "SELECT EXISTS (SELECT 1 FROM episodes WHERE episode_id = ?1)",
                    params![req.new_episode_id],
                    |row| row.get(0),
                )
                .map_err(sql)?;
            if taken {
                return Err(StoreError::Conflict);
            }
            let meta = EpisodeMeta {
                episode_id: req.new_episode_id.clone(),
                owner: req.principal.clone(),
                version: 0,
                created_ms: req.now_ms,
                updated_ms: req.now_ms,
                summary: None,
                state: EpisodeState::default(),
            };
            tx.execute(
                "INSERT INTO episodes
                 (episode_id, owner, version, created_ms, updated_ms, state)
                 VALUES (?1, ?2, 0, ?3, ?3, ?4)",
                params![
                    meta.episode_id,
                    principal,
                    now,
                    encode(&meta.state, "an episode state")?
                ],
            )
            .map_err(sql)?;
            meta
        }
    };

    tx.execute(
        "INSERT OR REPLACE INTO claims
         (episode_id, principal, turn_id, expires_ms, owner, fingerprint)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            meta.episode_id,
            principal,
            req.turn_id,
            int(req.now_ms.saturating_add(req.lease_ms)),
            owner,
            req.fingerprint
        ],
    )
    .map_err(sql)?;
    // This turn now holds the episode's claim; a dead claim of another turn no longer does.
    tx.execute(
        "UPDATE episodes SET claimed_by = ?2 WHERE episode_id = ?1",
        params![meta.episode_id, req.turn_id],
    )
    .map_err(sql)?;
    tx.commit().map_err(sql)?;
    Ok(Claim::Claimed(meta))
}

/// Ends the claim `turn_id` holds on `episode_id`, if any: the episode is free, and the
/// turn id stays bound to it with its lease over, so the same request sent again runs
/// there. The episode no longer has a holder, so the released turn saves no checkpoint.
pub(crate) fn release(
    conn: &mut Connection,
    episode_id: &str,
    turn_id: &str,
) -> Result<(), StoreError> {
    let doing = "releasing a claim";
    let sql = |e| error::sql(doing, e);
    let tx = immediate(conn, doing)?;
    tx.execute(
        "UPDATE claims SET expires_ms = 0 WHERE episode_id = ?1 AND turn_id = ?2",
        params![episode_id, turn_id],
    )
    .map_err(sql)?;
    tx.execute(
        "UPDATE episodes SET claimed_by = NULL WHERE episode_id = ?1 AND claimed_by = ?2",
        params![episode_id, turn_id],
    )
    .map_err(sql)?;
    tx.commit().map_err(sql)
}

/// A commit that landed.
#[derive(Debug)]
pub(crate) struct Committed {
    /// The episode's new version.
    pub(crate) version: u64,
    /// Picture files no row names, the episode holding those pictures already: the caller
    /// removes them.
    pub(crate) unused: Vec<String>,
}

/// Commits a turn whose bodies and pictures are already written: `named` pairs each body's
/// key with its file (relative to `bodies_root`), `pictures` gives each distinct picture's
/// SHA-256, media type and file; `commit.bodies` and `commit.pictures` are not read. Checks
/// everything, then writes the rows, in one transaction.
pub(crate) fn commit(
    conn: &mut Connection,
    bodies_root: &Path,
    commit: &Commit,
    named: &[(String, String)],
    pictures: &[(String, String, String)],
) -> Result<Committed, StoreError> {
    let doing = "committing a turn";
    let sql = |e| error::sql(doing, e);
    let tx = immediate(conn, doing)?;
    let record = &commit.record;
    let principal = commit.principal.as_str();
    let episode = owned(&tx, &commit.principal, &record.episode_id)?;

    let in_order = episode.version == commit.expected_version
        && commit.expected_version.checked_add(1) == Some(record.seq);
    if !in_order {
        return Err(StoreError::Conflict);
    }
    let turn_taken: bool = tx
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM turns WHERE principal = ?1 AND turn_id = ?2)",
            params![principal, record.turn_id],
            |row| row.get(0),
        )
        .map_err(sql)?;
    let mut keys = HashSet::new();
    if turn_taken || !named.iter().all(|(key, _)| keys.insert(key.as_str())) {
        return Err(StoreError::Conflict);
    }
    for key in keys {
        let key_taken: bool = tx
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM bodies WHERE episode_id = ?1 AND key = ?2)",
                params![record.episode_id, key],
                |row| row.get(0),
            )
            .map_err(sql)?;
        if key_taken {
            return Err(StoreError::Conflict);
        }
    }
    let record_json = record
        .to_json()
        .map_err(|e| StoreError::Unavailable(e.to_string()))?;
    let state_json = encode(&commit.state, "an episode state")?;
    // A commit the disk cannot hold is refused before it writes anything: written, it
    // would fill the disk (the log keeps its size after the rollback) and leave no room
    // for the small writes that follow (the release, the next turns).
    let size = record_json.len() + state_json.len();
    room::check(bodies_root, room::written_bytes(size))?;

    for (key, file) in named {
        tx.execute(
            "INSERT INTO bodies (episode_id, key, path) VALUES (?1, ?2, ?3)",
            params![record.episode_id, key, file],
        )
        .map_err(sql)?;
    }
    // A picture is named by its content: one the episode already holds keeps its file.
    let mut unused = Vec::new();
    for (sha256, media_type, file) in pictures {
        let added = tx
            .execute(
                "INSERT INTO pictures (episode_id, sha256, media_type, path)
                 VALUES (?1, ?2, ?3, ?4) ON CONFLICT (episode_id, sha256) DO NOTHING",
                params![record.episode_id, sha256, media_type, file],
            )
            .map_err(sql)?;
        if added == 0 {
            unused.push(file.clone());
        }
    }
    tx.execute(
        "INSERT INTO turns (episode_id, seq, principal, turn_id, record)
         VALUES (?1, ?2, ?3, ?4, ?5)",
        params![
            record.episode_id,
            int(record.seq),
            principal,
            record.turn_id,
            record_json
        ],
    )
    .map_err(sql)?;
    // A due mark already there keeps its time: the queue is by how long an episode waited.
    tx.execute(
        "UPDATE episodes SET version = ?2, updated_ms = ?3, state = ?4,
             due_since_ms = CASE WHEN ?5 THEN coalesce(due_since_ms, ?3) ELSE due_since_ms END
         WHERE episode_id = ?1",
        params![
            record.episode_id,
            int(record.seq),
            int(record.created_ms),
            state_json,
            commit.compaction_due
        ],
    )
    .map_err(sql)?;
    tx.execute(
        "DELETE FROM claims WHERE principal = ?1 AND turn_id = ?2",
        params![principal, record.turn_id],
    )
    .map_err(sql)?;
    // A committed turn restarts from nothing: its checkpoint goes with its claim.
    tx.execute(
        "DELETE FROM checkpoints WHERE episode_id = ?1 AND turn_id = ?2",
        params![record.episode_id, record.turn_id],
    )
    .map_err(sql)?;
    tx.commit().map_err(sql)?;
    Ok(Committed {
        version: record.seq,
        unused,
    })
}

/// Saves (replacing) the checkpoint of `turn_id`, if it holds the episode's claim: it
/// claimed the episode last and its claim row is still there (not released, not
/// committed), whether or not its lease has run out. One statement (an upsert that selects
/// nothing otherwise), so the check and the write cannot be split by another writer.
pub(crate) fn save_checkpoint(
    conn: &Connection,
    episode_id: &str,
    turn_id: &str,
    checkpoint: &str,
) -> Result<(), StoreError> {
    let written = conn
        .execute(
            "INSERT INTO checkpoints (episode_id, turn_id, checkpoint)
             SELECT e.episode_id, c.turn_id, ?3
             FROM episodes e JOIN claims c
                 ON c.episode_id = e.episode_id AND c.principal = e.owner
             WHERE e.episode_id = ?1 AND e.claimed_by = ?2 AND c.turn_id = ?2
             ON CONFLICT (episode_id, turn_id) DO UPDATE
                 SET checkpoint = excluded.checkpoint",
            params![episode_id, turn_id, checkpoint],
        )
        .map_err(|e| error::sql("saving a checkpoint", e))?;
    if written == 0 {
        return Err(StoreError::Conflict);
    }
    Ok(())
}

/// The checkpoint `turn_id` saved on the episode, if any (a commit deletes it).
pub(crate) fn checkpoint(
    conn: &Connection,
    episode_id: &str,
    turn_id: &str,
) -> Result<Option<String>, StoreError> {
    conn.query_row(
        "SELECT checkpoint FROM checkpoints WHERE episode_id = ?1 AND turn_id = ?2",
        params![episode_id, turn_id],
        |row| row.get(0),
    )
    .optional()
    .map_err(|e| error::sql("reading a checkpoint", e))
}

/// Episode metadata, checked for ownership.
pub(crate) fn episode(
    conn: &Connection,
    principal: &Principal,
    episode_id: &str,
) -> Result<EpisodeMeta, StoreError> {
    owned(conn, principal, episode_id)
}

/// The last `limit` turns, oldest first, checked for ownership.
pub(crate) fn turns(
    conn: &mut Connection,
    principal: &Principal,
    episode_id: &str,
    limit: usize,
) -> Result<Vec<TurnRecord>, StoreError> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut records = owned_turns(
        conn,
        principal,
        episode_id,
        "SELECT record FROM turns WHERE episode_id = ?1 ORDER BY seq DESC LIMIT ?2",
        params![episode_id, limit],
    )?;
    records.reverse();
    Ok(records)
}

/// Up to `limit` turns after `after_seq`, oldest first, checked for ownership.
pub(crate) fn turns_after(
    conn: &mut Connection,
    principal: &Principal,
    episode_id: &str,
    after_seq: u64,
    limit: usize,
) -> Result<Vec<TurnRecord>, StoreError> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    owned_turns(
        conn,
        principal,
        episode_id,
        "SELECT record FROM turns WHERE episode_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
        params![episode_id, int(after_seq), limit],
    )
}

/// The turn records `query` selects from one of `principal`'s episodes, in its order. One
/// read transaction: the ownership check and the rows come from the same snapshot.
fn owned_turns(
    conn: &mut Connection,
    principal: &Principal,
    episode_id: &str,
    query: &str,
    params: impl rusqlite::Params,
) -> Result<Vec<TurnRecord>, StoreError> {
    let sql = |e| error::sql("reading turns", e);
    let tx = conn.transaction().map_err(sql)?;
    owned(&tx, principal, episode_id)?;
    let mut stmt = tx.prepare(query).map_err(sql)?;
    let rows = stmt
        .query_map(params, |row| row.get::<_, String>(0))
        .map_err(sql)?;
    let mut records = Vec::new();
    for json in rows {
        records.push(decode_record(&json.map_err(sql)?)?);
    }
    Ok(records)
}

/// Stores a summary and clears the due mark, if the episode is still at
/// `expected_version`; checked for ownership first, so another's episode is "not found".
pub(crate) fn save_summary(
    conn: &mut Connection,
    principal: &Principal,
    episode_id: &str,
    expected_version: u64,
    summary: &EpisodeSummary,
) -> Result<(), StoreError> {
    let doing = "saving a summary";
    let sql = |e| error::sql(doing, e);
    let json = serde_json::to_string(summary).map_err(|e| {
        tracing::warn!(error = %e, "embedded store: a summary does not serialize");
        StoreError::Unavailable("the summary could not be saved".into())
    })?;
    // The write lock first: no commit can slip in between the version check and the write.
    let tx = immediate(conn, doing)?;
    if owned(&tx, principal, episode_id)?.version != expected_version {
        return Err(StoreError::Conflict);
    }
    tx.execute(
        "UPDATE episodes SET summary = ?2, due_since_ms = NULL WHERE episode_id = ?1",
        params![episode_id, json],
    )
    .map_err(sql)?;
    tx.commit().map_err(sql)
}

/// Up to `limit` episodes due for compaction, longest due first (ties by id).
pub(crate) fn due_episodes(conn: &Connection, limit: usize) -> Result<Vec<DueEpisode>, StoreError> {
    let doing = "listing episodes due for compaction";
    let sql = |e| error::sql(doing, e);
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut stmt = conn
        .prepare(
            "SELECT episode_id, owner, due_since_ms FROM episodes
             WHERE due_since_ms IS NOT NULL
             ORDER BY due_since_ms, episode_id LIMIT ?1",
        )
        .map_err(sql)?;
    let rows = stmt
        .query_map(params![limit], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, i64>(2)?,
            ))
        })
        .map_err(sql)?;
    let mut due = Vec::new();
    for row in rows {
        let (episode_id, owner, since_ms) = row.map_err(sql)?;
        due.push(DueEpisode {
            episode_id,
            owner: Principal::new(&owner)
                .map_err(|e| error::undecodable("an episode owner", &e))?,
            since_ms: uint(since_ms, "a due time")?,
        });
    }
    Ok(due)
}

/// Where a body's file is, relative to the bodies folder, checked for ownership.
pub(crate) fn body_path(
    conn: &mut Connection,
    principal: &Principal,
    episode_id: &str,
    key: &str,
) -> Result<String, StoreError> {
    let doing = "reading a body";
    let tx = conn.transaction().map_err(|e| error::sql(doing, e))?;
    owned(&tx, principal, episode_id)?;
    tx.query_row(
        "SELECT path FROM bodies WHERE episode_id = ?1 AND key = ?2",
        params![episode_id, key],
        |row| row.get(0),
    )
    .optional()
    .map_err(|e| error::sql(doing, e))?
    .ok_or(StoreError::NotFound)
}

/// A picture's media type and where its file is, relative to the bodies folder, checked
/// for ownership.
pub(crate) fn picture_path(
    conn: &mut Connection,
    principal: &Principal,
    episode_id: &str,
    sha256: &str,
) -> Result<(String, String), StoreError> {
    let doing = "reading a picture";
    let tx = conn.transaction().map_err(|e| error::sql(doing, e))?;
    owned(&tx, principal, episode_id)?;
    tx.query_row(
        "SELECT media_type, path FROM pictures WHERE episode_id = ?1 AND sha256 = ?2",
        params![episode_id, sha256],
        |row| Ok((row.get(0)?, row.get(1)?)),
    )
    .optional()
    .map_err(|e| error::sql(doing, e))?
    .ok_or(StoreError::NotFound)
}

/// Takes the write lock and reads the store's tables, then lets go: what a claim needs,
/// without changing anything.
pub(crate) fn ready(conn: &mut Connection) -> Result<(), StoreError> {
    let doing = "checking the store";
    let tx = immediate(conn, doing)?;
    tx.query_row("SELECT count(*) FROM claims", [], |row| {
        row.get::<_, i64>(0)
    })
    .map_err(|e| error::sql(doing, e))?;
    tx.rollback().map_err(|e| error::sql(doing, e))
}
