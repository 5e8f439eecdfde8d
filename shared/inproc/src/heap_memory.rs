//! [`HeapMemory`]: long-term memories (D-43) kept on the process's heap, gone when it
//! ends. Text search ranks by how many of the query's terms a memory holds (rarer terms
//! count more); similarity search compares every vector of the principal. Each eval case
//! and test gets its own.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use baton_core::Principal;
use baton_core::ports::memory::{MemoryStore, Status};
use baton_core::ports::store::StoreError;
use baton_core::recall::embed::{Embedding, cosine};
use baton_core::recall::{
    Memory, MemoryFilter, MemoryId, Origin, Saved, Scored, same_statement, terms,
};

/// Memories on the heap.
#[derive(Debug, Default)]
pub struct HeapMemory {
    principals: Mutex<HashMap<Principal, Shelf>>,
}

#[derive(Debug, Default)]
struct Shelf {
    /// Every item, current and history, in save order.
    items: Vec<Item>,
    setting: Option<bool>,
}

#[derive(Debug)]
struct Item {
    memory: Memory,
    embedding: Option<Embedding>,
    /// The stems of its text, for text search.
    stems: Vec<String>,
}

impl HeapMemory {
    /// An empty one.
    pub fn new() -> Self {
        HeapMemory::default()
    }

    fn with<T>(&self, principal: &Principal, f: impl FnOnce(&mut Shelf) -> T) -> T {
        let mut all = self
            .principals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(all.entry(principal.clone()).or_default())
    }
}

/// Removes `id` and the history it replaced, transitively; how many items went.
fn erase(shelf: &mut Shelf, id: &MemoryId) -> u64 {
    let mut doomed = vec![id.clone()];
    let mut i = 0;
    while let Some(next) = doomed.get(i).cloned() {
        for item in &shelf.items {
            if item.memory.replaced_by.as_ref() == Some(&next) && !doomed.contains(&item.memory.id)
            {
                doomed.push(item.memory.id.clone());
            }
        }
        i += 1;
    }
    let before = shelf.items.len();
    shelf.items.retain(|item| !doomed.contains(&item.memory.id));
    (before - shelf.items.len()) as u64
}

#[async_trait]
impl MemoryStore for HeapMemory {
    async fn save(
        &self,
        principal: &Principal,
        memory: &Memory,
        embedding: Option<&Embedding>,
        cap: usize,
    ) -> Result<Saved, StoreError> {
        Ok(self.with(principal, |shelf| {
            if shelf.items.iter().any(|i| i.memory.id == memory.id) {
                return Saved::Unchanged(memory.id.clone());
            }
            let now = memory.created_ms;
            let current = shelf
                .items
                .iter_mut()
                .find(|i| i.memory.is_current(now) && i.memory.subject == memory.subject);
            let mut replaced = None;
            if let Some(current) = current {
                if same_statement(&current.memory.text, &memory.text) {
                    return Saved::Unchanged(current.memory.id.clone());
                }
                current.memory.replaced_by = Some(memory.id.clone());
                replaced = Some(current.memory.id.clone());
            }
            shelf.items.push(Item {
                memory: memory.clone(),
                embedding: embedding.cloned(),
                stems: terms::stems(&format!("{} {}", memory.subject, memory.text)),
            });
            let mut evicted = Vec::new();
            loop {
                let current: Vec<&Item> = shelf
                    .items
                    .iter()
                    .filter(|i| i.memory.is_current(now))
                    .collect();
                if current.len() <= cap {
                    break;
                }
                let oldest = current
                    .iter()
                    .filter(|i| i.memory.origin == Origin::Extracted)
                    .min_by_key(|i| i.memory.created_ms)
                    .or_else(|| current.iter().min_by_key(|i| i.memory.created_ms))
                    .map(|i| i.memory.id.clone());
                let Some(oldest) = oldest else { break };
                erase(shelf, &oldest);
                evicted.push(oldest);
            }
            Saved::New { replaced, evicted }
        }))
    }

    async fn memory(
        &self,
        principal: &Principal,
        id: &MemoryId,
    ) -> Result<Option<Memory>, StoreError> {
        Ok(self.with(principal, |shelf| {
            shelf
                .items
                .iter()
                .find(|i| &i.memory.id == id)
                .map(|i| i.memory.clone())
        }))
    }

