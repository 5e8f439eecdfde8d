//! Long-term memories (D-43) in the store file: one row per memory (current or history)
//! with its vector beside it, a full-text index (FTS5, Porter stemming) over its subject
//! and text, and each principal's own setting.
//!
//! Similarity search compares the query with every current vector of the principal: a
//! turn's over the vectors the process keeps ([`super::recall_cache`]), each hit read back
//! from the file; one that reads the file's vectors (`search_vector`, a search of history)
//! takes about 7 ms at 10,000 memories (docs/benchmark.md, "Memory across conversations"),
//! most of it reading the vectors through SQLite's pages.
//! Forgetting deletes the rows and their index entries in one transaction, then merges the
//! index so that no segment keeps the erased words, with every deleted cell and freed page
//! zeroed (`secure_delete`); the write-ahead log, whose older frames still hold the words,
//! is then copied back and truncated. Erased text is gone from the files, not only
//! unreachable.

use std::sync::Arc;

use baton_core::Principal;
use baton_core::ports::memory::Both;
use baton_core::ports::store::StoreError;
use baton_core::recall::embed::{Embedding, LANES, Lanes};
use baton_core::recall::{
    Memory, MemoryFilter, MemoryId, MemoryKind, MemorySource, Origin, Saved, Scored, same_statement,
};
use rusqlite::{
    Connection, OptionalExtension, Row, ToSql, Transaction, TransactionBehavior, params,
};

use super::error;
use super::recall_cache::{CachedStatus, Shelf, Vectored, nearest};

/// The columns a memory is read from, in [`row_memory`]'s order.
const COLUMNS: &str = "m.id, m.kind, m.subject, m.text, m.origin, m.episode_id, m.turn_id, \
                       m.specialist, m.created_ms, m.expires_ms, m.replaced_by";

/// The filter's conditions on `m`, with its values from `?3` on (`?1` is the principal,
/// `?2` the statement's own first value).
const FILTERS: &str =
    "(?3 OR (m.replaced_by IS NULL AND (m.expires_ms IS NULL OR m.expires_ms > ?4)))
    AND (?5 = '' OR instr(?5, ',' || m.kind || ',') > 0)
    AND (?6 IS NULL OR m.created_ms >= ?6)
    AND (?7 IS NULL OR m.created_ms < ?7)
    AND (?8 IS NULL OR m.episode_id = ?8)
    AND (?9 IS NULL OR m.specialist = ?9)";

/// The filter's values for [`FILTERS`], `?3` to `?9`.
struct FilterValues {
    history: bool,
    now: i64,
    kinds: String,
    since: Option<i64>,
    until: Option<i64>,
    episode: Option<String>,
    specialist: Option<String>,
}

impl FilterValues {
    /// The statement's values in order: the principal (`?1`), the statement's own first
    /// value (`?2`), the filter's (`?3` to `?9`), then `rest` (`?10` on).
    fn bind<'a>(
        &'a self,
        principal: &'a dyn ToSql,
        first: &'a dyn ToSql,
        rest: &[&'a dyn ToSql],
    ) -> Vec<&'a dyn ToSql> {
        let mut all: Vec<&dyn ToSql> = vec![
            principal,
            first,
            &self.history,
            &self.now,
            &self.kinds,
            &self.since,
            &self.until,
            &self.episode,
            &self.specialist,
        ];
        all.extend_from_slice(rest);
        all
    }
}

fn values(filter: &MemoryFilter) -> FilterValues {
    let kinds = if filter.kinds.is_empty() {
        String::new()
    } else {
        let names: Vec<&str> = filter.kinds.iter().map(|k| k.as_str()).collect();
        format!(",{},", names.join(","))
    };
    FilterValues {
        history: filter.include_history,
        now: ms(filter.now_ms),
        kinds,
        since: filter.since_ms.map(ms),
        until: filter.until_ms.map(ms),
        episode: filter.episode_id.clone(),
        specialist: filter.specialist.clone(),
    }
}

