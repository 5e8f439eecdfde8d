//! Erasing: one memory with the history it replaced (forget, the cap's eviction), or all
//! of a principal's memory. Postings and vectors go first, history items oldest first,
//! the memory itself last, so that a failure part way leaves what is left reachable from
//! the memory and a retry finishes the job.

use std::collections::BTreeSet;

use aws_sdk_dynamodb::types::{AttributeValue, Delete, TransactWriteItem, Update};
use baton_core::Principal;
use baton_core::ports::store::StoreError;
use baton_core::recall::MemoryId;

use super::DynamoMemory;
use super::error;
use super::items::{self, Item, Stored, s};
use super::keys;
use super::save::ATTEMPTS;
use super::table::Outcome;

impl DynamoMemory {
    /// Erases `id` and the memories it replaced, transitively; how many items went.
    pub(crate) async fn erase(
        &self,
        principal: &Principal,
        id: &MemoryId,
    ) -> Result<u64, StoreError> {
        let doing = "forgetting a memory";
        let pseudonym = keys::pseudonym(principal.as_str());
        let mut erased_before = 0;
        for _ in 0..ATTEMPTS {
            let Some(head) = self.stored(principal, id, doing).await? else {
                return Ok(erased_before);
            };
            let subject = items::key(principal, keys::subject_sk(&head.memory.subject));
            let (pointer, history) = tokio::try_join!(
                self.get(subject, doing),
                self.history(principal, head.replaces.clone(), doing)
            )?;
            let pointer = pointer.as_ref().map(items::pointer).transpose()?;
            let chain: Vec<&Stored> = std::iter::once(&head).chain(&history).collect();

            let postings: Vec<Item> = chain
                .iter()
                .flat_map(|m| {
                    m.stems.iter().map(|stem| {
                        items::key(principal, keys::term_sk(stem, m.memory.id.as_str()))
                    })
                })
                .collect();
            let vectored: Vec<String> = chain
                .iter()
                .filter(|m| m.model.is_some())
                .map(|m| m.memory.id.as_str().to_owned())
                .collect();
            self.delete_many(postings, doing).await?;
            self.delete_vectors(&pseudonym, &vectored).await?;
            // Oldest first: what a failure leaves is still a chain from the memory.
            let older: Vec<Item> = history
                .iter()
                .rev()
                .map(|m| items::key(principal, keys::item_sk(m.memory.id.as_str())))
                .collect();
            self.delete_many(older, doing).await?;
            erased_before += history.len() as u64;

            let points_here = pointer.is_some_and(|p| p.current == head.memory.id);
            let writes = last_writes(&self.config.table, principal, &head, points_here)?;
            match self.transact(writes, doing).await? {
                Outcome::Written => return Ok(erased_before + 1),
                // Replaced or erased meanwhile: read it again.
                Outcome::ConditionFailed => continue,
            }
        }
        Err(error::gave_up(doing))
    }

    /// One memory item of the principal, decoded (1 GetItem).
    pub(crate) async fn stored(
        &self,
        principal: &Principal,
        id: &MemoryId,
        doing: &'static str,
    ) -> Result<Option<Stored>, StoreError> {
        let item = self
            .get(items::key(principal, keys::item_sk(id.as_str())), doing)
            .await?;
        match item {
            Some(item) => items::stored(&item, principal),
            None => Ok(None),
        }
    }

    /// The memories that `first` starts, following what each replaced, newest first
    /// (1 GetItem each; the walk ends at one already erased).
    async fn history(
        &self,
        principal: &Principal,
        first: Option<MemoryId>,
        doing: &'static str,
    ) -> Result<Vec<Stored>, StoreError> {
        let mut chain: Vec<Stored> = Vec::new();
        let mut next = first;
        while let Some(id) = next {
            // A chain never loops (each memory replaces an older one), but a damaged
            // table must not make this spin.
            if chain.iter().any(|m| m.memory.id == id) {
                break;
            }
            let Some(older) = self.stored(principal, &id, doing).await? else {
                break;
            };
            next = older.replaces.clone();
            chain.push(older);
        }
        Ok(chain)
    }

