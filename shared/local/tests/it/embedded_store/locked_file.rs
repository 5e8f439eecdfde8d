//! A file another process holds locked gives "unavailable" promptly: no hang, no panic.

use std::time::Duration;

use baton_core::ports::store::TurnStore as _;
use baton_core::ports::store::{Claim, StoreError};
use baton_local::embedded_store::{DATABASE_FILE, EmbeddedStore};
use baton_testkit::store::records::{claim_ok, claim_request, commit_of, principal, turn_record};

#[tokio::test]
async fn writes_against_a_locked_file_are_unavailable_until_it_is_released() {
    let dir = tempfile::tempdir().unwrap();
    let store =
        EmbeddedStore::open_with_busy_timeout(dir.path(), Duration::from_millis(100)).unwrap();
    let alice = principal("alice");
    claim_ok(&store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;

    let locker = rusqlite::Connection::open(dir.path().join(DATABASE_FILE)).unwrap();
    locker.execute_batch("BEGIN EXCLUSIVE").unwrap();

    // The guard only bounds a regression into a hang; the busy timeout answers first.
    let guard = Duration::from_secs(20);
    let claim = claim_request(&alice, None, "ep-2", "t-2", 1_001);
    let outcome = tokio::time::timeout(guard, store.claim(claim))
        .await
        .unwrap();
    assert!(
        matches!(&outcome, Err(StoreError::Unavailable(m)) if !m.is_empty()),
        "{outcome:?}"
    );
    let commit = commit_of(&alice, 0, turn_record("ep-1", 1, "t-1", 1_002), vec![]);
    let outcome = tokio::time::timeout(guard, store.commit(&commit))
        .await
        .unwrap();
    assert!(
        matches!(outcome, Err(StoreError::Unavailable(_))),
        "{outcome:?}"
    );

    locker.execute_batch("ROLLBACK").unwrap();
    let claim = claim_request(&alice, None, "ep-2", "t-2", 1_003);
    assert!(matches!(store.claim(claim).await, Ok(Claim::Claimed(_))));
    let commit = commit_of(&alice, 0, turn_record("ep-1", 1, "t-1", 1_004), vec![]);
    assert_eq!(store.commit(&commit).await, Ok(1));
}