fn ms(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn row_memory(row: &Row<'_>) -> rusqlite::Result<Memory> {
    let text_err = |i: usize, what: &str| {
        rusqlite::Error::FromSqlConversionFailure(
            i,
            rusqlite::types::Type::Text,
            format!("not a memory's {what}").into(),
        )
    };
    let id: String = row.get(0)?;
    let kind: String = row.get(1)?;
    let origin: String = row.get(4)?;
    let replaced_by: Option<String> = row.get(10)?;
    Ok(Memory {
        id: MemoryId::parse(&id).map_err(|_| text_err(0, "id"))?,
        kind: MemoryKind::parse(&kind).ok_or_else(|| text_err(1, "kind"))?,
        subject: row.get(2)?,
        text: row.get(3)?,
        origin: Origin::parse(&origin).ok_or_else(|| text_err(4, "origin"))?,
        source: MemorySource {
            episode_id: row.get(5)?,
            turn_id: row.get(6)?,
            specialist: row.get(7)?,
        },
        created_ms: u64::try_from(row.get::<_, i64>(8)?).unwrap_or_default(),
        expires_ms: row
            .get::<_, Option<i64>>(9)?
            .map(|v| u64::try_from(v).unwrap_or_default()),
        replaced_by: replaced_by
            .map(|id| MemoryId::parse(&id).map_err(|_| text_err(10, "replacement")))
            .transpose()?,
    })
}

/// A read's error: a row that does not decode is corrupt, anything else unavailable.
fn read_error(doing: &str, e: rusqlite::Error) -> StoreError {
    match e {
        rusqlite::Error::FromSqlConversionFailure(..) | rusqlite::Error::InvalidColumnType(..) => {
            StoreError::Corrupt(format!("{doing}: {e}"))
        }
        e => error::sql(doing, e),
    }
}

fn vector_bytes(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The cosine of a stored vector's bytes with `query` (both unit length, so their dot
/// product), read in place: a scan over thousands of rows allocates nothing per row.
fn cosine_bytes(bytes: &[u8], query: &[f32]) -> f32 {
    if bytes.len() != query.len() * 4 {
        return 0.0;
    }
    let mut lanes = Lanes::default();
    let mut chunk = [0f32; LANES];
    for (bytes, q) in bytes.chunks(LANES * 4).zip(query.chunks(LANES)) {
        for (x, c) in chunk.iter_mut().zip(bytes.chunks_exact(4)) {
            *x = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        }
        lanes.add(&chunk[..q.len()], q);
    }
    lanes.sum()
}

/// Saves a memory (see [`MemoryStore::save`](baton_core::ports::memory::MemoryStore::save)).
pub(crate) fn save(
    conn: &mut Connection,
    principal: &Principal,
    memory: &Memory,
    embedding: Option<&Embedding>,
    cap: usize,
) -> Result<Saved, StoreError> {
    let doing = "saving a memory";
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| error::sql(doing, e))?;
    let who = principal.as_str();
    let exists: bool = tx
        .query_row(
            "SELECT 1 FROM memories WHERE principal = ?1 AND id = ?2",
            params![who, memory.id.as_str()],
            |_| Ok(true),
        )
        .optional()
        .map_err(|e| error::sql(doing, e))?
        .unwrap_or(false);
    if exists {
        return Ok(Saved::Unchanged(memory.id.clone()));
    }
    let now = ms(memory.created_ms);
    let current: Option<(String, String)> = tx
        .query_row(
            "SELECT id, text FROM memories WHERE principal = ?1 AND subject = ?2
               AND replaced_by IS NULL AND (expires_ms IS NULL OR expires_ms > ?3)
             ORDER BY created_ms DESC LIMIT 1",
            params![who, memory.subject, now],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional()
        .map_err(|e| error::sql(doing, e))?;
    let mut replaced = None;
    if let Some((id, text)) = current {
        let id = MemoryId::parse(&id).map_err(|_| StoreError::Corrupt("a memory's id".into()))?;
        if same_statement(&text, &memory.text) {
            return Ok(Saved::Unchanged(id));
        }
        tx.execute(
            "UPDATE memories SET replaced_by = ?3 WHERE principal = ?1 AND id = ?2",
            params![who, id.as_str(), memory.id.as_str()],
        )
        .map_err(|e| error::sql(doing, e))?;
        replaced = Some(id);
    }
    let (model, vector) = match embedding {
        Some(e) => (Some(e.model.as_str()), Some(vector_bytes(&e.vector))),
        None => (None, None),
    };
    tx.execute(
        "INSERT INTO memories (principal, id, kind, subject, text, origin, episode_id,
            turn_id, specialist, created_ms, expires_ms, model, vector)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
        params![
            who,
            memory.id.as_str(),
            memory.kind.as_str(),
            memory.subject,
            memory.text,
            memory.origin.as_str(),
            memory.source.episode_id,
            memory.source.turn_id,
            memory.source.specialist,
            now,
            memory.expires_ms.map(ms),
            model,
            vector,
        ],
    )
    .map_err(|e| error::sql(doing, e))?;
    let rowid = tx.last_insert_rowid();
    tx.execute(
        "INSERT INTO memory_text (rowid, body) VALUES (?1, ?2)",
        params![rowid, format!("{} {}", memory.subject, memory.text)],
    )
    .map_err(|e| error::sql(doing, e))?;
    // What the cap lets go is deleted with the save, neither zeroed nor merged out of the
    // index at once as a user's erasure is (`forget`): the cap is housekeeping, and a user
    // at their cap must not pay an index rewrite on every save.
    let evicted = keep_under(&tx, who, now, cap)?;
    tx.commit().map_err(|e| error::sql(doing, e))?;
    Ok(Saved::New { replaced, evicted })
}

/// Erases the oldest memories (extracted first) until the principal holds `cap` current
/// ones at most.
fn keep_under(
    tx: &Transaction<'_>,
    who: &str,
    now: i64,
    cap: usize,
) -> Result<Vec<MemoryId>, StoreError> {
    let doing = "keeping memories under their cap";
    // Counted first from the index of unreplaced memories alone (expired ones included,
    // so never fewer than the current ones): a principal under their cap, the usual case,
    // costs no walk through their rows.
    let unreplaced: i64 = tx
        .query_row(
            "SELECT count(*) FROM memories INDEXED BY memories_by_subject
             WHERE principal = ?1 AND replaced_by IS NULL",
            params![who],
            |row| row.get(0),
        )
        .map_err(|e| error::sql(doing, e))?;
    if usize::try_from(unreplaced).unwrap_or(0) <= cap {
        return Ok(Vec::new());
    }
    let current: i64 = tx
        .query_row(
            "SELECT count(*) FROM memories WHERE principal = ?1 AND replaced_by IS NULL
               AND (expires_ms IS NULL OR expires_ms > ?2)",
            params![who, now],
            |row| row.get(0),
        )
        .map_err(|e| error::sql(doing, e))?;
    let over = usize::try_from(current).unwrap_or(0).saturating_sub(cap);
    if over == 0 {
        return Ok(Vec::new());
    }
    let mut statement = tx
        .prepare(
            "SELECT id FROM memories WHERE principal = ?1 AND replaced_by IS NULL
               AND (expires_ms IS NULL OR expires_ms > ?2)
             ORDER BY origin = 'extracted' DESC, created_ms, id LIMIT ?3",
        )
        .map_err(|e| error::sql(doing, e))?;
    let ids: Vec<String> = statement
        .query_map(
            params![who, now, i64::try_from(over).unwrap_or(i64::MAX)],
            |row| row.get(0),
        )
        .map_err(|e| error::sql(doing, e))?
        .collect::<Result<_, _>>()
        .map_err(|e| error::sql(doing, e))?;
    let mut evicted = Vec::with_capacity(ids.len());
    for id in ids {
        let id = MemoryId::parse(&id).map_err(|_| StoreError::Corrupt("a memory's id".into()))?;
        erase(tx, who, &id)?;
        evicted.push(id);
    }
    Ok(evicted)
}

/// Deletes `id` and every memory it replaced, transitively, with their index entries.
fn erase(tx: &Transaction<'_>, who: &str, id: &MemoryId) -> Result<u64, StoreError> {
    let doing = "forgetting a memory";
    let chain = "WITH RECURSIVE chain(id) AS (
            SELECT id FROM memories WHERE principal = ?1 AND id = ?2
            UNION SELECT m.id FROM memories m JOIN chain c ON m.replaced_by = c.id
            WHERE m.principal = ?1)";
    tx.execute(
        &format!(
            "{chain} DELETE FROM memory_text WHERE rowid IN (
                SELECT rowid FROM memories WHERE principal = ?1 AND id IN (SELECT id FROM chain))"
        ),
        params![who, id.as_str()],
    )
    .map_err(|e| error::sql(doing, e))?;
    let removed = tx
        .execute(
            &format!(
                "{chain} DELETE FROM memories WHERE principal = ?1 AND id IN (SELECT id FROM chain)"
            ),
            params![who, id.as_str()],
        )
        .map_err(|e| error::sql(doing, e))?;
    Ok(removed as u64)
}

