//! What was committed is still there after the store is closed and opened again; what was
//! running when its store closed is reclaimed, but not while that store is open.

use baton_core::ports::store::TurnStore as _;
use baton_core::ports::store::{Claim, Commit};
use baton_local::embedded_store::EmbeddedStore;
use baton_testkit::store::records::{
    body, busy_state, claim_ok, claim_request, commit_of, principal, turn_record,
};
use serde_json::json;

#[tokio::test]
async fn committed_turns_and_bodies_survive_reopening_and_running_turns_restart() {
    let dir = tempfile::tempdir().unwrap();
    let alice = principal("alice");
    let record = turn_record("ep-1", 1, "t-1", 1_001);
    {
        let store = EmbeddedStore::open(dir.path()).unwrap();
        claim_ok(&store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
        let commit = Commit {
            state: busy_state(0),
            ..commit_of(
                &alice,
                0,
                record.clone(),
                vec![body("t-1/call-1", json!({"offers": [1, 2]}))],
            )
        };
        assert_eq!(store.commit(&commit).await, Ok(1));
        claim_ok(
            &store,
            claim_request(&alice, Some("ep-1"), "unused", "t-2", 2_000),
        )
        .await;
    }

    let store = EmbeddedStore::open(dir.path()).unwrap();
    let meta = store.episode(&alice, "ep-1").await.unwrap();
    assert_eq!((meta.version, meta.updated_ms), (1, 1_001));
    assert_eq!(meta.state, busy_state(0));
    assert_eq!(
        store.turns(&alice, "ep-1", usize::MAX).await,
        Ok(vec![record.clone()])
    );
    assert_eq!(
        store.body(&alice, "ep-1", "t-1/call-1").await,
        Ok(json!({"offers": [1, 2]}))
    );
    let replay = claim_request(&alice, None, "ep-9", "t-1", 3_000);
    assert_eq!(
        store.claim(replay).await,
        Ok(Claim::Completed(Box::new(record)))
    );
    // t-2 was running when its store closed: it will never commit, so it is reclaimed
    // and, sent again (here without its episode), restarts on ep-1 before its lease ends.
    let interrupted = claim_request(&alice, None, "ep-new", "t-2", 3_000);
    assert!(matches!(
        store.claim(interrupted).await,
        Ok(Claim::Claimed(meta)) if meta.episode_id == "ep-1" && meta.version == 1
    ));
}

#[tokio::test]
async fn two_stores_on_one_folder_see_each_others_commits() {
    let shared = super::TempStore::new();
    let other = shared.reopen(std::time::Duration::from_secs(5));
    let alice = principal("alice");

    claim_ok(
        &shared.store,
        claim_request(&alice, None, "ep-1", "t-1", 1_000),
    )
    .await;
    let busy = claim_request(&alice, Some("ep-1"), "unused", "t-2", 1_001);
    assert_eq!(other.claim(busy.clone()).await, Ok(Claim::Busy));
    // A store opened now leaves the running turn of the open one alone.
    let third = shared.reopen(std::time::Duration::from_secs(5));
    assert_eq!(third.claim(busy).await, Ok(Claim::Busy));

    let record = turn_record("ep-1", 1, "t-1", 1_002);
    let commit = commit_of(&alice, 0, record.clone(), vec![]);
    assert_eq!(shared.store.commit(&commit).await, Ok(1));
    assert_eq!(other.turns(&alice, "ep-1", 1).await, Ok(vec![record]));
}

/// A store written by the first layout opens in this one: its claims are kept, and a turn
/// that was running when its (older) process stopped restarts on its episode.
#[tokio::test]
async fn a_store_of_the_first_layout_is_updated_in_place() {
    let dir = tempfile::tempdir().unwrap();
    {
        let old = rusqlite::Connection::open(dir.path().join("baton.sqlite")).unwrap();
        old.execute_batch(
            "CREATE TABLE episodes (id INTEGER PRIMARY KEY, episode_id TEXT NOT NULL UNIQUE,
                owner TEXT NOT NULL, version INTEGER NOT NULL, created_ms INTEGER NOT NULL,
                updated_ms INTEGER NOT NULL, rolling_summary TEXT, state TEXT NOT NULL);
             CREATE TABLE claims (episode_id TEXT PRIMARY KEY REFERENCES episodes (episode_id),
                principal TEXT NOT NULL, turn_id TEXT NOT NULL, expires_ms INTEGER NOT NULL);
             CREATE INDEX claims_by_turn ON claims (principal, turn_id);
             CREATE TABLE turns (episode_id TEXT NOT NULL REFERENCES episodes (episode_id),
                seq INTEGER NOT NULL, principal TEXT NOT NULL, turn_id TEXT NOT NULL,
                record TEXT NOT NULL, PRIMARY KEY (episode_id, seq), UNIQUE (principal, turn_id));
             CREATE TABLE bodies (episode_id TEXT NOT NULL REFERENCES episodes (episode_id),
                key TEXT NOT NULL, path TEXT NOT NULL, PRIMARY KEY (episode_id, key));
             INSERT INTO episodes (episode_id, owner, version, created_ms, updated_ms, state)
                VALUES ('ep-1', 'alice', 0, 1000, 1000, '{}');
             INSERT INTO claims VALUES ('ep-1', 'alice', 't-1', 99999999999999);
             PRAGMA application_id = 1113683054;
             PRAGMA user_version = 1;",
        )
        .unwrap();
    }
    let store = EmbeddedStore::open(dir.path()).unwrap();
    let alice = principal("alice");
    let retry = claim_request(&alice, None, "ep-new", "t-1", 2_000);
    assert!(matches!(
        store.claim(retry).await,
        Ok(Claim::Claimed(meta)) if meta.episode_id == "ep-1"
    ));
}

