//! Read scenarios: ownership (D-30), turn order and limits, bodies.

use baton_core::ports::store::{Claim, Store, StoreError};
use serde_json::json;

use super::records::{body, claim_ok, claim_request, commit_of, principal, run_turn, turn_record};

/// Another principal's episode does not exist for them: claim, reads and commit all say
/// "not found", and none of it disturbs the owner.
pub async fn other_principal_sees_not_found(store: &dyn Store) {
    let alice = principal("alice");
    let bob = principal("bob");
    claim_ok(store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
    let record = turn_record("ep-1", 1, "t-1", 1_001);
    let commit = commit_of(
        &alice,
        0,
        record.clone(),
        vec![body("t-1/call-1", json!({"secret": 1}))],
    );
    store.commit(&commit).await.unwrap();

    let claim = claim_request(&bob, Some("ep-1"), "unused", "b-1", 2_000);
    assert_eq!(store.claim(claim).await, Err(StoreError::NotFound));
    assert_eq!(store.episode(&bob, "ep-1").await, Err(StoreError::NotFound));
    assert_eq!(
        store.turns(&bob, "ep-1", usize::MAX).await,
        Err(StoreError::NotFound)
    );
    assert_eq!(
        store.body(&bob, "ep-1", "t-1/call-1").await,
        Err(StoreError::NotFound)
    );
    let intrusion = commit_of(&bob, 1, turn_record("ep-1", 2, "b-1", 2_001), vec![]);
    assert_eq!(store.commit(&intrusion).await, Err(StoreError::NotFound));

    assert_eq!(store.episode(&alice, "ep-1").await.unwrap().version, 1);
    assert_eq!(
        store.turns(&alice, "ep-1", usize::MAX).await,
        Ok(vec![record])
    );
    // Bob's refused claim left no claim behind.
    claim_ok(
        store,
        claim_request(&alice, Some("ep-1"), "unused", "t-2", 2_002),
    )
    .await;
}

/// An episode nobody created is "not found" everywhere.
pub async fn unknown_episode_is_not_found(store: &dyn Store) {
    let alice = principal("alice");
    let claim = claim_request(&alice, Some("ep-404"), "unused", "t-1", 1_000);
    assert_eq!(store.claim(claim).await, Err(StoreError::NotFound));
    assert_eq!(
        store.episode(&alice, "ep-404").await,
        Err(StoreError::NotFound)
    );
    assert_eq!(
        store.turns(&alice, "ep-404", 10).await,
        Err(StoreError::NotFound)
    );
    assert_eq!(
        store.body(&alice, "ep-404", "k").await,
        Err(StoreError::NotFound)
    );
    let commit = commit_of(&alice, 0, turn_record("ep-404", 1, "t-1", 1_001), vec![]);
    assert_eq!(store.commit(&commit).await, Err(StoreError::NotFound));
    // The failed claim did not reserve the turn id.
    claim_ok(store, claim_request(&alice, None, "ep-1", "t-1", 1_002)).await;
}

/// `turns` returns the last `limit` turns, oldest first; `usize::MAX` means all of them.
pub async fn turns_are_oldest_first_and_limited(store: &dyn Store) {
    let alice = principal("alice");
    let mut records = Vec::new();
    for seq in 1..=5u64 {
        let turn_id = format!("t-{seq}");
        let record = run_turn(store, &alice, "ep-1", seq == 1, &turn_id, seq * 1_000).await;
        records.push(record);
    }
    let seqs = |turns: Vec<baton_core::turn::TurnRecord>| -> Vec<u64> {
        turns.iter().map(|t| t.seq).collect()
    };

    let all = store.turns(&alice, "ep-1", usize::MAX).await.unwrap();
    assert_eq!(all, records);
    let last_two = store.turns(&alice, "ep-1", 2).await.unwrap();
    assert_eq!(seqs(last_two), vec![4, 5]);
    let more_than_all = store.turns(&alice, "ep-1", 50).await.unwrap();
    assert_eq!(seqs(more_than_all), vec![1, 2, 3, 4, 5]);
    assert_eq!(store.turns(&alice, "ep-1", 0).await, Ok(vec![]));
}

/// Bodies come back exactly as committed, under keys of any shape; a missing key is "not
/// found".
pub async fn bodies_round_trip(store: &dyn Store) {
    let alice = principal("alice");
    let meta = claim_ok(store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
    let bodies = vec![
        body(
            "t-1/call-1",
            json!({"offers": [{"id": 1, "price": 9.5}], "note": "ünïcödé ✓"}),
        ),
        body("t-1/call-2", json!([1, "two", null, true])),
        body("../x", json!("a key with path characters")),
        body("a key with spaces, dots... and %41", json!(42)),
        body(&"long-".repeat(80), json!({"long": true})),
    ];
    let commit = commit_of(
        &alice,
        meta.version,
        turn_record("ep-1", 1, "t-1", 1_001),
        bodies.clone(),
    );
    store.commit(&commit).await.unwrap();

    for expected in &bodies {
        assert_eq!(
            store.body(&alice, "ep-1", &expected.key).await,
            Ok(serde_json::from_str::<serde_json::Value>(&expected.json).unwrap()),
            "body {:?}",
            expected.key
        );
    }
    assert_eq!(
        store.body(&alice, "ep-1", "t-1/call-3").await,
        Err(StoreError::NotFound)
    );
    assert_eq!(
        store.body(&alice, "ep-1", "x").await,
        Err(StoreError::NotFound),
        "keys are taken literally"
    );
    // A replay of the turn does not disturb its bodies.
    let replay = claim_request(&alice, Some("ep-1"), "unused", "t-1", 2_000);
    assert!(matches!(store.claim(replay).await, Ok(Claim::Completed(_))));
    assert_eq!(
        store.body(&alice, "ep-1", "t-1/call-2").await,
        Ok(json!([1, "two", null, true]))
    );
}
