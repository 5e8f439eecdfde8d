//! Saving a memory: the check for the same words, the replacement of its subject's current
//! memory, the postings and the vector, the transaction, and the cap (see the module docs
//! for the requests and the order they come in).

use aws_sdk_dynamodb::types::{Put, TransactWriteItem, Update};
use baton_core::Principal;
use baton_core::ports::store::StoreError;
use baton_core::recall::embed::Embedding;
use baton_core::recall::{Memory, MemoryId, Origin, Saved};

use super::DynamoMemory;
use super::error;
use super::items::{self, Item, Pointer, n, s};
use super::keys;
use super::table::Outcome;

/// How many times a save reads again after a concurrent write moved what it checked.
pub(crate) const ATTEMPTS: u32 = 4;

/// What the save found before writing.
struct Seen {
    /// The memory's own id is already saved.
    exists: bool,
    /// The subject's pointer.
    pointer: Option<Pointer>,
}

impl DynamoMemory {
    /// Saves `memory` (see [`baton_core::ports::memory::MemoryStore::save`]).
    pub(crate) async fn save_memory(
        &self,
        principal: &Principal,
        memory: &Memory,
        embedding: Option<&Embedding>,
        cap: usize,
    ) -> Result<Saved, StoreError> {
        let doing = "saving a memory";
        let pseudonym = keys::pseudonym(principal.as_str());
        let stems = items::stems(memory);
        let vector = embedding.filter(|e| self.fits_index(e));
        if let (Some(e), None) = (embedding, vector) {
            tracing::warn!(
                model = %e.model,
                dimensions = e.vector.len(),
                index_dimensions = self.config.dimensions,
                "memory: a vector the index cannot hold is not stored"
            );
        }
        let mut indexed = false;
        for _ in 0..ATTEMPTS {
            let seen = self.seen(principal, memory).await?;
            if seen.exists {
                return Ok(Saved::Unchanged(memory.id.clone()));
            }
            let live = seen
                .pointer
                .as_ref()
                .filter(|p| p.live_at(memory.created_ms));
            if let Some(current) = live
                && current.statement == items::statement_hash(&memory.text)
            {
                if indexed {
                    // This attempt's postings and vector belong to no saved memory.
                    self.unindex(principal, &pseudonym, memory, &stems).await;
                }
                return Ok(Saved::Unchanged(current.current.clone()));
            }
            let replaced = live.map(|p| p.current.clone());
            if !indexed {
                // Postings first, then the vector: a vector a failed save leaves behind
                // always has a posting that names it, which erasing everything finds.
                let postings = stems
                    .iter()
                    .map(|stem| items::posting_item(principal, stem, memory))
                    .collect();
                self.put_many(postings, doing).await?;
                if let Some(e) = vector {
                    self.put_vector(&pseudonym, memory, e).await?;
                }
                indexed = true;
            }
            let writes = transaction(
                self.config.table.as_str(),
                principal,
                memory,
                &stems,
                vector.map(|e| e.model.as_str()),
                seen.pointer.as_ref(),
                replaced.as_ref(),
            )?;
            match self.transact(writes, doing).await? {
                Outcome::ConditionFailed => continue,
                Outcome::Written => {}
            }
            if let Some(old) = &replaced
                && let Err(e) = self.retire_vector(&pseudonym, old.as_str()).await
            {
                // Search checks every hit against its item, so the old vector is never
                // read as current; it only takes a place in the top K until erased.
                tracing::warn!(error = %e, "memory: a replaced vector stays marked current");
            }
            let evicted = self.keep_under(principal, memory.created_ms, cap).await;
            return Ok(Saved::New { replaced, evicted });
        }
        Err(error::gave_up(doing))
    }

    /// The memory's own item and its subject's pointer (1 BatchGetItem).
    async fn seen(&self, principal: &Principal, memory: &Memory) -> Result<Seen, StoreError> {
        let wanted = vec![
            items::key(principal, keys::item_sk(memory.id.as_str())),
            items::key(principal, keys::subject_sk(&memory.subject)),
        ];
        let found = self.get_many(wanted, "saving a memory").await?;
        let mut seen = Seen {
            exists: false,
            pointer: None,
        };
        for item in &found {
            match items::string(item, keys::SK) {
                Some(sk) if sk.starts_with(keys::ITEM_PREFIX) => {
                    seen.exists = items::string(item, keys::OWNER) == Some(principal.as_str());
                }
                Some(sk) if sk.starts_with(keys::SUBJECT_PREFIX) => {
                    seen.pointer = Some(items::pointer(item)?);
                }
                _ => {}
            }
        }
        Ok(seen)
    }

    /// Removes what an attempt wrote for a memory that was not saved after all. Best
    /// effort: what stays names no saved memory, and erasing everything removes it.
    async fn unindex(
        &self,
        principal: &Principal,
        pseudonym: &str,
        memory: &Memory,
        stems: &[String],
    ) {
        let postings = stems
            .iter()
            .map(|stem| items::key(principal, keys::term_sk(stem, memory.id.as_str())))
            .collect();
        let removed = self
            .delete_many(postings, "undoing a memory's postings")
            .await;
        let unvectored = self
            .delete_vectors(pseudonym, &[memory.id.as_str().to_owned()])
            .await;
        if let Err(e) = removed.and(unvectored) {
            tracing::warn!(error = %e, "memory: an unsaved memory's index entries stay");
        }
    }

