//! A claim whose release fails (a full disk) is not left to its lease: it is released as
//! soon as the store can write again, and the store does not say it is ready before.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use baton_core::ports::store::Claim;
use baton_core::ports::store::TurnStore as _;
use baton_local::embedded_store::EmbeddedStore;
use baton_testkit::store::records::{claim_ok, claim_request, principal};

#[tokio::test]
async fn a_failed_release_is_retried_and_readiness_waits_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(dir.path()).unwrap();
    let alice = principal("alice");
    claim_ok(&store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;

    fail::cfg("store.release.before", "return").unwrap();
    assert!(store.release("ep-1", "t-1").await.is_err());
    let retry = claim_request(&alice, None, "ep-new", "t-1", 1_001);
    let next = claim_request(&alice, Some("ep-1"), "unused", "t-2", 1_001);
    // The store cannot write: still held, and not ready.
    fail::cfg("store.release.before", "return").unwrap();
    assert_eq!(store.claim(retry.clone()).await, Ok(Claim::InFlight));
    assert!(store.ready().await.is_err());

    // Room again: readiness releases it first, and the turn id runs again at once.
    fail::remove("store.release.before");
    assert_eq!(store.ready().await, Ok(()));
    assert!(matches!(
        store.claim(retry).await,
        Ok(Claim::Claimed(meta)) if meta.episode_id == "ep-1"
    ));
    store.release("ep-1", "t-1").await.unwrap();
    assert!(matches!(store.claim(next).await, Ok(Claim::Claimed(_))));

    // The next claim releases what could not be released (here written, but its answer
    // lost: released again, which changes nothing).
    let bob = principal("bob");
    claim_ok(&store, claim_request(&bob, None, "ep-2", "t-9", 1_000)).await;
    fail::cfg("store.release.after", "1*return").unwrap();
    assert!(store.release("ep-2", "t-9").await.is_err());
    let again = claim_request(&bob, None, "ep-new", "t-9", 1_001);
    assert!(matches!(
        store.claim(again).await,
        Ok(Claim::Claimed(meta)) if meta.episode_id == "ep-2"
    ));
}
