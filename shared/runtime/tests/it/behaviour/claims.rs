//! Claims: a caller that leaves while its turn is being claimed leaves no claim behind.

use super::*;

/// A store whose claims take a while, as a busy store's do.
struct SlowClaims(baton_inproc::HeapStore);

#[async_trait::async_trait]
impl baton_core::ports::store::TurnStore for SlowClaims {
    async fn claim(
        &self,
        request: baton_core::ports::store::ClaimRequest,
    ) -> Result<baton_core::ports::store::Claim, baton_core::ports::store::StoreError> {
        let claim = self.0.claim(request).await;
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        claim
    }

    async fn release(
        &self,
        episode_id: &str,
        turn_id: &str,
    ) -> Result<(), baton_core::ports::store::StoreError> {
        self.0.release(episode_id, turn_id).await
    }

    async fn commit(
        &self,
        commit: &baton_core::ports::store::Commit,
    ) -> Result<u64, baton_core::ports::store::StoreError> {
        self.0.commit(commit).await
    }

    async fn episode(
        &self,
        principal: &baton_core::Principal,
        episode_id: &str,
    ) -> Result<baton_core::ports::store::EpisodeMeta, baton_core::ports::store::StoreError> {
        self.0.episode(principal, episode_id).await
    }

    async fn turns(
        &self,
        principal: &baton_core::Principal,
        episode_id: &str,
        limit: usize,
    ) -> Result<Vec<baton_core::turn::TurnRecord>, baton_core::ports::store::StoreError> {
        self.0.turns(principal, episode_id, limit).await
    }

    async fn turns_after(
        &self,
        principal: &baton_core::Principal,
        episode_id: &str,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<baton_core::turn::TurnRecord>, baton_core::ports::store::StoreError> {
        self.0
            .turns_after(principal, episode_id, after_seq, limit)
            .await
    }

    async fn body(
        &self,
        principal: &baton_core::Principal,
        episode_id: &str,
        key: &str,
    ) -> Result<serde_json::Value, baton_core::ports::store::StoreError> {
        self.0.body(principal, episode_id, key).await
    }

    async fn picture(
        &self,
        principal: &baton_core::Principal,
        episode_id: &str,
        sha256: &str,
    ) -> Result<baton_core::ports::store::StoredPicture, baton_core::ports::store::StoreError> {
        self.0.picture(principal, episode_id, sha256).await
    }
}

#[async_trait::async_trait]
impl baton_core::ports::store::CheckpointStore for SlowClaims {
    async fn save_checkpoint(
        &self,
        episode_id: &str,
        turn_id: &str,
        checkpoint: &str,
    ) -> Result<(), baton_core::ports::store::StoreError> {
        self.0
            .save_checkpoint(episode_id, turn_id, checkpoint)
            .await
    }

    async fn checkpoint(
        &self,
        episode_id: &str,
        turn_id: &str,
    ) -> Result<Option<String>, baton_core::ports::store::StoreError> {
        self.0.checkpoint(episode_id, turn_id).await
    }
}

#[async_trait::async_trait]
impl baton_core::ports::store::SummaryStore for SlowClaims {
    async fn save_summary(
        &self,
        principal: &baton_core::Principal,
        episode_id: &str,
        expected_version: u64,
        summary: &baton_core::memory::EpisodeSummary,
    ) -> Result<(), baton_core::ports::store::StoreError> {
        self.0
            .save_summary(principal, episode_id, expected_version, summary)
            .await
    }

    async fn due_episodes(
        &self,
        limit: usize,
    ) -> Result<Vec<baton_core::ports::store::DueEpisode>, baton_core::ports::store::StoreError>
    {
        self.0.due_episodes(limit).await
    }
}

#[async_trait::async_trait]
impl baton_core::ports::store::UpstreamStore for SlowClaims {
    async fn upstream_conversation(
        &self,
        principal: &baton_core::Principal,
        episode_id: &str,
        agent_id: &str,
    ) -> Result<
        Option<baton_core::ports::upstream::UpstreamConversation>,
        baton_core::ports::store::StoreError,
    > {
        self.0
            .upstream_conversation(principal, episode_id, agent_id)
            .await
    }

    async fn save_upstream_conversation(
        &self,
        principal: &baton_core::Principal,
        episode_id: &str,
        conversation: &baton_core::ports::upstream::UpstreamConversation,
    ) -> Result<(), baton_core::ports::store::StoreError> {
        self.0
            .save_upstream_conversation(principal, episode_id, conversation)
            .await
    }
}

#[async_trait::async_trait]
impl baton_core::ports::store::LinkStore for SlowClaims {
    async fn link(
        &self,
        principal: &baton_core::Principal,
        server: &str,
    ) -> Result<Option<baton_core::ports::store::AccountLink>, baton_core::ports::store::StoreError>
    {
        self.0.link(principal, server).await
    }

    async fn links(
        &self,
        principal: &baton_core::Principal,
    ) -> Result<Vec<baton_core::ports::store::AccountLink>, baton_core::ports::store::StoreError>
    {
        self.0.links(principal).await
    }

    async fn save_link(
        &self,
        principal: &baton_core::Principal,
        link: &baton_core::ports::store::AccountLink,
    ) -> Result<(), baton_core::ports::store::StoreError> {
        self.0.save_link(principal, link).await
    }

    async fn delete_link(
        &self,
        principal: &baton_core::Principal,
        server: &str,
    ) -> Result<bool, baton_core::ports::store::StoreError> {
        self.0.delete_link(principal, server).await
    }
}

/// A caller that gives up while its turn is being claimed leaves no claim that nothing
/// will finish: the claimed turn runs and commits without it.
#[tokio::test(start_paused = true)]
async fn a_caller_that_leaves_during_the_claim_leaves_no_orphan_claim() {
    use std::sync::Arc;
    use std::time::Duration;

    use baton_inproc::HeapStore;
    use baton_inproc::scripted::ScriptedModel;
    use baton_runtime::Runtime;

    let script = ONE_SHOP_TURN;
    let store = Arc::new(SlowClaims(HeapStore::new()));
    let runtime = Runtime::builder(Arc::new(TestRegistry::default().load().unwrap()))
        .model_override(Arc::new(ScriptedModel::from_yaml(script).unwrap()))
        .store(store.clone())
        .connector("test", Arc::new(ConfiguredConnector))
        .build()
        .unwrap();
    let gave_up = tokio::time::timeout(
        Duration::from_millis(100),
        runtime.run_turn(request("coffee deals", None, "t1")),
    )
    .await;
    assert!(
        gave_up.is_err(),
        "the caller left before the claim was answered"
    );
    tokio::time::sleep(Duration::from_secs(5)).await;
    let again = runtime
        .run_turn(request("coffee deals", None, "t1"))
        .await
        .unwrap();
    assert!(
        again.replay,
        "the claimed turn ran and committed: {again:?}"
    );
    let turns = store
        .0
        .turns(&alice(), &again.episode_id, 10)
        .await
        .unwrap();
    assert_eq!(turns.len(), 1);
}

/// One routed turn to the shop specialist, with one tool call, composed in one word.
pub(super) const ONE_SHOP_TURN: &str = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      tool_calls: [{ name: ask_shop, args: { query: "coffee deals", intent_count: 1 } }]
    - when: { purpose: compose }
      text: ["Done."]
  shop:
    - when: { after_tool_results: false }
      tool_calls: [{ name: search_offers, args: { query: "coffee" } }]
    - when: { after_tool_results: true }
      text: ["Roast coffee earns 500 points."]
"#;
