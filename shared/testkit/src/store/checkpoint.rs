//! Checkpoint scenarios (D-16): a running turn saves its progress at each wave boundary; a
//! turn claimed again after it was cut short reads it back; committing removes it.

use baton_core::ports::store::{Store, StoreError};

use super::records::{LEASE_MS, claim_ok, claim_request, commit_of, principal, turn_record};

/// A claimed turn saves a checkpoint, replaces it, and reads back the last one; another
/// turn id has none.
pub async fn a_checkpoint_round_trips_and_is_replaced(store: &dyn Store) {
    let alice = principal("alice");
    claim_ok(store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
    assert_eq!(store.checkpoint("ep-1", "t-1").await, Ok(None));
    store
        .save_checkpoint("ep-1", "t-1", r#"{"wave":1}"#)
        .await
        .unwrap();
    assert_eq!(
        store.checkpoint("ep-1", "t-1").await,
        Ok(Some(r#"{"wave":1}"#.to_owned()))
    );
    store
        .save_checkpoint("ep-1", "t-1", r#"{"wave":2}"#)
        .await
        .unwrap();
    assert_eq!(
        store.checkpoint("ep-1", "t-1").await,
        Ok(Some(r#"{"wave":2}"#.to_owned()))
    );
    assert_eq!(store.checkpoint("ep-1", "t-9").await, Ok(None));
}

/// Only the turn holding the claim saves; after its commit the checkpoint is gone and it
/// cannot save again.
pub async fn only_the_claiming_turn_saves_and_a_commit_removes_it(store: &dyn Store) {
    let alice = principal("alice");
    claim_ok(store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
    assert_eq!(
        store.save_checkpoint("ep-1", "t-2", "{}").await,
        Err(StoreError::Conflict)
    );
    assert_eq!(store.checkpoint("ep-1", "t-2").await, Ok(None));
    store.save_checkpoint("ep-1", "t-1", "{}").await.unwrap();
    let record = turn_record("ep-1", 1, "t-1", 1_100);
    store
        .commit(&commit_of(&alice, 0, record, vec![]))
        .await
        .unwrap();
    assert_eq!(store.checkpoint("ep-1", "t-1").await, Ok(None));
    assert_eq!(
        store.save_checkpoint("ep-1", "t-1", "{}").await,
        Err(StoreError::Conflict)
    );
}

/// A turn whose claim died (or was released) is claimed again and finds its checkpoint;
/// a turn that took the episode over in between cannot save under the old turn's claim.
pub async fn a_turn_claimed_again_finds_its_checkpoint(store: &dyn Store) {
    let alice = principal("alice");
    claim_ok(store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
    store
        .save_checkpoint("ep-1", "t-1", "wave 1")
        .await
        .unwrap();
    // The lease runs out: the process was killed.
    let retry = claim_request(&alice, None, "ep-2", "t-1", 1_000 + LEASE_MS);
    let meta = claim_ok(store, retry).await;
    assert_eq!(meta.episode_id, "ep-1");
    assert_eq!(
        store.checkpoint("ep-1", "t-1").await,
        Ok(Some("wave 1".to_owned()))
    );
    // Released (the turn failed before its commit): still there for the next retry.
    store.release("ep-1", "t-1").await.unwrap();
    assert_eq!(
        store.checkpoint("ep-1", "t-1").await,
        Ok(Some("wave 1".to_owned()))
    );
    assert_eq!(
        store.save_checkpoint("ep-1", "t-1", "wave 2").await,
        Err(StoreError::Conflict),
        "a released claim saves nothing"
    );
    let again = claim_request(&alice, Some("ep-1"), "unused", "t-1", 2_000 + LEASE_MS);
    claim_ok(store, again).await;
    store
        .save_checkpoint("ep-1", "t-1", "wave 2")
        .await
        .unwrap();
    assert_eq!(
        store.checkpoint("ep-1", "t-1").await,
        Ok(Some("wave 2".to_owned()))
    );
}

/// A checkpoint far larger than a database item (a long plan with long results) is kept
/// whole.
pub async fn a_large_checkpoint_is_kept_whole(store: &dyn Store) {
    let alice = principal("alice");
    claim_ok(store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
    let big: String = (0..60_000).map(|i| format!("{i:07}\n")).collect();
    assert!(big.len() > 400 * 1024);
    store.save_checkpoint("ep-1", "t-1", &big).await.unwrap();
    assert_eq!(store.checkpoint("ep-1", "t-1").await, Ok(Some(big)));
    store.save_checkpoint("ep-1", "t-1", "small").await.unwrap();
    assert_eq!(
        store.checkpoint("ep-1", "t-1").await,
        Ok(Some("small".to_owned()))
    );
}
