//! The DynamoDB + S3 journal against DynamoDB Local and an in-process S3: the store
//! conformance suite unchanged, then what only this store has (bodies and pictures in S3,
//! S3 faults, request counts, TTL, the compaction mark and summary on META, upstream
//! conversations' items, the table's schema).

use std::collections::{BTreeMap, HashMap};

use aws_sdk_dynamodb::types::{AttributeValue, ProjectionType, StreamViewType, TimeToLiveStatus};
use baton_core::memory::EpisodeSummary;
use baton_core::ports::store::{Body, Claim, StoreError};
use baton_core::ports::store::{SummaryStore as _, TurnStore as _, UpstreamStore as _};
use baton_core::ports::upstream::UpstreamConversation;
use baton_testkit::store::records::{
    LEASE_MS, body, busy_state, claim_ok, claim_request, commit_of, principal, run_turn,
    turn_record,
};
use baton_tests::dynamodb_local::{DynamoDbLocal, JournalBucket, LocalJournal};
use serde_json::{Value, json};

mod bodies;
mod memory;
mod pictures;
mod upstream;

fn text<'a>(item: &'a HashMap<String, AttributeValue>, name: &str) -> &'a str {
    item.get(name)
        .and_then(|v| v.as_s().ok())
        .unwrap_or_else(|| panic!("{name} is not a string in {item:?}"))
}

fn number(item: &HashMap<String, AttributeValue>, name: &str) -> u64 {
    item.get(name)
        .and_then(|v| v.as_n().ok())
        .unwrap_or_else(|| panic!("{name} is not a number in {item:?}"))
        .parse()
        .unwrap()
}

/// A fresh journal. Its table has no TTL: the suite's clock starts near 1970, and
/// DynamoDB Local would delete its claims within seconds; reads check expiry themselves
/// (see the TTL test below).
async fn journal() -> LocalJournal {
    LocalJournal::start().await
}

baton_testkit::store_conformance!(journal().await);

/// A JSON document of about `bytes` bytes.
fn document(bytes: usize) -> Value {
    json!({ "blob": "x".repeat(bytes) })
}

fn parsed(body: &Body) -> Value {
    serde_json::from_str(&body.json).unwrap()
}

// ---- requests per operation ----

#[tokio::test]
async fn a_claim_costs_one_transaction_plus_one_read_on_an_existing_episode() {
    let j = journal().await;
    let alice = principal("alice");

    let new = claim_request(&alice, None, "ep-1", "t-1", 1_000);
    let (claim, sent) = j.counted(j.store.claim(new)).await;
    assert!(matches!(claim, Ok(Claim::Claimed(_))));
    assert_eq!(sent.to_string(), "DynamoDB.TransactWriteItems=1");

    let commit = commit_of(&alice, 0, turn_record("ep-1", 1, "t-1", 1_001), vec![]);
    j.store.commit(&commit).await.unwrap();

    let existing = claim_request(&alice, Some("ep-1"), "unused", "t-2", 2_000);
    let (claim, sent) = j.counted(j.store.claim(existing)).await;
    assert!(matches!(claim, Ok(Claim::Claimed(ref m)) if m.version == 1));
    assert_eq!(
        sent.to_string(),
        "DynamoDB.GetItem=1 DynamoDB.TransactWriteItems=1"
    );
}

