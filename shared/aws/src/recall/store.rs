//! The `MemoryStore` port's methods of [`DynamoMemory`], each delegated to the module that
//! holds its requests.

use async_trait::async_trait;
use baton_core::Principal;
use baton_core::ports::memory::{MemoryStore, Status};
use baton_core::ports::store::StoreError;
use baton_core::recall::embed::Embedding;
use baton_core::recall::{Memory, MemoryFilter, MemoryId, Saved, Scored};

use super::DynamoMemory;

#[async_trait]
impl MemoryStore for DynamoMemory {
    async fn save(
        &self,
        principal: &Principal,
        memory: &Memory,
        embedding: Option<&Embedding>,
        cap: usize,
    ) -> Result<Saved, StoreError> {
        self.save_memory(principal, memory, embedding, cap).await
    }

    async fn memory(
        &self,
        principal: &Principal,
        id: &MemoryId,
    ) -> Result<Option<Memory>, StoreError> {
        self.one(principal, id).await
    }

    async fn list(
        &self,
        principal: &Principal,
        filter: &MemoryFilter,
        limit: usize,
    ) -> Result<Vec<Memory>, StoreError> {
        self.listed(principal, filter, limit).await
    }

    async fn search_text(
        &self,
        principal: &Principal,
        terms: &[String],
        filter: &MemoryFilter,
        limit: usize,
    ) -> Result<Vec<Scored>, StoreError> {
        self.search_text_memories(principal, terms, filter, limit)
            .await
    }

    async fn search_vector(
        &self,
        principal: &Principal,
        query: &Embedding,
        filter: &MemoryFilter,
        limit: usize,
    ) -> Result<Vec<Scored>, StoreError> {
        self.search_vector_memories(principal, query, filter, limit)
            .await
    }

    async fn forget(&self, principal: &Principal, id: &MemoryId) -> Result<u64, StoreError> {
        self.erase(principal, id).await
    }

    async fn forget_all(&self, principal: &Principal) -> Result<u64, StoreError> {
        self.erase_all(principal).await
    }

    async fn setting(&self, principal: &Principal) -> Result<Option<bool>, StoreError> {
        self.own_setting(principal).await
    }

    async fn status(&self, principal: &Principal, now_ms: u64) -> Result<Status, StoreError> {
        self.glance(principal, now_ms).await
    }

    async fn set_setting(
        &self,
        principal: &Principal,
        enabled: Option<bool>,
    ) -> Result<(), StoreError> {
        self.put_setting(principal, enabled).await
    }
}
