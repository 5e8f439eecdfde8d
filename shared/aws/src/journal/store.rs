//! The `Store` port's methods of [`DynamoStore`], each delegated to the module that holds
//! its requests.

use async_trait::async_trait;

use baton_core::Principal;
use baton_core::memory::EpisodeSummary;
use baton_core::ports::store::{
    AccountLink, Claim, ClaimRequest, Commit, DueEpisode, EpisodeMeta, StoreError, StoredPicture,
};
use baton_core::ports::store::{
    CheckpointStore, LinkStore, SummaryStore, TurnStore, UpstreamStore,
};
use baton_core::ports::upstream::UpstreamConversation;
use baton_core::turn::TurnRecord;

use super::config::DynamoStore;
use super::{account_links, checkpoint, claim, commit, memory, read, upstream};

#[async_trait]
impl TurnStore for DynamoStore {
    async fn claim(&self, request: ClaimRequest) -> Result<Claim, StoreError> {
        baton_core::store_write!("store.claim", claim::claim(self, &request))
    }

    async fn release(&self, episode_id: &str, turn_id: &str) -> Result<(), StoreError> {
        baton_core::store_write!("store.release", claim::release(self, episode_id, turn_id))
    }

    async fn commit(&self, commit: &Commit) -> Result<u64, StoreError> {
        baton_core::store_write!("store.commit", commit::commit(self, commit))
    }

    async fn episode(
        &self,
        principal: &Principal,
        episode_id: &str,
    ) -> Result<EpisodeMeta, StoreError> {
        read::episode(self, principal, episode_id).await
    }

    async fn turns(
        &self,
        principal: &Principal,
        episode_id: &str,
        limit: usize,
    ) -> Result<Vec<TurnRecord>, StoreError> {
        read::turns(self, principal, episode_id, limit).await
    }

    async fn turns_after(
        &self,
        principal: &Principal,
        episode_id: &str,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<TurnRecord>, StoreError> {
        read::turns_after(self, principal, episode_id, after_seq, limit).await
    }

    async fn body(
        &self,
        principal: &Principal,
        episode_id: &str,
        key: &str,
    ) -> Result<serde_json::Value, StoreError> {
        read::body(self, principal, episode_id, key).await
    }

    async fn picture(
        &self,
        principal: &Principal,
        episode_id: &str,
        sha256: &str,
    ) -> Result<StoredPicture, StoreError> {
        read::picture(self, principal, episode_id, sha256).await
    }

    /// One read of an episode key no turn ever uses: the table answers, and this role may
    /// read it.
    async fn ready(&self) -> Result<(), StoreError> {
        read::meta_item(self, READY_PROBE_EPISODE, "checking the journal")
            .await
            .map(drop)
    }
}

#[async_trait]
impl CheckpointStore for DynamoStore {
    async fn save_checkpoint(
        &self,
        episode_id: &str,
        turn_id: &str,
        checkpoint: &str,
    ) -> Result<(), StoreError> {
        baton_core::store_write!(
            "store.checkpoint",
            checkpoint::save(self, episode_id, turn_id, checkpoint)
        )
    }

    async fn checkpoint(
        &self,
        episode_id: &str,
        turn_id: &str,
    ) -> Result<Option<String>, StoreError> {
        checkpoint::load(self, episode_id, turn_id).await
    }
}

#[async_trait]
impl SummaryStore for DynamoStore {
    async fn save_summary(
        &self,
        principal: &Principal,
        episode_id: &str,
        expected_version: u64,
        summary: &EpisodeSummary,
    ) -> Result<(), StoreError> {
        baton_core::store_write!(
            "store.summary",
            memory::save_summary(self, principal, episode_id, expected_version, summary)
        )
    }

    async fn due_episodes(&self, limit: usize) -> Result<Vec<DueEpisode>, StoreError> {
        memory::due_episodes(self, limit).await
    }
}

#[async_trait]
impl UpstreamStore for DynamoStore {
    async fn upstream_conversation(
        &self,
        principal: &Principal,
        episode_id: &str,
        agent_id: &str,
    ) -> Result<Option<UpstreamConversation>, StoreError> {
        upstream::conversation(self, principal, episode_id, agent_id).await
    }

    async fn save_upstream_conversation(
        &self,
        principal: &Principal,
        episode_id: &str,
        conversation: &UpstreamConversation,
    ) -> Result<(), StoreError> {
        upstream::save(self, principal, episode_id, conversation).await
    }
}

#[async_trait]
impl LinkStore for DynamoStore {
    async fn link(
        &self,
        principal: &Principal,
        server: &str,
    ) -> Result<Option<AccountLink>, StoreError> {
        account_links::link(self, principal, server).await
    }

    async fn links(&self, principal: &Principal) -> Result<Vec<AccountLink>, StoreError> {
        account_links::links(self, principal).await
    }

    async fn save_link(&self, principal: &Principal, link: &AccountLink) -> Result<(), StoreError> {
        account_links::save(self, principal, link).await
    }

    async fn delete_link(&self, principal: &Principal, server: &str) -> Result<bool, StoreError> {
        account_links::delete(self, principal, server).await
    }
}

/// The episode id [`DynamoStore::ready`] reads; never a valid turn's (ids have no `~`).
const READY_PROBE_EPISODE: &str = "~ready";