#[tokio::test]
async fn refused_claims_are_told_apart_without_extra_reads() {
    let j = journal().await;
    let alice = principal("alice");
    let bob = principal("bob");
    claim_ok(&j.store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
    let commit = commit_of(&alice, 0, turn_record("ep-1", 1, "t-1", 1_001), vec![]);
    j.store.commit(&commit).await.unwrap();
    claim_ok(
        &j.store,
        claim_request(&alice, Some("ep-1"), "unused", "t-2", 2_000),
    )
    .await;

    let one_transaction = "DynamoDB.TransactWriteItems=1";
    let cases = [
        (
            claim_request(&alice, Some("ep-1"), "unused", "t-3", 2_001),
            Ok(Claim::Busy),
        ),
        (
            claim_request(&alice, Some("ep-1"), "unused", "t-2", 2_001),
            Ok(Claim::InFlight),
        ),
        (
            claim_request(&bob, Some("ep-1"), "unused", "b-1", 2_001),
            Err(StoreError::NotFound),
        ),
        (
            claim_request(&alice, Some("ep-404"), "unused", "t-4", 2_001),
            Err(StoreError::NotFound),
        ),
        (
            claim_request(&alice, None, "ep-1", "t-5", 2_001),
            Err(StoreError::Conflict),
        ),
    ];
    for (request, expected) in cases {
        let (answer, sent) = j.counted(j.store.claim(request.clone())).await;
        assert_eq!(answer, expected, "{request:?}");
        assert_eq!(sent.to_string(), one_transaction, "{request:?}");
    }

    // A replay reads the stored record: one more request.
    let replay = claim_request(&alice, None, "ep-9", "t-1", 2_002);
    let (answer, sent) = j.counted(j.store.claim(replay)).await;
    assert!(matches!(answer, Ok(Claim::Completed(_))));
    assert_eq!(
        sent.to_string(),
        "DynamoDB.GetItem=1 DynamoDB.TransactWriteItems=1"
    );
}

#[tokio::test]
async fn commit_and_reads_cost_one_request_each() {
    let j = journal().await;
    let alice = principal("alice");
    claim_ok(&j.store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
    let commit = commit_of(
        &alice,
        0,
        turn_record("ep-1", 1, "t-1", 1_001),
        vec![
            body("t-1/call-1", json!({"a": 1})),
            body("t-1/call-2", json!([2])),
        ],
    );

    let (version, sent) = j.counted(j.store.commit(&commit)).await;
    assert_eq!(version, Ok(1));
    assert_eq!(sent.to_string(), "DynamoDB.TransactWriteItems=1");

    let (turns, sent) = j.counted(j.store.turns(&alice, "ep-1", 10)).await;
    assert_eq!(turns.unwrap().len(), 1);
    assert_eq!(sent.to_string(), "DynamoDB.Query=1");

    let (meta, sent) = j.counted(j.store.episode(&alice, "ep-1")).await;
    assert_eq!(meta.unwrap().version, 1);
    assert_eq!(sent.to_string(), "DynamoDB.GetItem=1");

    claim_ok(
        &j.store,
        claim_request(&alice, Some("ep-1"), "unused", "t-2", 2_000),
    )
    .await;
    let (released, sent) = j.counted(j.store.release("ep-1", "t-2")).await;
    assert_eq!(released, Ok(()));
    assert_eq!(sent.to_string(), "DynamoDB.UpdateItem=2");
    let (released, sent) = j.counted(j.store.release("ep-404", "t-2")).await;
    assert_eq!(released, Ok(()));
    assert_eq!(sent.to_string(), "DynamoDB.UpdateItem=1");
}

// ---- TTL ----

#[tokio::test]
async fn a_claim_carries_a_ttl_that_its_commit_removes() {
    let j = journal().await;
    let alice = principal("alice");
    claim_ok(&j.store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
    let claimed = j.item("PR#alice", "TID#t-1").await.unwrap();
    assert_eq!(text(&claimed, "state"), "claimed");
    assert_eq!(text(&claimed, "episode_id"), "ep-1");
    assert_eq!(number(&claimed, "lease_expires_ms"), 1_000 + LEASE_MS);
    assert_eq!(
        number(&claimed, "expires_at"),
        (1_000 + LEASE_MS) / 1_000 + 86_400,
        "epoch seconds: the lease's end plus a day"
    );

    let commit = commit_of(&alice, 0, turn_record("ep-1", 1, "t-1", 1_001), vec![]);
    j.store.commit(&commit).await.unwrap();
    let done = j.item("PR#alice", "TID#t-1").await.unwrap();
    assert_eq!(text(&done, "state"), "done");
    assert_eq!(number(&done, "seq"), 1);
    assert!(
        !done.contains_key("expires_at"),
        "a done turn id never expires"
    );
    assert!(!done.contains_key("lease_expires_ms"));
    let meta = j.item("EP#ep-1", "META").await.unwrap();
    assert!(
        !meta.contains_key("lease_turn"),
        "the commit released the lease"
    );
}

#[tokio::test]
async fn a_claim_past_its_ttl_is_absent_even_before_dynamodb_deletes_it() {
    // The table has no TTL, so DynamoDB Local keeps expired items as AWS may for days.
    let j = journal().await;
    let alice = principal("alice");
    let now_ms = 1_800_000_000_000u64;
    let now_s = now_ms / 1_000;
    // Both leases still run by their own field; only `expires_at` differs.
    let stale_claim = |turn_id: &str, expires_at: u64| {
        HashMap::from([
            ("pk".to_owned(), AttributeValue::S("PR#alice".into())),
            ("sk".to_owned(), AttributeValue::S(format!("TID#{turn_id}"))),
            ("episode_id".to_owned(), AttributeValue::S("ep-0".into())),
            ("state".to_owned(), AttributeValue::S("claimed".into())),
            (
                "lease_expires_ms".to_owned(),
                AttributeValue::N((now_ms + 3_600_000).to_string()),
            ),
            (
                "expires_at".to_owned(),
                AttributeValue::N(expires_at.to_string()),
            ),
        ])
    };
    // The episode those claims were made on, its own lease long over.
    run_turn(&j.store, &alice, "ep-0", true, "t-0", 1_000).await;
    j.put_item(stale_claim("t-expired", now_s - 1)).await;
    j.put_item(stale_claim("t-live", now_s + 3_600)).await;

    // Sent again, the dead claim's turn restarts on its own episode.
    let expired = claim_request(&alice, None, "ep-1", "t-expired", now_ms);
    assert_eq!(claim_ok(&j.store, expired).await.episode_id, "ep-0");
    let live = claim_request(&alice, None, "ep-2", "t-live", now_ms);
    assert_eq!(j.store.claim(live).await, Ok(Claim::InFlight));
}

// ---- ownership and leases ----

#[tokio::test]
async fn another_principals_commit_and_reads_touch_neither_table_nor_bucket() {
    let j = journal().await;
    let alice = principal("alice");
    let bob = principal("bob");
    claim_ok(&j.store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
    let secret = body("t-1/call-1", document(40 * 1024));
    let commit = commit_of(
        &alice,
        0,
        turn_record("ep-1", 1, "t-1", 1_001),
        vec![secret.clone()],
    );
    j.store.commit(&commit).await.unwrap();

    // Bob reuses Alice's turn id, so his body would land on her object key.
    let intrusion = commit_of(
        &bob,
        1,
        turn_record("ep-1", 2, "t-1", 2_000),
        vec![Body {
            key: "t-1/call-9".into(),
            json: document(50 * 1024).to_string(),
        }],
    );
    let (result, sent) = j.counted(j.store.commit(&intrusion)).await;
    assert_eq!(result, Err(StoreError::NotFound));
    assert_eq!(
        sent.to_string(),
        "DynamoDB.GetItem=1",
        "no S3 write, no transaction"
    );
    assert_eq!(
        j.object("bodies/ep-1/t-1/0.json").await.unwrap(),
        secret.json.as_bytes()
    );

    let (read, sent) = j.counted(j.store.body(&bob, "ep-1", "t-1/call-1")).await;
    assert_eq!(read, Err(StoreError::NotFound));
    assert_eq!(sent.service_total("S3"), 0);
    assert_eq!(
        j.store.turns(&bob, "ep-1", 0).await,
        Err(StoreError::NotFound)
    );
    assert_eq!(j.store.turns(&alice, "ep-1", 0).await, Ok(vec![]));
}

#[tokio::test]
async fn a_turn_whose_lease_was_taken_over_may_still_commit_first() {
    let j = journal().await;
    let alice = principal("alice");
    claim_ok(&j.store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
    let expiry = 1_000 + LEASE_MS;
    claim_ok(
        &j.store,
        claim_request(&alice, Some("ep-1"), "unused", "t-2", expiry),
    )
    .await;

    // t-1 finishes late: the version still matches, so its turn is kept (as in every
    // store); the first guess (its own lease) is wrong, so the commit is sent twice.
    let late = commit_of(&alice, 0, turn_record("ep-1", 1, "t-1", expiry + 1), vec![]);
    let (version, sent) = j.counted(j.store.commit(&late)).await;
    assert_eq!(version, Ok(1));
    assert_eq!(sent.to_string(), "DynamoDB.TransactWriteItems=2");

    // t-2 keeps its lease and loses the race.
    let third = claim_request(&alice, Some("ep-1"), "unused", "t-3", expiry + 2);
    assert_eq!(j.store.claim(third.clone()).await, Ok(Claim::Busy));
    let stale = commit_of(&alice, 0, turn_record("ep-1", 1, "t-2", expiry + 3), vec![]);
    assert_eq!(j.store.commit(&stale).await, Err(StoreError::Conflict));
    let rerun = commit_of(&alice, 1, turn_record("ep-1", 2, "t-2", expiry + 4), vec![]);
    assert_eq!(j.store.commit(&rerun).await, Ok(2));
    claim_ok(&j.store, third).await;
}

// ---- limits ----

#[tokio::test]
async fn a_commit_over_the_transaction_limits_is_refused_whole() {
    let j = journal().await;
    let alice = principal("alice");
    claim_ok(&j.store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;

    let too_many: Vec<Body> = (0..98).map(|i| body(&format!("k{i}"), json!(i))).collect();
    let commit = commit_of(&alice, 0, turn_record("ep-1", 1, "t-1", 1_001), too_many);
    let (result, sent) = j.counted(j.store.commit(&commit)).await;
    assert!(
        matches!(result, Err(StoreError::Unavailable(_))),
        "{result:?}"
    );
    assert_eq!(sent.total(), 0, "refused before sending anything");

    let mut huge = turn_record("ep-1", 1, "t-1", 1_001);
    huge.narration = "n".repeat(500 * 1024);
    let commit = commit_of(&alice, 0, huge, vec![]);
    assert!(matches!(
        j.store.commit(&commit).await,
        Err(StoreError::Unavailable(_))
    ));

    // 97 bodies (the most one transaction holds) commit.
    let most: Vec<Body> = (0..97).map(|i| body(&format!("k{i}"), json!(i))).collect();
    let commit = commit_of(&alice, 0, turn_record("ep-1", 1, "t-1", 1_001), most);
    assert_eq!(j.store.commit(&commit).await, Ok(1));
    assert_eq!(j.store.body(&alice, "ep-1", "k96").await, Ok(json!(96)));
}

// ---- schema ----

#[tokio::test]
async fn the_table_has_the_stream_the_compaction_index_and_ttl() {
    let dynamodb = DynamoDbLocal::connect().await;
    let table = dynamodb.fresh_table().await;
    let client = dynamodb.client();

    let described = client
        .describe_table()
        .table_name(&table)
        .send()
        .await
        .unwrap()
        .table
        .unwrap();
    let stream = described.stream_specification.unwrap();
    assert!(stream.stream_enabled);
    assert_eq!(
        stream.stream_view_type,
        Some(StreamViewType::NewAndOldImages)
    );
    let indexes = described.global_secondary_indexes.unwrap();
    assert_eq!(indexes.len(), 1);
    let index = &indexes[0];
    assert_eq!(index.index_name.as_deref(), Some("compaction-due"));
    let keys: Vec<_> = index
        .key_schema
        .iter()
        .flatten()
        .map(|k| k.attribute_name.as_str())
        .collect();
    assert_eq!(keys, vec!["due_pk", "compaction_due"]);
    // The owner comes with each due episode: the queue needs no read per episode.
    let projection = index.projection.as_ref().unwrap();
    assert_eq!(projection.projection_type, Some(ProjectionType::Include));
    assert_eq!(projection.non_key_attributes(), ["owner"]);

    let ttl = client
        .describe_time_to_live()
        .table_name(&table)
        .send()
        .await
        .unwrap()
        .time_to_live_description
        .unwrap();
    assert_eq!(ttl.time_to_live_status, Some(TimeToLiveStatus::Enabled));
    assert_eq!(ttl.attribute_name.as_deref(), Some("expires_at"));
}