    /// Past `cap` current memories, erases the oldest extracted ones, then the oldest said
    /// (1 GetItem of the count; past the cap, 1 Query per MB of memories and an erasure
    /// per memory let go). A failure is logged and left to the next save.
    async fn keep_under(&self, principal: &Principal, now_ms: u64, cap: usize) -> Vec<MemoryId> {
        match self.over_cap(principal, now_ms, cap).await {
            Ok(doomed) => {
                let mut evicted = Vec::with_capacity(doomed.len());
                for id in doomed {
                    match self.erase(principal, &id).await {
                        Ok(_) => evicted.push(id),
                        Err(e) => {
                            tracing::warn!(error = %e, "memory: eviction left to the next save");
                            break;
                        }
                    }
                }
                evicted
            }
            Err(e) => {
                tracing::warn!(error = %e, "memory: the cap's check left to the next save");
                Vec::new()
            }
        }
    }

    /// The memories to let go for the cap, in the order they go.
    async fn over_cap(
        &self,
        principal: &Principal,
        now_ms: u64,
        cap: usize,
    ) -> Result<Vec<MemoryId>, StoreError> {
        let doing = "keeping memories under their cap";
        let count = self
            .get(items::key(principal, keys::COUNT.to_owned()), doing)
            .await?;
        let live = count
            .as_ref()
            .map(|c| items::signed(c, keys::LIVE))
            .transpose()?
            .flatten()
            .unwrap_or(0);
        if usize::try_from(live).unwrap_or(0) <= cap {
            return Ok(Vec::new());
        }
        let all = self
            .query_prefix(
                keys::partition(principal.as_str()),
                keys::ITEM_PREFIX.to_owned(),
                &[
                    keys::OWNER,
                    keys::ORIGIN,
                    keys::CREATED_MS,
                    keys::EXPIRES_MS,
                    keys::REPLACED_BY,
                ],
                doing,
            )
            .await?;
        let mut current: Vec<(bool, u64, MemoryId)> = Vec::new();
        for item in &all {
            let replaced = item.contains_key(keys::REPLACED_BY);
            let expired = items::number(item, keys::EXPIRES_MS)?.is_some_and(|end| end <= now_ms);
            let sk = items::string(item, keys::SK).unwrap_or_default();
            let Some(id) = sk
                .strip_prefix(keys::ITEM_PREFIX)
                .and_then(|id| MemoryId::parse(id).ok())
            else {
                continue;
            };
            if replaced || expired {
                continue;
            }
            let said = items::string(item, keys::ORIGIN) == Some(Origin::Said.as_str());
            let created = items::number(item, keys::CREATED_MS)?.unwrap_or(0);
            current.push((said, created, id));
        }
        let over = current.len().saturating_sub(cap);
        // Extracted first (false sorts before true), oldest first.
        current.sort();
        Ok(current
            .into_iter()
            .take(over)
            .map(|(_, _, id)| id)
            .collect())
    }
}

/// The save's transaction: the memory, its subject's pointer (on the condition that it
/// still points where it was read to), the replaced memory's `replaced_by` or, when none
/// is replaced, one more in the count.
fn transaction(
    table: &str,
    principal: &Principal,
    memory: &Memory,
    stems: &[String],
    model: Option<&str>,
    pointer: Option<&Pointer>,
    replaced: Option<&MemoryId>,
) -> Result<Vec<TransactWriteItem>, StoreError> {
    let put = |item: Item, condition: &str, values: Vec<(&str, String)>| {
        let mut put = Put::builder()
            .table_name(table)
            .set_item(Some(item))
            .condition_expression(condition);
        // DynamoDB refuses a name the expression does not use.
        for (alias, name) in [("#pk", keys::PK), ("#current", keys::CURRENT)] {
            if condition.contains(alias) {
                put = put.expression_attribute_names(alias, name);
            }
        }
        for (name, value) in values {
            put = put.expression_attribute_values(name, s(value));
        }
        put.build()
            .map(|p| TransactWriteItem::builder().put(p).build())
            .map_err(|e| error::build(&e))
    };
    let mut writes = vec![
        put(
            items::memory_item(principal, memory, stems, model, replaced),
            "attribute_not_exists(#pk)",
            Vec::new(),
        )?,
        match pointer {
            Some(p) => put(
                items::pointer_item(principal, memory),
                "#current = :expected",
                vec![(":expected", p.current.as_str().to_owned())],
            )?,
            None => put(
                items::pointer_item(principal, memory),
                "attribute_not_exists(#pk)",
                Vec::new(),
            )?,
        },
    ];
    let update = match replaced {
        Some(old) => Update::builder()
            .table_name(table)
            .set_key(Some(items::key(principal, keys::item_sk(old.as_str()))))
            .update_expression("SET #replaced_by = :new")
            .condition_expression("attribute_exists(#pk) AND attribute_not_exists(#replaced_by)")
            .expression_attribute_names("#pk", keys::PK)
            .expression_attribute_names("#replaced_by", keys::REPLACED_BY)
            .expression_attribute_values(":new", s(memory.id.as_str())),
        None => Update::builder()
            .table_name(table)
            .set_key(Some(items::key(principal, keys::COUNT.to_owned())))
            // ADD, never a read-modify-write: concurrent saves each add their one.
            .update_expression("ADD #live :one SET #owner = :owner")
            .expression_attribute_names("#live", keys::LIVE)
            .expression_attribute_names("#owner", keys::OWNER)
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":owner", s(principal.as_str())),
    };
    writes.push(
        update
            .build()
            .map(|u| TransactWriteItem::builder().update(u).build())
            .map_err(|e| error::build(&e))?,
    );
    Ok(writes)
}
