//! Commit scenarios: optimistic versions (D-26), atomicity, read-your-writes (D-24).

use baton_core::ports::store::{Claim, Commit, Store, StoreError};
use baton_core::turn::EpisodeState;
use serde_json::json;

use super::records::{
    LEASE_MS, body, busy_state, claim_ok, claim_request, commit_of, principal, run_turn,
    turn_record,
};

/// A commit against a stale version (or with the wrong seq) is a conflict; the retry at the
/// current version and next seq succeeds.
pub async fn stale_commit_conflicts_and_retry_at_next_seq_succeeds(store: &dyn Store) {
    let alice = principal("alice");
    run_turn(store, &alice, "ep-1", true, "t-1", 1_000).await;
    let meta = claim_ok(
        store,
        claim_request(&alice, Some("ep-1"), "unused", "t-2", 2_000),
    )
    .await;
    assert_eq!(meta.version, 1);

    let stale = commit_of(&alice, 0, turn_record("ep-1", 1, "t-2", 2_001), vec![]);
    assert_eq!(store.commit(&stale).await, Err(StoreError::Conflict));
    let same_seq = commit_of(&alice, 1, turn_record("ep-1", 1, "t-2", 2_001), vec![]);
    assert_eq!(store.commit(&same_seq).await, Err(StoreError::Conflict));
    let skipped = commit_of(&alice, 1, turn_record("ep-1", 3, "t-2", 2_001), vec![]);
    assert_eq!(store.commit(&skipped).await, Err(StoreError::Conflict));
    let ahead = commit_of(&alice, 2, turn_record("ep-1", 3, "t-2", 2_001), vec![]);
    assert_eq!(store.commit(&ahead).await, Err(StoreError::Conflict));

    let retry = turn_record("ep-1", 2, "t-2", 2_002);
    let commit = commit_of(&alice, 1, retry.clone(), vec![]);
    assert_eq!(store.commit(&commit).await, Ok(2));
    let turns = store.turns(&alice, "ep-1", usize::MAX).await.unwrap();
    assert_eq!(turns.len(), 2);
    assert_eq!(turns[1], retry);
}

