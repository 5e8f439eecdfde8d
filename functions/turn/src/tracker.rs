//! Turns still running in this process, so that an invocation ends only after its turns
//! have committed.
//!
//! A client that leaves mid-stream does not stop its turn: the engine finishes it on a task
//! of its own. Lambda may freeze the process as soon as the invocation ends, so the
//! invocation waits for [`TurnTracker::idle`] first. The tracker learns about turns from
//! the journal itself ([`TrackedStore`]): a turn is running from the moment its claim
//! succeeds until its commit succeeds or its claim is released. That is exactly the
//! window in which a frozen process would lose work.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use baton_core::Principal;
use baton_core::memory::EpisodeSummary;
use baton_core::ports::store::{
    AccountLink, Claim, ClaimRequest, Commit, DueEpisode, EpisodeMeta, Store, StoreError,
    StoredPicture,
};
use baton_core::ports::store::{
    CheckpointStore, LinkStore, SummaryStore, TurnStore, UpstreamStore,
};
use baton_core::ports::upstream::UpstreamConversation;
use baton_core::turn::TurnRecord;
use tokio::sync::watch;

/// The turns claimed and not yet committed or released, by turn id (a set, so that a
/// release after a commit changes nothing). Cheap to clone.
#[derive(Debug, Clone)]
pub struct TurnTracker {
    running: Arc<watch::Sender<HashSet<String>>>,
}

impl Default for TurnTracker {
    fn default() -> Self {
        TurnTracker {
            running: Arc::new(watch::Sender::new(HashSet::new())),
        }
    }
}

impl TurnTracker {
    /// A tracker with nothing running.
    pub fn new() -> Self {
        Self::default()
    }

    /// Turns running now.
    pub fn running(&self) -> usize {
        self.running.borrow().len()
    }

    fn begin(&self, turn_id: &str) {
        self.running
            .send_if_modified(|running| running.insert(turn_id.to_owned()));
    }

    fn end(&self, turn_id: &str) {
        self.running
            .send_if_modified(|running| running.remove(turn_id));
    }

    /// Waits until no turn is running, or at most `limit`; true when none is.
    pub async fn idle(&self, limit: Duration) -> bool {
        let mut running = self.running.subscribe();
        match tokio::time::timeout(limit, running.wait_for(HashSet::is_empty)).await {
            Ok(Ok(_)) => true,
            // The sender lives as long as `self`: it cannot be gone while we wait.
            Ok(Err(_)) => self.running() == 0,
            Err(_) => false,
        }
    }
}

/// A [`Store`] that tells a [`TurnTracker`] when turns start and end; everything else is
/// passed through unchanged.
pub struct TrackedStore {
    inner: Arc<dyn Store>,
    tracker: TurnTracker,
}

impl TrackedStore {
    /// Tracks the turns of `inner` in `tracker`.
    pub fn new(inner: Arc<dyn Store>, tracker: TurnTracker) -> Self {
        TrackedStore { inner, tracker }
    }
}

#[async_trait]
impl TurnStore for TrackedStore {
    async fn claim(&self, request: ClaimRequest) -> Result<Claim, StoreError> {
        let turn_id = request.turn_id.clone();
        let claim = self.inner.claim(request).await?;
        if matches!(claim, Claim::Claimed(_)) {
            self.tracker.begin(&turn_id);
        }
        Ok(claim)
    }

    async fn release(&self, episode_id: &str, turn_id: &str) -> Result<(), StoreError> {
        let result = self.inner.release(episode_id, turn_id).await;
        // Released or not, the turn is over: nothing more will be written for it.
        self.tracker.end(turn_id);
        result
    }

    async fn commit(&self, commit: &Commit) -> Result<u64, StoreError> {
        let result = self.inner.commit(commit).await;
        if result.is_ok() {
            self.tracker.end(&commit.record.turn_id);
        }
        result
    }

    async fn episode(
        &self,
        principal: &Principal,
        episode_id: &str,
    ) -> Result<EpisodeMeta, StoreError> {
        self.inner.episode(principal, episode_id).await
    }

    async fn turns(
        &self,
        principal: &Principal,
        episode_id: &str,
        limit: usize,
    ) -> Result<Vec<TurnRecord>, StoreError> {
        self.inner.turns(principal, episode_id, limit).await
    }