/// A store that was open beside one that is gone (`baton chat` beside a `baton serve` that
/// was killed) frees the gone one's claims when they stand in its way, without a restart
/// and before their leases end.
#[tokio::test]
async fn a_store_frees_the_claims_of_a_peer_that_is_gone_when_they_are_in_its_way() {
    let dir = tempfile::tempdir().unwrap();
    let alice = principal("alice");
    let peer = EmbeddedStore::open(dir.path()).unwrap();
    let store = EmbeddedStore::open(dir.path()).unwrap();
    claim_ok(&peer, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
    let next = claim_request(&alice, Some("ep-1"), "unused", "t-2", 1_001);
    assert_eq!(store.claim(next.clone()).await, Ok(Claim::Busy));
    let retry = claim_request(&alice, None, "ep-new", "t-1", 1_001);
    assert_eq!(store.claim(retry.clone()).await, Ok(Claim::InFlight));
    drop(peer);
    // The same turn id sent again restarts on its episode...
    assert!(matches!(
        store.claim(retry).await,
        Ok(Claim::Claimed(meta)) if meta.episode_id == "ep-1"
    ));
    store.release("ep-1", "t-1").await.unwrap();
    // ...and, once that ends, the episode takes the next turn.
    assert!(matches!(store.claim(next).await, Ok(Claim::Claimed(_))));
}

#[tokio::test]
async fn a_peer_gone_frees_the_episode_for_another_turn() {
    let dir = tempfile::tempdir().unwrap();
    let alice = principal("alice");
    let peer = EmbeddedStore::open(dir.path()).unwrap();
    let store = EmbeddedStore::open(dir.path()).unwrap();
    claim_ok(&peer, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
    let next = claim_request(&alice, Some("ep-1"), "unused", "t-2", 1_001);
    assert_eq!(store.claim(next.clone()).await, Ok(Claim::Busy));
    drop(peer);
    assert!(matches!(store.claim(next).await, Ok(Claim::Claimed(_))));
}
