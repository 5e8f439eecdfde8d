//! The `MemoryStore` and `Embedder` ports: long-term memory across conversations (D-43).
//!
//! Every call names the principal, and a store answers only with that principal's
//! memories: another principal's id is not found. Every method is atomic: on `Err` nothing
//! was changed.

use async_trait::async_trait;

use crate::principal::Principal;
use crate::recall::embed::{Embedding, HashedWords};
use crate::recall::{Memory, MemoryFilter, MemoryId, Saved, Scored};

use super::store::StoreError;

/// A principal's long-term memories.
#[async_trait]
pub trait MemoryStore: Send + Sync {
    /// Saves `memory` with its vector. When a current memory of the same subject says the
    /// same, nothing changes ([`Saved::Unchanged`]); when it says something else, it is
    /// replaced (kept as history, `replaced_by` the new one). When the principal would
    /// then hold more than `cap` current memories, the oldest extracted ones go first
    /// (erased, as by [`MemoryStore::forget`]), then the oldest saved in words.
    ///
    /// # Errors
    /// `Unavailable` or `Corrupt`.
    async fn save(
        &self,
        principal: &Principal,
        memory: &Memory,
        embedding: Option<&Embedding>,
        cap: usize,
    ) -> Result<Saved, StoreError>;

    /// One memory, current or history.
    ///
    /// # Errors
    /// `Unavailable` or `Corrupt`.
    async fn memory(
        &self,
        principal: &Principal,
        id: &MemoryId,
    ) -> Result<Option<Memory>, StoreError>;

    /// The memories `filter` admits, newest first, at most `limit`.
    ///
    /// # Errors
    /// `Unavailable` or `Corrupt`.
    async fn list(
        &self,
        principal: &Principal,
        filter: &MemoryFilter,
        limit: usize,
    ) -> Result<Vec<Memory>, StoreError>;

    /// Full-text search: the memories `filter` admits that hold any of `terms` (content
    /// words, [`query_terms`](crate::recall::terms::query_terms), matched by the store's own
    /// stemming; any characters are data, never search syntax), most relevant first, at
    /// most `limit`. The score is the store's relevance, higher better.
    ///
    /// # Errors
    /// `Unavailable` or `Corrupt`.
    async fn search_text(
        &self,
        principal: &Principal,
        terms: &[String],
        filter: &MemoryFilter,
        limit: usize,
    ) -> Result<Vec<Scored>, StoreError>;

    /// Similarity search: the memories `filter` admits whose vector was made by
    /// `query.model`, nearest first by cosine similarity (the score), at most `limit`.
    ///
    /// # Errors
    /// `Unavailable` or `Corrupt`.
    async fn search_vector(
        &self,
        principal: &Principal,
        query: &Embedding,
        filter: &MemoryFilter,
        limit: usize,
    ) -> Result<Vec<Scored>, StoreError>;

    /// Erases a memory and the history it replaced: the items, their vectors and their
    /// text in every index. How many items went (0: no such memory of this principal).
    ///
    /// # Errors
    /// `Unavailable`.
    async fn forget(&self, principal: &Principal, id: &MemoryId) -> Result<u64, StoreError>;

    /// Erases every memory of the principal, history included; how many items went. Their
    /// setting stays.
    ///
    /// # Errors
    /// `Unavailable`.
    async fn forget_all(&self, principal: &Principal) -> Result<u64, StoreError>;

    /// The principal's own setting: memory on (`Some(true)`), off, or as the deployment
    /// says (`None`).
    ///
    /// # Errors
    /// `Unavailable` or `Corrupt`.
    async fn setting(&self, principal: &Principal) -> Result<Option<bool>, StoreError>;

    /// Sets (or, with `None`, clears) the principal's own setting.
    ///
    /// # Errors
    /// `Unavailable`.
    async fn set_setting(
        &self,
        principal: &Principal,
        enabled: Option<bool>,
    ) -> Result<(), StoreError>;

