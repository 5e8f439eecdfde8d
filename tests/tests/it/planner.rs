//! A planned turn cut short at each wave boundary and resumed, on the DynamoDB + S3
//! journal (DynamoDB Local and an in-process S3): the scenario every store runs, plus a
//! checkpoint large enough to live in S3.

use std::sync::Arc;

use baton_core::ports::store::Store;
use baton_core::ports::store::{CheckpointStore as _, TurnStore as _};
use baton_testkit::store::records::{claim_ok, claim_request, commit_of, principal, turn_record};
use baton_tests::dynamodb_local::LocalJournal;

#[path = "../../../shared/runtime/tests/shared/planner_resume.rs"]
mod scenario;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_cut_after_each_wave_resumes_without_running_a_node_twice() {
    for cut in [1, 2, 3] {
        let journal = LocalJournal::start().await;
        let store: Arc<dyn Store> = Arc::new(journal.store.clone());
        scenario::cut_after_wave_and_resume(store, cut).await;
    }
}

/// A checkpoint past the item limit goes to S3, reads back whole, and is not read once its
/// turn has committed (the item stays until TTL removes it: the turn function deletes no
/// episode item).
#[tokio::test]
async fn a_large_checkpoint_lives_in_s3_and_is_not_read_after_the_commit() {
    let j = LocalJournal::start().await;
    let alice = principal("alice");
    claim_ok(&j.store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
    let big = "x".repeat(500 * 1024);
    let (saved, sent) = j
        .counted(j.store.save_checkpoint("ep-1", "t-1", &big))
        .await;
    saved.unwrap();
    assert_eq!(
        sent.to_string(),
        "DynamoDB.TransactWriteItems=1 S3.PutObject=1"
    );
    let item = j.item("EP#ep-1", "CKPT#t-1").await.unwrap();
    assert!(
        item.contains_key("s3_key") && !item.contains_key("checkpoint"),
        "{item:?}"
    );
    assert!(item.contains_key("expires_at"), "TTL removes it: {item:?}");
    assert_eq!(j.store.checkpoint("ep-1", "t-1").await.unwrap(), Some(big));
    let record = turn_record("ep-1", 1, "t-1", 1_100);
    j.store
        .commit(&commit_of(&alice, 0, record, vec![]))
        .await
        .unwrap();
    assert_eq!(j.store.checkpoint("ep-1", "t-1").await.unwrap(), None);
}
