//! Claim scenarios: new episodes, duplicates (D-25), one turn at a time per episode (D-26).

use baton_core::ports::store::{
    Claim, ClaimMismatch, ClaimRequest, EpisodeMeta, Store, StoreError,
};
use baton_core::turn::EpisodeState;

use super::records::{
    LEASE_MS, claim_ok, claim_request, commit_of, principal, run_turn, turn_record,
};

/// A claim without an episode creates one: owned by the caller, version 0, stamped now,
/// empty state and no turns.
pub async fn new_episode_claim_creates_an_empty_owned_episode(store: &dyn Store) {
    let alice = principal("alice");
    let meta = claim_ok(store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
    let expected = EpisodeMeta {
        episode_id: "ep-1".into(),
        owner: alice.clone(),
        version: 0,
        created_ms: 1_000,
        updated_ms: 1_000,
        summary: None,
        state: EpisodeState::default(),
    };
    assert_eq!(meta, expected);
    assert_eq!(store.episode(&alice, "ep-1").await, Ok(expected));
    assert_eq!(store.turns(&alice, "ep-1", usize::MAX).await, Ok(vec![]));
}

/// A turn id that already completed replays its record when asked again on its episode or
/// on none, and creates nothing; asked on another episode, it is a mismatch.
pub async fn completed_duplicate_replays_its_record(store: &dyn Store) {
    let alice = principal("alice");
    let record = run_turn(store, &alice, "ep-1", true, "t-1", 1_000).await;
    let completed = Claim::Completed(Box::new(record));

    let same_episode = claim_request(&alice, Some("ep-1"), "unused", "t-1", 2_000);
    assert_eq!(store.claim(same_episode).await, Ok(completed.clone()));
    let no_episode = claim_request(&alice, None, "ep-2", "t-1", 2_000);
    assert_eq!(store.claim(no_episode).await, Ok(completed.clone()));
    let other_episode = claim_request(&alice, Some("ep-404"), "unused", "t-1", 2_000);
    assert_eq!(
        store.claim(other_episode).await,
        Ok(Claim::Mismatch(ClaimMismatch::Episode {
            episode_id: "ep-1".into()
        }))
    );

    assert_eq!(
        store.episode(&alice, "ep-2").await,
        Err(StoreError::NotFound),
        "a replay must not create the episode it was asked to start"
    );
    // The replay did not take the episode either.
    claim_ok(
        store,
        claim_request(&alice, Some("ep-1"), "unused", "t-2", 2_000),
    )
    .await;
}

/// A turn id whose claim is still live is in flight, on its episode or when asked to start
/// a new one (which is not created).
pub async fn running_duplicate_is_in_flight(store: &dyn Store) {
    let alice = principal("alice");
    claim_ok(store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;

    let again = claim_request(&alice, Some("ep-1"), "unused", "t-1", 2_000);
    assert_eq!(store.claim(again).await, Ok(Claim::InFlight));
    let as_new = claim_request(&alice, None, "ep-2", "t-1", 2_000);
    assert_eq!(store.claim(as_new).await, Ok(Claim::InFlight));
    assert_eq!(
        store.episode(&alice, "ep-2").await,
        Err(StoreError::NotFound)
    );
}

/// While one turn holds an episode, another turn on it is told the episode is busy.
pub async fn second_turn_on_a_claimed_episode_is_busy(store: &dyn Store) {
    let alice = principal("alice");
    claim_ok(store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;

    let other = claim_request(&alice, Some("ep-1"), "unused", "t-2", 1_001);
    assert_eq!(store.claim(other).await, Ok(Claim::Busy));
    // Still held at the last moment of the lease.
    let last_moment = claim_request(&alice, Some("ep-1"), "unused", "t-3", 1_000 + LEASE_MS - 1);
    assert_eq!(store.claim(last_moment).await, Ok(Claim::Busy));
}

/// A claim whose lease ran out no longer holds the episode: another turn takes it over, the
/// old turn is then neither in flight nor able to commit over the new one.
pub async fn expired_lease_can_be_taken_over(store: &dyn Store) {
    let alice = principal("alice");
    claim_ok(store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;

    let expiry = 1_000 + LEASE_MS;
    let taker = claim_ok(
        store,
        claim_request(&alice, Some("ep-1"), "unused", "t-2", expiry),
    )
    .await;
    assert_eq!(taker.version, 0);

    // t-1's claim was replaced, so t-1 now meets a busy episode, not its own claim.
    let old = claim_request(&alice, Some("ep-1"), "unused", "t-1", expiry + 1);
    assert_eq!(store.claim(old).await, Ok(Claim::Busy));

    let record = turn_record("ep-1", 1, "t-2", expiry + 2);
    let commit = commit_of(&alice, 0, record, vec![]);
    assert_eq!(store.commit(&commit).await, Ok(1));
    let stale = turn_record("ep-1", 1, "t-1", expiry + 3);
    let stale = commit_of(&alice, 0, stale, vec![]);
    assert_eq!(store.commit(&stale).await, Err(StoreError::Conflict));
}

/// A turn id whose own lease ran out may be claimed again (its earlier run is presumed dead).
pub async fn expired_duplicate_can_be_claimed_again(store: &dyn Store) {
    let alice = principal("alice");
    claim_ok(store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;

    let retry = claim_request(&alice, Some("ep-1"), "unused", "t-1", 1_000 + LEASE_MS);
    let meta = claim_ok(store, retry).await;
    assert_eq!(meta.version, 0);
    let again = claim_request(&alice, Some("ep-1"), "unused", "t-1", 1_000 + LEASE_MS + 1);
    assert_eq!(
        store.claim(again).await,
        Ok(Claim::InFlight),
        "the new claim is live again"
    );
}

/// Releasing a claim frees the episode at once; releasing is idempotent and only the
/// holding turn id releases.
pub async fn release_frees_the_episode(store: &dyn Store) {
    let alice = principal("alice");
    claim_ok(store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;

    assert_eq!(store.release("ep-1", "t-1").await, Ok(()));
    assert_eq!(store.release("ep-1", "t-1").await, Ok(()), "idempotent");
    claim_ok(
        store,
        claim_request(&alice, Some("ep-1"), "unused", "t-2", 1_001),
    )
    .await;

    // Another turn id's release leaves t-2's claim alone.
    assert_eq!(store.release("ep-1", "t-9").await, Ok(()));
    let third = claim_request(&alice, Some("ep-1"), "unused", "t-3", 1_002);
    assert_eq!(store.claim(third).await, Ok(Claim::Busy));
    assert_eq!(store.release("ep-404", "t-1").await, Ok(()));
}

/// A released turn id stays bound to its episode: the same request sent again without an
/// episode id (a client retrying a turn whose commit failed) runs on the episode it was
/// told about, not on a new one.
pub async fn a_released_turn_sent_again_runs_on_its_own_episode(store: &dyn Store) {
    let alice = principal("alice");
    claim_ok(store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
    assert_eq!(store.release("ep-1", "t-1").await, Ok(()));
    let retry = claim_request(&alice, None, "ep-2", "t-1", 1_001);
    let meta = claim_ok(store, retry).await;
    assert_eq!((meta.episode_id.as_str(), meta.version), ("ep-1", 0));
    assert_eq!(
        store.episode(&alice, "ep-2").await,
        Err(StoreError::NotFound)
    );
    let record = turn_record("ep-1", 1, "t-1", 1_002);
    assert_eq!(
        store.commit(&commit_of(&alice, 0, record, vec![])).await,
        Ok(1)
    );
}

/// Turn ids are per principal: one principal's turn id neither replays nor blocks another's.
pub async fn turn_ids_are_namespaced_by_principal(store: &dyn Store) {
    let alice = principal("alice");
    let bob = principal("bob");
    let alices = run_turn(store, &alice, "ep-a", true, "t-1", 1_000).await;

    let bobs = run_turn(store, &bob, "ep-b", true, "t-1", 2_000).await;
    assert_eq!(bobs.episode_id, "ep-b");

    let replay = claim_request(&alice, None, "ep-x", "t-1", 3_000);
    assert_eq!(
        store.claim(replay).await,
        Ok(Claim::Completed(Box::new(alices)))
    );
    let replay = claim_request(&bob, None, "ep-x", "t-1", 3_000);
    assert_eq!(
        store.claim(replay).await,
        Ok(Claim::Completed(Box::new(bobs)))
    );

    claim_ok(store, claim_request(&alice, None, "ep-a2", "t-2", 3_000)).await;
    claim_ok(store, claim_request(&bob, None, "ep-b2", "t-2", 3_000)).await;
}

/// Starting an episode under an id that is already taken is refused as a conflict (the
/// caller picks another id), whoever owns it, and the existing episode is untouched.
pub async fn taken_new_episode_id_is_a_conflict(store: &dyn Store) {
    let alice = principal("alice");
    let bob = principal("bob");
    run_turn(store, &alice, "ep-1", true, "t-1", 1_000).await;
    let before = store.episode(&alice, "ep-1").await;

    let mine = claim_request(&alice, None, "ep-1", "t-2", 2_000);
    assert_eq!(store.claim(mine).await, Err(StoreError::Conflict));
    let theirs = claim_request(&bob, None, "ep-1", "b-1", 2_000);
    assert_eq!(store.claim(theirs).await, Err(StoreError::Conflict));

    assert_eq!(store.episode(&alice, "ep-1").await, before);
    assert_eq!(store.episode(&bob, "ep-1").await, Err(StoreError::NotFound));
    // The refused claims left no claim behind.
    claim_ok(
        store,
        claim_request(&alice, Some("ep-1"), "unused", "t-3", 2_001),
    )
    .await;
}

/// A turn id asked again with another request is a mismatch, whether the turn is running,
/// interrupted or done; nothing runs and nothing is replayed.
pub async fn reused_turn_id_with_another_request_is_a_mismatch(store: &dyn Store) {
    let alice = principal("alice");
    let other = |episode: Option<&str>, now_ms| ClaimRequest {
        fingerprint: "another request".into(),
        ..claim_request(&alice, episode, "ep-9", "t-1", now_ms)
    };
    claim_ok(store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
    // Fingerprints of another form than the runtime's: which part differs is not known.
    let running = Ok(Claim::Mismatch(ClaimMismatch::Request {
        differs: Vec::new(),
    }));
    assert_eq!(store.claim(other(None, 1_001)).await, running);
    assert_eq!(store.claim(other(Some("ep-1"), 1_001)).await, running);
    let elsewhere = claim_request(&alice, Some("ep-2"), "unused", "t-1", 1_001);
    assert_eq!(
        store.claim(elsewhere).await,
        Ok(Claim::Mismatch(ClaimMismatch::Episode {
            episode_id: "ep-1".into()
        }))
    );
    // Interrupted: not restarted for another request.
    let later = 1_000 + LEASE_MS;
    assert_eq!(store.claim(other(None, later)).await, running);
    assert_eq!(
        store.episode(&alice, "ep-9").await,
        Err(StoreError::NotFound),
        "a refused claim creates nothing"
    );
    // Done: not replayed for another request.
    let meta = claim_ok(store, claim_request(&alice, None, "ep-1", "t-1", later)).await;
    let record = turn_record("ep-1", meta.version + 1, "t-1", later + 1);
    assert_eq!(
        store.commit(&commit_of(&alice, 0, record, vec![])).await,
        Ok(1)
    );
    assert_eq!(store.claim(other(None, later + 2)).await, running);
}

/// A turn whose claim died — a crash before it could commit or release — restarts on the
/// episode it had when its id is sent again without one, instead of starting another; also
/// after another turn has taken the episode over meanwhile.
pub async fn interrupted_turn_restarts_on_its_own_episode(store: &dyn Store) {
    let alice = principal("alice");
    claim_ok(store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
    let retry = claim_request(&alice, None, "ep-2", "t-1", 1_000 + LEASE_MS);
    let meta = claim_ok(store, retry).await;
    assert_eq!((meta.episode_id.as_str(), meta.version), ("ep-1", 0));
    assert_eq!(
        store.episode(&alice, "ep-2").await,
        Err(StoreError::NotFound)
    );

    // Dead again; another turn takes the episode over and commits; then t-1 comes back.
    let later = 1_000 + 2 * LEASE_MS;
    run_turn(store, &alice, "ep-1", false, "t-0", later).await;
    let retry = claim_request(&alice, None, "ep-2", "t-1", later + 10);
    let meta = claim_ok(store, retry).await;
    assert_eq!((meta.episode_id.as_str(), meta.version), ("ep-1", 1));
    assert_eq!(
        store.episode(&alice, "ep-2").await,
        Err(StoreError::NotFound)
    );
    // It holds the episode again, and commits there.
    let busy = claim_request(&alice, Some("ep-1"), "unused", "t-2", later + 11);
    assert_eq!(store.claim(busy).await, Ok(Claim::Busy));
    let record = turn_record("ep-1", 2, "t-1", later + 12);
    assert_eq!(
        store.commit(&commit_of(&alice, 1, record, vec![])).await,
        Ok(2)
    );
}