    async fn turns_after(
        &self,
        principal: &Principal,
        episode_id: &str,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<TurnRecord>, StoreError> {
        self.inner
            .turns_after(principal, episode_id, after_seq, limit)
            .await
    }

    async fn body(
        &self,
        principal: &Principal,
        episode_id: &str,
        key: &str,
    ) -> Result<serde_json::Value, StoreError> {
        self.inner.body(principal, episode_id, key).await
    }

    async fn picture(
        &self,
        principal: &Principal,
        episode_id: &str,
        sha256: &str,
    ) -> Result<StoredPicture, StoreError> {
        self.inner.picture(principal, episode_id, sha256).await
    }

    async fn ready(&self) -> Result<(), StoreError> {
        self.inner.ready().await
    }
}

#[async_trait]
impl CheckpointStore for TrackedStore {
    async fn save_checkpoint(
        &self,
        episode_id: &str,
        turn_id: &str,
        checkpoint: &str,
    ) -> Result<(), StoreError> {
        self.inner
            .save_checkpoint(episode_id, turn_id, checkpoint)
            .await
    }

    async fn checkpoint(
        &self,
        episode_id: &str,
        turn_id: &str,
    ) -> Result<Option<String>, StoreError> {
        self.inner.checkpoint(episode_id, turn_id).await
    }
}

#[async_trait]
impl SummaryStore for TrackedStore {
    async fn save_summary(
        &self,
        principal: &Principal,
        episode_id: &str,
        expected_version: u64,
        summary: &EpisodeSummary,
    ) -> Result<(), StoreError> {
        self.inner
            .save_summary(principal, episode_id, expected_version, summary)
            .await
    }

    async fn due_episodes(&self, limit: usize) -> Result<Vec<DueEpisode>, StoreError> {
        self.inner.due_episodes(limit).await
    }
}

#[async_trait]
impl UpstreamStore for TrackedStore {
    async fn upstream_conversation(
        &self,
        principal: &Principal,
        episode_id: &str,
        agent_id: &str,
    ) -> Result<Option<UpstreamConversation>, StoreError> {
        self.inner
            .upstream_conversation(principal, episode_id, agent_id)
            .await
    }

    async fn save_upstream_conversation(
        &self,
        principal: &Principal,
        episode_id: &str,
        conversation: &UpstreamConversation,
    ) -> Result<(), StoreError> {
        self.inner
            .save_upstream_conversation(principal, episode_id, conversation)
            .await
    }
}

#[async_trait]
impl LinkStore for TrackedStore {
    async fn link(
        &self,
        principal: &Principal,
        server: &str,
    ) -> Result<Option<AccountLink>, StoreError> {
        self.inner.link(principal, server).await
    }

    async fn links(&self, principal: &Principal) -> Result<Vec<AccountLink>, StoreError> {
        self.inner.links(principal).await
    }

    async fn save_link(&self, principal: &Principal, link: &AccountLink) -> Result<(), StoreError> {
        self.inner.save_link(principal, link).await
    }

    async fn delete_link(&self, principal: &Principal, server: &str) -> Result<bool, StoreError> {
        self.inner.delete_link(principal, server).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn idle_waits_for_the_last_turn_to_end() {
        let tracker = TurnTracker::new();
        tracker.begin("t1");
        tracker.begin("t2");
        assert_eq!(tracker.running(), 2);
        let waiter = {
            let tracker = tracker.clone();
            tokio::spawn(async move { tracker.idle(Duration::from_secs(60)).await })
        };
        tracker.end("t1");
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        tracker.end("t2");
        assert!(waiter.await.unwrap());
    }

    #[tokio::test(start_paused = true)]
    async fn idle_gives_up_at_its_limit() {
        let tracker = TurnTracker::new();
        tracker.begin("stuck");
        assert!(!tracker.idle(Duration::from_secs(5)).await);
    }

    #[tokio::test]
    async fn ending_a_turn_twice_or_an_unknown_one_changes_nothing() {
        let tracker = TurnTracker::new();
        tracker.begin("t1");
        tracker.end("t1");
        tracker.end("t1");
        tracker.end("never-started");
        assert_eq!(tracker.running(), 0);
        assert!(tracker.idle(Duration::from_millis(1)).await);
    }
}