/// A refused commit changes nothing: earlier turns, version, state, bodies and the turn's
/// claim stay as they were.
pub async fn refused_commit_loses_nothing(store: &dyn Store) {
    let alice = principal("alice");
    let meta = claim_ok(store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
    let first = turn_record("ep-1", 1, "t-1", 1_001);
    let commit = Commit {
        state: busy_state(0),
        ..commit_of(
            &alice,
            meta.version,
            first.clone(),
            vec![body("t-1/call-1", json!({"kept": true}))],
        )
    };
    assert_eq!(store.commit(&commit).await, Ok(1));
    let before = store.episode(&alice, "ep-1").await.unwrap();

    claim_ok(
        store,
        claim_request(&alice, Some("ep-1"), "unused", "t-2", 2_000),
    )
    .await;
    let refused = Commit {
        state: EpisodeState::default(),
        ..commit_of(
            &alice,
            0,
            turn_record("ep-1", 1, "t-2", 2_001),
            vec![body("t-2/call-1", json!("lost"))],
        )
    };
    assert_eq!(store.commit(&refused).await, Err(StoreError::Conflict));

    assert_eq!(store.episode(&alice, "ep-1").await, Ok(before));
    assert_eq!(
        store.turns(&alice, "ep-1", usize::MAX).await,
        Ok(vec![first])
    );
    assert_eq!(
        store.body(&alice, "ep-1", "t-1/call-1").await,
        Ok(json!({"kept": true}))
    );
    assert_eq!(
        store.body(&alice, "ep-1", "t-2/call-1").await,
        Err(StoreError::NotFound),
        "a refused commit's body is not part of the episode"
    );
    let other = claim_request(&alice, Some("ep-1"), "unused", "t-3", 2_002);
    assert_eq!(
        store.claim(other).await,
        Ok(Claim::Busy),
        "a refused commit keeps its claim"
    );
}

/// A turn id commits once: a second run of it (restarted after its lease ran out, while
/// the first was still going) is a conflict and adds nothing.
pub async fn turn_id_commits_only_once(store: &dyn Store) {
    let alice = principal("alice");
    claim_ok(store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
    let rerun = claim_request(&alice, None, "ep-2", "t-1", 1_000 + LEASE_MS);
    assert_eq!(claim_ok(store, rerun).await.episode_id, "ep-1");

    let first = commit_of(&alice, 0, turn_record("ep-1", 1, "t-1", 40_000), vec![]);
    assert_eq!(store.commit(&first).await, Ok(1));
    let second = commit_of(&alice, 1, turn_record("ep-1", 2, "t-1", 40_001), vec![]);
    assert_eq!(store.commit(&second).await, Err(StoreError::Conflict));

    assert_eq!(store.episode(&alice, "ep-1").await.unwrap().version, 1);
    assert_eq!(
        store
            .turns(&alice, "ep-1", usize::MAX)
            .await
            .map(|t| t.len()),
        Ok(1)
    );
}

/// Body keys are unique within an episode: a commit reusing one (or repeating one) is a
/// conflict and the stored body is not replaced.
pub async fn reused_body_key_conflicts_and_keeps_the_first_body(store: &dyn Store) {
    let alice = principal("alice");
    claim_ok(store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
    let first = commit_of(
        &alice,
        0,
        turn_record("ep-1", 1, "t-1", 1_001),
        vec![body("shared", json!(1))],
    );
    assert_eq!(store.commit(&first).await, Ok(1));

    claim_ok(
        store,
        claim_request(&alice, Some("ep-1"), "unused", "t-2", 2_000),
    )
    .await;
    let reuse = commit_of(
        &alice,
        1,
        turn_record("ep-1", 2, "t-2", 2_001),
        vec![body("fresh", json!(2)), body("shared", json!(2))],
    );
    assert_eq!(store.commit(&reuse).await, Err(StoreError::Conflict));
    let repeat = commit_of(
        &alice,
        1,
        turn_record("ep-1", 2, "t-2", 2_001),
        vec![body("twice", json!(2)), body("twice", json!(3))],
    );
    assert_eq!(store.commit(&repeat).await, Err(StoreError::Conflict));

    assert_eq!(store.body(&alice, "ep-1", "shared").await, Ok(json!(1)));
    assert_eq!(
        store.body(&alice, "ep-1", "fresh").await,
        Err(StoreError::NotFound)
    );
    assert_eq!(store.episode(&alice, "ep-1").await.unwrap().version, 1);
}

/// Read-your-writes: a commit is what the next claim sees (version, time, state) and what
/// `turns` returns, field for field; the commit also released its claim.
pub async fn commit_is_visible_to_the_next_claim_and_to_turns(store: &dyn Store) {
    let alice = principal("alice");
    let created = claim_ok(store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
    let first = turn_record("ep-1", 1, "t-1", 1_500);
    let commit = Commit {
        state: busy_state(0),
        ..commit_of(&alice, 0, first.clone(), vec![])
    };
    assert_eq!(store.commit(&commit).await, Ok(1));

    // Well within t-1's lease: only the commit can have freed the episode.
    let next = claim_ok(
        store,
        claim_request(&alice, Some("ep-1"), "unused", "t-2", 1_600),
    )
    .await;
    assert_eq!(next.version, 1);
    assert_eq!(next.created_ms, created.created_ms);
    assert_eq!(next.updated_ms, 1_500);
    assert_eq!(next.state, busy_state(0));
    assert_eq!(
        store.turns(&alice, "ep-1", usize::MAX).await,
        Ok(vec![first.clone()])
    );

    let second = turn_record("ep-1", 2, "t-2", 1_700);
    let commit = commit_of(&alice, next.version, second.clone(), vec![]);
    assert_eq!(store.commit(&commit).await, Ok(2));
    assert_eq!(
        store.turns(&alice, "ep-1", usize::MAX).await,
        Ok(vec![first, second])
    );
    assert_eq!(store.episode(&alice, "ep-1").await.unwrap().version, 2);
}

/// The state given with each commit is the episode's state afterwards, replaced whole.
pub async fn episode_state_round_trips(store: &dyn Store) {
    let alice = principal("alice");
    claim_ok(store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
    let commit = Commit {
        state: busy_state(60_000),
        ..commit_of(&alice, 0, turn_record("ep-1", 1, "t-1", 1_001), vec![])
    };
    store.commit(&commit).await.unwrap();
    let meta = store.episode(&alice, "ep-1").await.unwrap();
    assert_eq!(meta.state, busy_state(60_000));

    claim_ok(
        store,
        claim_request(&alice, Some("ep-1"), "unused", "t-2", 2_000),
    )
    .await;
    let cleared = Commit {
        state: EpisodeState::default(),
        ..commit_of(&alice, 1, turn_record("ep-1", 2, "t-2", 2_001), vec![])
    };
    store.commit(&cleared).await.unwrap();
    let meta = store.episode(&alice, "ep-1").await.unwrap();
    assert_eq!(meta.state, EpisodeState::default());
    assert_eq!(meta.summary, None);
}