/// Merges the full-text index's segments into one, which drops the entries of deleted
/// rows instead of only marking them.
fn merge_index(tx: &Transaction<'_>) -> Result<(), StoreError> {
    tx.execute(
        "INSERT INTO memory_text (memory_text) VALUES ('optimize')",
        [],
    )
    .map(drop)
    .map_err(|e| error::sql("merging the memory index", e))
}

/// One memory of the principal.
pub(crate) fn memory(
    conn: &Connection,
    principal: &Principal,
    id: &MemoryId,
) -> Result<Option<Memory>, StoreError> {
    conn.query_row(
        &format!("SELECT {COLUMNS} FROM memories m WHERE m.principal = ?1 AND m.id = ?2"),
        params![principal.as_str(), id.as_str()],
        row_memory,
    )
    .optional()
    .map_err(|e| read_error("reading a memory", e))
}

/// The memories the filter admits, newest first.
pub(crate) fn list(
    conn: &Connection,
    principal: &Principal,
    filter: &MemoryFilter,
    limit: usize,
) -> Result<Vec<Memory>, StoreError> {
    let doing = "listing memories";
    let v = values(filter);
    let mut statement = conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM memories m WHERE m.principal = ?1 AND ?2 AND {FILTERS}
             ORDER BY m.created_ms DESC, m.id LIMIT ?10"
        ))
        .map_err(|e| error::sql(doing, e))?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = statement
        .query_map(
            v.bind(&principal.as_str(), &true, &[&limit]).as_slice(),
            row_memory,
        )
        .map_err(|e| error::sql(doing, e))?;
    rows.collect::<Result<Vec<_>, _>>()
        .map_err(|e| read_error(doing, e))
}