    /// What a turn asks before it searches, in one read where the store can: the
    /// principal's setting, and whether they hold any current memory (as of `now_ms`). Not
    /// asked when the setting is off. A turn of a principal with nothing to find then costs
    /// no vector and no search.
    ///
    /// # Errors
    /// `Unavailable` or `Corrupt`.
    async fn status(&self, principal: &Principal, now_ms: u64) -> Result<Status, StoreError> {
        let setting = self.setting(principal).await?;
        let holds_any = setting != Some(false)
            && !self
                .list(principal, &MemoryFilter::current(now_ms), 1)
                .await?
                .is_empty();
        Ok(Status { setting, holds_any })
    }

    /// Both searches of the hybrid search (D-43): [`search_text`](Self::search_text) and,
    /// with a vector, [`search_vector`](Self::search_vector), in one read where the store
    /// can.
    ///
    /// # Errors
    /// `Unavailable` or `Corrupt`.
    async fn search_both(
        &self,
        principal: &Principal,
        terms: &[String],
        query: Option<&Embedding>,
        filter: &MemoryFilter,
        limit: usize,
    ) -> Result<Both, StoreError> {
        let by_text = self.search_text(principal, terms, filter, limit).await?;
        let by_vector = match query {
            Some(q) => self.search_vector(principal, q, filter, limit).await?,
            None => Vec::new(),
        };
        Ok(Both { by_text, by_vector })
    }
}

/// A principal's memory at a glance ([`MemoryStore::status`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Status {
    /// Their own setting: on, off, or as the deployment says (`None`).
    pub setting: Option<bool>,
    /// Whether they hold a current memory (false when the setting is off: not asked).
    pub holds_any: bool,
}

/// The two searches' answers ([`MemoryStore::search_both`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Both {
    /// The full-text search's, most relevant first.
    pub by_text: Vec<Scored>,
    /// The similarity search's, nearest first.
    pub by_vector: Vec<Scored>,
}

/// Why an embedding could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EmbedError {
    /// The model or its server cannot be reached now.
    #[error("the embedding model is unavailable: {0}")]
    Unavailable(String),
    /// It answered something that is not a vector.
    #[error("the embedding model answered something unusable: {0}")]
    Malformed(String),
}

/// Turns texts into vectors of one model.
#[async_trait]
pub trait Embedder: Send + Sync {
    /// The model's id, kept with every vector it makes.
    fn model(&self) -> &str;

    /// The similarity below which a nearest neighbour is unrelated, for this model's
    /// vectors: a search keeps such a neighbour only when its words matched too.
    fn min_similarity(&self) -> f32 {
        0.3
    }

    /// One vector per text, in order, each of unit length.
    ///
    /// # Errors
    /// `Unavailable` or `Malformed`.
    async fn embed(&self, texts: &[&str]) -> Result<Vec<Embedding>, EmbedError>;
}

/// The model-free embedder as a port: it never fails.
#[derive(Debug, Clone)]
pub struct HashedWordsEmbedder {
    inner: HashedWords,
    model: String,
}

impl HashedWordsEmbedder {
    /// With `dims` dimensions.
    pub fn new(dims: usize) -> Self {
        let inner = HashedWords::new(dims);
        HashedWordsEmbedder {
            model: inner.model_id(),
            inner,
        }
    }
}

impl Default for HashedWordsEmbedder {
    fn default() -> Self {
        let inner = HashedWords::default();
        HashedWordsEmbedder {
            model: inner.model_id(),
            inner,
        }
    }
}

#[async_trait]
impl Embedder for HashedWordsEmbedder {
    fn model(&self) -> &str {
        &self.model
    }

    async fn embed(&self, texts: &[&str]) -> Result<Vec<Embedding>, EmbedError> {
        Ok(texts.iter().map(|t| self.inner.embed(t)).collect())
    }
}