    async fn list(
        &self,
        principal: &Principal,
        filter: &MemoryFilter,
        limit: usize,
    ) -> Result<Vec<Memory>, StoreError> {
        Ok(self.with(principal, |shelf| {
            let mut out: Vec<Memory> = shelf
                .items
                .iter()
                .filter(|i| filter.admits(&i.memory))
                .map(|i| i.memory.clone())
                .collect();
            out.sort_by(|a, b| b.created_ms.cmp(&a.created_ms).then(a.id.cmp(&b.id)));
            out.truncate(limit);
            out
        }))
    }

    async fn search_text(
        &self,
        principal: &Principal,
        query: &[String],
        filter: &MemoryFilter,
        limit: usize,
    ) -> Result<Vec<Scored>, StoreError> {
        Ok(self.with(principal, |shelf| {
            let admitted: Vec<&Item> = shelf
                .items
                .iter()
                .filter(|i| filter.admits(&i.memory))
                .collect();
            let n = admitted.len() as f32;
            // A term's weight is its inverse document frequency, as full-text engines do.
            let idf = |term: &String| {
                let df = admitted.iter().filter(|i| i.stems.contains(term)).count() as f32;
                ((n - df + 0.5) / (df + 0.5) + 1.0).ln()
            };
            let query: Vec<String> = query
                .iter()
                .map(|t| terms::stem(&t.to_lowercase()).to_owned())
                .collect();
            let weights: Vec<(&String, f32)> = query.iter().map(|t| (t, idf(t))).collect();
            let mut hits: Vec<(f32, &Item)> = admitted
                .iter()
                .filter_map(|i| {
                    let score: f32 = weights
                        .iter()
                        .filter(|(t, _)| i.stems.contains(t))
                        .map(|(_, w)| w)
                        .sum();
                    (score > 0.0).then_some((score, *i))
                })
                .collect();
            hits.sort_by(|a, b| {
                b.0.total_cmp(&a.0)
                    .then(b.1.memory.created_ms.cmp(&a.1.memory.created_ms))
            });
            kept(hits, limit)
        }))
    }

    async fn search_vector(
        &self,
        principal: &Principal,
        query: &Embedding,
        filter: &MemoryFilter,
        limit: usize,
    ) -> Result<Vec<Scored>, StoreError> {
        Ok(self.with(principal, |shelf| {
            let mut hits: Vec<(f32, &Item)> = shelf
                .items
                .iter()
                .filter(|i| filter.admits(&i.memory))
                .filter_map(|i| {
                    let e = i.embedding.as_ref().filter(|e| e.model == query.model)?;
                    Some((cosine(&e.vector, &query.vector), i))
                })
                .collect();
            hits.sort_by(|a, b| b.0.total_cmp(&a.0));
            kept(hits, limit)
        }))
    }

    async fn forget(&self, principal: &Principal, id: &MemoryId) -> Result<u64, StoreError> {
        Ok(self.with(principal, |shelf| erase(shelf, id)))
    }

    async fn forget_all(&self, principal: &Principal) -> Result<u64, StoreError> {
        Ok(self.with(principal, |shelf| {
            let n = shelf.items.len() as u64;
            shelf.items.clear();
            n
        }))
    }

    async fn setting(&self, principal: &Principal) -> Result<Option<bool>, StoreError> {
        Ok(self.with(principal, |shelf| shelf.setting))
    }

    async fn set_setting(
        &self,
        principal: &Principal,
        enabled: Option<bool>,
    ) -> Result<(), StoreError> {
        self.with(principal, |shelf| shelf.setting = enabled);
        Ok(())
    }

    async fn status(&self, principal: &Principal, now_ms: u64) -> Result<Status, StoreError> {
        let all = self
            .principals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Asking about a principal adds no shelf for them.
        Ok(all
            .get(principal)
            .map_or_else(Status::default, |shelf| Status {
                setting: shelf.setting,
                holds_any: shelf.setting != Some(false)
                    && shelf.items.iter().any(|i| i.memory.is_current(now_ms)),
            }))
    }
}

/// The first `limit` of ranked hits, only their memories copied.
fn kept(hits: Vec<(f32, &Item)>, limit: usize) -> Vec<Scored> {
    hits.into_iter()
        .take(limit)
        .map(|(score, i)| Scored {
            memory: i.memory.clone(),
            score,
        })
        .collect()
}

#[cfg(test)]
mod conformance {
    use super::HeapMemory;

    baton_testkit::memory_store_conformance!(HeapMemory::new());
}