/// The FTS5 query of `terms`: each one a quoted string (a quote in it doubled), joined by
/// OR, so that nothing in a term is read as query syntax. `None` when no term has a word.
fn match_query(terms: &[String]) -> Option<String> {
    let quoted: Vec<String> = terms
        .iter()
        .filter(|t| t.chars().any(char::is_alphanumeric))
        .map(|t| format!("\"{}\"", t.replace('"', "\"\"")))
        .collect();
    (!quoted.is_empty()).then(|| quoted.join(" OR "))
}

/// Full-text search, most relevant first (FTS5's BM25, negated so that higher is better).
pub(crate) fn search_text(
    conn: &Connection,
    principal: &Principal,
    terms: &[String],
    filter: &MemoryFilter,
    limit: usize,
) -> Result<Vec<Scored>, StoreError> {
    let doing = "searching memories";
    let Some(query) = match_query(terms) else {
        return Ok(Vec::new());
    };
    let v = values(filter);
    let mut statement = conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS}, bm25(memory_text) FROM memory_text
               JOIN memories m ON m.rowid = memory_text.rowid
             WHERE memory_text MATCH ?2 AND m.principal = ?1 AND {FILTERS}
             ORDER BY bm25(memory_text), m.created_ms DESC LIMIT ?10"
        ))
        .map_err(|e| error::sql(doing, e))?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = statement
        .query_map(
            v.bind(&principal.as_str(), &query, &[&limit]).as_slice(),
            |row| {
                Ok(Scored {
                    memory: row_memory(row)?,
                    score: -(row.get::<_, f64>(11)? as f32),
                })
            },
        )
        .map_err(|e| error::sql(doing, e))?;
    rows.collect::<Result<Vec<_>, _>>()
        .map_err(|e| read_error(doing, e))
}

