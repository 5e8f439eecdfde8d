//! Upstream conversation scenarios (seed 000): a specialist's conversation id with a
//! chat service, kept per episode and specialist with an expiry the caller checks.

use baton_core::memory::EpisodeSummary;
use baton_core::ports::store::{Store, StoreError};
use baton_core::ports::upstream::UpstreamConversation;

use super::records::{principal, run_turn};

fn conversation(agent: &str, id: &str, expires_ms: u64) -> UpstreamConversation {
    UpstreamConversation {
        agent_id: agent.to_owned(),
        conversation_id: id.to_owned(),
        expires_ms,
        pending: None,
    }
}

/// Saved, read back, refreshed with a later expiry; each specialist has its own. An
/// exchange awaiting the user's reply is kept with it, and a later save without one clears
/// it.
pub async fn a_conversation_round_trips_per_specialist_and_is_refreshed(store: &dyn Store) {
    let alice = principal("alice");
    run_turn(store, &alice, "ep-1", true, "t-1", 1_000).await;
    assert_eq!(
        store.upstream_conversation(&alice, "ep-1", "support").await,
        Ok(None)
    );
    let first = conversation("support", "conv-1", 3_301_000);
    store
        .save_upstream_conversation(&alice, "ep-1", &first)
        .await
        .unwrap();
    store
        .save_upstream_conversation(&alice, "ep-1", &conversation("billing", "b-9", 9_000))
        .await
        .unwrap();
    assert_eq!(
        store.upstream_conversation(&alice, "ep-1", "support").await,
        Ok(Some(first))
    );
    let waiting = UpstreamConversation {
        pending: Some("task-7".to_owned()),
        ..conversation("support", "conv-1", 5_000_000)
    };
    store
        .save_upstream_conversation(&alice, "ep-1", &waiting)
        .await
        .unwrap();
    assert_eq!(
        store.upstream_conversation(&alice, "ep-1", "support").await,
        Ok(Some(waiting))
    );
    let refreshed = conversation("support", "conv-1", 6_000_000);
    store
        .save_upstream_conversation(&alice, "ep-1", &refreshed)
        .await
        .unwrap();
    assert_eq!(
        store.upstream_conversation(&alice, "ep-1", "support").await,
        Ok(Some(refreshed))
    );
    assert_eq!(
        store
            .upstream_conversation(&alice, "ep-1", "billing")
            .await
            .unwrap()
            .map(|c| c.conversation_id),
        Some("b-9".to_owned())
    );
}

/// An expired item is returned as stored: the caller compares the expiry with its clock,
/// whatever the store's own expiry has or has not deleted yet.
pub async fn an_expired_conversation_is_still_returned_for_the_caller_to_judge(store: &dyn Store) {
    let alice = principal("alice");
    run_turn(store, &alice, "ep-1", true, "t-1", 1_000).await;
    // Expired long ago (epoch ms 5 000, in 1970).
    let old = conversation("support", "conv-old", 5_000);
    store
        .save_upstream_conversation(&alice, "ep-1", &old)
        .await
        .unwrap();
    let read = store
        .upstream_conversation(&alice, "ep-1", "support")
        .await
        .unwrap();
    // A store whose own expiry already removed it says "none": also expired.
    if let Some(c) = read {
        assert!(!c.live_at(1_795_305_600_000), "{c:?}");
    }
}

/// Another principal gets "not found" on both, and changes nothing.
pub async fn another_principal_neither_reads_nor_writes_a_conversation(store: &dyn Store) {
    let alice = principal("alice");
    let bob = principal("bob");
    run_turn(store, &alice, "ep-1", true, "t-1", 1_000).await;
    let mine = conversation("support", "conv-1", u64::MAX / 2);
    store
        .save_upstream_conversation(&alice, "ep-1", &mine)
        .await
        .unwrap();
    assert_eq!(
        store.upstream_conversation(&bob, "ep-1", "support").await,
        Err(StoreError::NotFound)
    );
    assert_eq!(
        store
            .save_upstream_conversation(
                &bob,
                "ep-1",
                &conversation("support", "stolen", u64::MAX / 2)
            )
            .await,
        Err(StoreError::NotFound)
    );
    assert_eq!(
        store
            .save_upstream_conversation(&alice, "ep-404", &mine)
            .await,
        Err(StoreError::NotFound)
    );
    assert_eq!(
        store.upstream_conversation(&alice, "ep-1", "support").await,
        Ok(Some(mine))
    );
}

/// Turns and summaries written after it leave it as it was, and it changes neither.
pub async fn a_conversation_survives_commits_and_summaries(store: &dyn Store) {
    let alice = principal("alice");
    run_turn(store, &alice, "ep-1", true, "t-1", 1_000).await;
    let mine = conversation("support", "conv-1", u64::MAX / 2);
    store
        .save_upstream_conversation(&alice, "ep-1", &mine)
        .await
        .unwrap();
    run_turn(store, &alice, "ep-1", false, "t-2", 2_000).await;
    let summary = EpisodeSummary {
        upto_seq: 1,
        text: "Earlier.".into(),
        agents: Default::default(),
    };
    store
        .save_summary(&alice, "ep-1", 2, &summary)
        .await
        .unwrap();
    assert_eq!(
        store.upstream_conversation(&alice, "ep-1", "support").await,
        Ok(Some(mine))
    );
    let meta = store.episode(&alice, "ep-1").await.unwrap();
    assert_eq!((meta.version, meta.summary), (2, Some(summary)));
    assert_eq!(store.turns(&alice, "ep-1", 10).await.unwrap().len(), 2);
}