    /// Erases every memory of the principal, history included; how many memory items
    /// went. Their setting stays.
    pub(crate) async fn erase_all(&self, principal: &Principal) -> Result<u64, StoreError> {
        let doing = "forgetting every memory";
        let pseudonym = keys::pseudonym(principal.as_str());
        let found = self
            .query_prefix(
                keys::partition(principal.as_str()),
                keys::DATA_PREFIX.to_owned(),
                &[],
                doing,
            )
            .await?;
        let mut memories: Vec<Item> = Vec::new();
        let mut others: Vec<Item> = Vec::new();
        // Every id a memory item or a posting names: a vector a failed save left has a
        // posting (postings are written before the vector).
        let mut ids: BTreeSet<String> = BTreeSet::new();
        for item in &found {
            let Some(sk) = items::string(item, keys::SK) else {
                continue;
            };
            let key = items::key(principal, sk.to_owned());
            if let Some(id) = sk.strip_prefix(keys::ITEM_PREFIX) {
                ids.insert(id.to_owned());
                memories.push(key);
            } else {
                if let Some(id) = keys::posting_id(sk) {
                    ids.insert(id.to_owned());
                }
                others.push(key);
            }
        }
        let ids: Vec<String> = ids.into_iter().collect();
        self.delete_vectors(&pseudonym, &ids).await?;
        self.delete_many(others, doing).await?;
        let count = memories.len() as u64;
        self.delete_many(memories, doing).await?;
        Ok(count)
    }
}

/// The erasure's transaction: the memory (as it was read: a concurrent replacement makes
/// it read again), its subject's pointer when it points at it, and one fewer in the count
/// when nothing had replaced it.
fn last_writes(
    table: &str,
    principal: &Principal,
    head: &Stored,
    points_here: bool,
) -> Result<Vec<TransactWriteItem>, StoreError> {
    let memory = Delete::builder()
        .table_name(table)
        .set_key(Some(items::key(
            principal,
            keys::item_sk(head.memory.id.as_str()),
        )))
        .expression_attribute_names("#pk", keys::PK)
        .expression_attribute_names("#replaced_by", keys::REPLACED_BY);
    let memory = match &head.memory.replaced_by {
        Some(by) => memory
            .condition_expression("attribute_exists(#pk) AND #replaced_by = :by")
            .expression_attribute_values(":by", s(by.as_str())),
        None => memory
            .condition_expression("attribute_exists(#pk) AND attribute_not_exists(#replaced_by)"),
    };
    let mut writes = vec![
        TransactWriteItem::builder()
            .delete(memory.build().map_err(|e| error::build(&e))?)
            .build(),
    ];
    if points_here {
        let pointer = Delete::builder()
            .table_name(table)
            .set_key(Some(items::key(
                principal,
                keys::subject_sk(&head.memory.subject),
            )))
            .condition_expression("#current = :id")
            .expression_attribute_names("#current", keys::CURRENT)
            .expression_attribute_values(":id", s(head.memory.id.as_str()))
            .build()
            .map_err(|e| error::build(&e))?;
        writes.push(TransactWriteItem::builder().delete(pointer).build());
    }
    if head.memory.replaced_by.is_none() {
        let count = Update::builder()
            .table_name(table)
            .set_key(Some(items::key(principal, keys::COUNT.to_owned())))
            .update_expression("ADD #live :minus_one")
            .expression_attribute_names("#live", keys::LIVE)
            .expression_attribute_values(":minus_one", AttributeValue::N("-1".to_owned()))
            .build()
            .map_err(|e| error::build(&e))?;
        writes.push(TransactWriteItem::builder().update(count).build());
    }
    Ok(writes)
}