/// Similarity search over the principal's vectors of the query's model.
pub(crate) fn search_vector(
    conn: &Connection,
    principal: &Principal,
    query: &Embedding,
    filter: &MemoryFilter,
    limit: usize,
) -> Result<Vec<Scored>, StoreError> {
    let doing = "searching memories by similarity";
    let v = values(filter);
    let mut statement = conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS}, m.vector FROM memories m
             WHERE m.principal = ?1 AND m.model = ?2 AND m.vector IS NOT NULL AND {FILTERS}"
        ))
        .map_err(|e| error::sql(doing, e))?;
    let mut rows = statement
        .query(v.bind(&principal.as_str(), &query.model, &[]).as_slice())
        .map_err(|e| error::sql(doing, e))?;
    // The best `limit` so far, kept small: only their memories are decoded in the end.
    let mut best: Vec<(f32, usize)> = Vec::new();
    let mut kept: Vec<Memory> = Vec::new();
    while let Some(row) = rows.next().map_err(|e| error::sql(doing, e))? {
        let bytes = row
            .get_ref(11)
            .and_then(|v| v.as_blob().map_err(Into::into))
            .map_err(|e| read_error(doing, e))?;
        let score = cosine_bytes(bytes, &query.vector);
        if best.len() >= limit && best.last().is_some_and(|(s, _)| *s >= score) {
            continue;
        }
        let memory = row_memory(row).map_err(|e| read_error(doing, e))?;
        kept.push(memory);
        best.push((score, kept.len() - 1));
        best.sort_by(|a, b| b.0.total_cmp(&a.0));
        best.truncate(limit);
    }
    Ok(best
        .into_iter()
        .filter_map(|(score, i)| {
            kept.get(i).map(|m| Scored {
                memory: m.clone(),
                score,
            })
        })
        .collect())
}

/// Forgets one memory and its history; how many items went.
pub(crate) fn forget(
    conn: &mut Connection,
    principal: &Principal,
    id: &MemoryId,
) -> Result<u64, StoreError> {
    erasing(conn, "forgetting a memory", |tx| {
        erase(tx, principal.as_str(), id)
    })
}

/// Forgets every memory of the principal; how many items went.
pub(crate) fn forget_all(conn: &mut Connection, principal: &Principal) -> Result<u64, StoreError> {
    let doing = "forgetting every memory";
    erasing(conn, doing, |tx| {
        tx.execute(
            "DELETE FROM memory_text WHERE rowid IN
                (SELECT rowid FROM memories WHERE principal = ?1)",
            params![principal.as_str()],
        )
        .map_err(|e| error::sql(doing, e))?;
        tx.execute(
            "DELETE FROM memories WHERE principal = ?1",
            params![principal.as_str()],
        )
        .map(|n| n as u64)
        .map_err(|e| error::sql(doing, e))
    })
}

/// Runs an erasure: in one transaction with every deleted cell and freed page zeroed, the
/// index merged after it, then the write-ahead log copied back and truncated (its older
/// frames hold the erased words too). A log that readers keep from truncating now is
/// truncated by a later erasure or checkpoint; the rows are gone either way.
fn erasing(
    conn: &mut Connection,
    doing: &str,
    job: impl FnOnce(&Transaction<'_>) -> Result<u64, StoreError>,
) -> Result<u64, StoreError> {
    conn.pragma_update(None, "secure_delete", "ON")
        .map_err(|e| error::sql(doing, e))?;
    let erased = (|| {
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| error::sql(doing, e))?;
        let removed = job(&tx)?;
        if removed > 0 {
            merge_index(&tx)?;
        }
        tx.commit().map_err(|e| error::sql(doing, e))?;
        Ok(removed)
    })();
    // Back to the store's usual setting (schema::open), whatever happened.
    let _ = conn.pragma_update(None, "secure_delete", "FAST");
    let removed = erased?;
    if removed > 0 {
        match conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |row| {
            row.get::<_, i64>(0)
        }) {
            Ok(0) => {}
            Ok(_) => tracing::info!(
                "embedded store: readers kept the log from being truncated after an erasure"
            ),
            Err(e) => {
                tracing::warn!(error = %e, "embedded store: the log was not truncated after an erasure")
            }
        }
    }
    Ok(removed)
}

/// The principal's own setting.
pub(crate) fn setting(
    conn: &Connection,
    principal: &Principal,
) -> Result<Option<bool>, StoreError> {
    conn.query_row(
        "SELECT enabled FROM memory_settings WHERE principal = ?1",
        params![principal.as_str()],
        |row| row.get::<_, bool>(0),
    )
    .optional()
    .map_err(|e| read_error("reading a memory setting", e))
}

/// The principal's setting and until when they hold a current memory, in one statement
/// (what [`super::recall_cache`] keeps).
pub(crate) fn status(conn: &Connection, principal: &Principal) -> Result<CachedStatus, StoreError> {
    let (setting, held_until) = conn
        .prepare_cached(
            "SELECT s.enabled, CASE
                 WHEN EXISTS (SELECT 1 FROM memories WHERE principal = ?1
                                AND replaced_by IS NULL AND expires_ms IS NULL)
                 THEN -1
                 ELSE coalesce((SELECT max(expires_ms) FROM memories
                                WHERE principal = ?1 AND replaced_by IS NULL), 0)
               END
             FROM (SELECT 1) LEFT JOIN memory_settings s ON s.principal = ?1",
        )
        .and_then(|mut statement| {
            statement.query_row(params![principal.as_str()], |row| {
                Ok((row.get::<_, Option<bool>>(0)?, row.get::<_, i64>(1)?))
            })
        })
        .map_err(|e| read_error("reading a principal's memory status", e))?;
    Ok(CachedStatus {
        setting,
        // -1: a current memory that never ends.
        held_until: u64::try_from(held_until).unwrap_or(u64::MAX),
    })
}

/// Every current memory of the principal that has a vector, with it (what
/// [`super::recall_cache`] keeps for similarity search).
pub(crate) fn shelf(conn: &Connection, principal: &Principal) -> Result<Vec<Vectored>, StoreError> {
    let doing = "reading memory vectors";
    let mut statement = conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS}, m.model, m.vector FROM memories m
             WHERE m.principal = ?1 AND m.replaced_by IS NULL AND m.vector IS NOT NULL"
        ))
        .map_err(|e| error::sql(doing, e))?;
    let rows = statement
        .query_map(params![principal.as_str()], |row| {
            let bytes = row.get_ref(12)?.as_blob()?;
            Ok(Vectored {
                memory: row_memory(row)?,
                model: row.get(11)?,
                vector: bytes
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect(),
            })
        })
        .map_err(|e| error::sql(doing, e))?;
    rows.collect::<Result<Vec<_>, _>>()
        .map_err(|e| read_error(doing, e))
}

/// Both searches on one connection: the text's by FTS5; the vector's over `cached` (the
/// principal's shelf, read now if it was not cached and then returned to be kept), each
/// hit read back from the file (a stale shelf never returns a memory since erased or
/// replaced). A search of history reads the file's vectors instead.
pub(crate) fn search_both(
    conn: &Connection,
    principal: &Principal,
    terms: &[String],
    query: Option<&Embedding>,
    filter: &MemoryFilter,
    limit: usize,
    cached: Option<Shelf>,
) -> Result<(Both, Option<Shelf>), StoreError> {
    let by_text = search_text(conn, principal, terms, filter, limit)?;
    let Some(query) = query else {
        return Ok((
            Both {
                by_text,
                by_vector: Vec::new(),
            },
            None,
        ));
    };
    if filter.include_history {
        let by_vector = search_vector(conn, principal, query, filter, limit)?;
        return Ok((Both { by_text, by_vector }, None));
    }
    let (shelf, read_now) = match cached {
        Some(shelf) => (shelf, false),
        None => (Arc::new(shelf(conn, principal)?), true),
    };
    let mut by_vector = Vec::new();
    for (score, memory) in nearest(&shelf, &query.model, &query.vector, filter, limit) {
        if let Some(fresh) = self::memory(conn, principal, &memory.id)?
            && filter.admits(&fresh)
        {
            by_vector.push(Scored {
                memory: fresh,
                score,
            });
        }
    }
    Ok((Both { by_text, by_vector }, read_now.then_some(shelf)))
}

/// Sets or clears the principal's own setting.
pub(crate) fn set_setting(
    conn: &Connection,
    principal: &Principal,
    enabled: Option<bool>,
) -> Result<(), StoreError> {
    let doing = "saving a memory setting";
    match enabled {
        Some(on) => conn.execute(
            "INSERT INTO memory_settings (principal, enabled) VALUES (?1, ?2)
             ON CONFLICT (principal) DO UPDATE SET enabled = ?2",
            params![principal.as_str(), on],
        ),
        None => conn.execute(
            "DELETE FROM memory_settings WHERE principal = ?1",
            params![principal.as_str()],
        ),
    }
    .map(drop)
    .map_err(|e| error::sql(doing, e))
}
