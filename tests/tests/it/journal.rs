//! The DynamoDB + S3 journal against DynamoDB Local and an in-process S3: the store
//! conformance suite unchanged, then what only this store has (bodies in S3, S3 faults,
//! request counts, TTL, the compaction mark and summary on META, upstream conversations'
//! items, the table's schema).

use std::collections::{BTreeMap, HashMap};

use aws_sdk_dynamodb::types::{AttributeValue, ProjectionType, StreamViewType, TimeToLiveStatus};
use baton_core::memory::EpisodeSummary;
use baton_core::ports::store::{Body, Claim, Store, StoreError};
use baton_core::ports::upstream::UpstreamConversation;
use baton_testkit::store::records::{
    LEASE_MS, body, busy_state, claim_ok, claim_request, commit_of, principal, run_turn,
    turn_record,
};
use baton_tests::dynamodb_local::{DynamoDbLocal, JournalBucket, LocalJournal};
use serde_json::{Value, json};

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

// ---- bodies and S3 ----

#[tokio::test]
async fn large_body_goes_to_s3_first_and_reads_back() {
    let j = journal().await;
    let alice = principal("alice");
    claim_ok(&j.store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
    let large = body("t-1/call-1", document(40 * 1024));
    let small = body("t-1/call-2", json!({"small": true}));
    let commit = commit_of(
        &alice,
        0,
        turn_record("ep-1", 1, "t-1", 1_001),
        vec![large.clone(), small.clone()],
    );

    let (version, sent) = j.counted(j.store.commit(&commit)).await;
    assert_eq!(version, Ok(1));
    assert_eq!(
        sent.to_string(),
        "DynamoDB.GetItem=1 DynamoDB.TransactWriteItems=1 S3.PutObject=1"
    );

    let item = j.item("EP#ep-1", "BODY#t-1/call-1").await.unwrap();
    assert_eq!(text(&item, "s3_key"), "bodies/ep-1/t-1/0.json");
    assert!(
        !item.contains_key("json"),
        "a large body is not also inline"
    );
    assert_eq!(text(&item, "owner"), "alice");
    assert_eq!(text(&item, "turn_id"), "t-1");
    let stored = j.object("bodies/ep-1/t-1/0.json").await.unwrap();
    assert_eq!(stored, large.json.as_bytes());
    let inline = j.item("EP#ep-1", "BODY#t-1/call-2").await.unwrap();
    assert_eq!(text(&inline, "json"), small.json);

    let (read, sent) = j.counted(j.store.body(&alice, "ep-1", "t-1/call-1")).await;
    assert_eq!(read, Ok(parsed(&large)));
    assert_eq!(sent.to_string(), "DynamoDB.GetItem=1 S3.GetObject=1");
}

/// A long conversation waiting for the user (D-36) holds its specialists' messages in the
/// episode state: past DynamoDB's 400 KB per item, META names an S3 object instead of
/// holding it, and every read gets it back whole.
#[tokio::test]
async fn a_state_too_large_for_meta_goes_to_s3_and_reads_back_whole() {
    let j = journal().await;
    let alice = principal("alice");
    claim_ok(&j.store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
    let mut state = busy_state(0);
    let waiting = state.awaiting.as_mut().unwrap().jobs[1]
        .waiting
        .as_mut()
        .unwrap();
    for i in 0..60 {
        waiting
            .messages
            .push(baton_core::message::Message::user(format!(
                "{i}: {}",
                "é".repeat(5 * 1024)
            )));
    }
    let mut commit = commit_of(&alice, 0, turn_record("ep-1", 1, "t-1", 1_001), vec![]);
    commit.state = state.clone();
    let (version, sent) = j.counted(j.store.commit(&commit)).await;
    assert_eq!(version, Ok(1), "a large waiting state pauses the turn");
    assert_eq!(
        sent.to_string(),
        "DynamoDB.GetItem=1 DynamoDB.TransactWriteItems=1 S3.PutObject=1"
    );
    let meta = j.item("EP#ep-1", "META").await.unwrap();
    assert!(!meta.contains_key("state"), "not also in META");
    assert_eq!(text(&meta, "state_s3_key"), "bodies/ep-1/t-1/state.json");
    let stored = j.object("bodies/ep-1/t-1/state.json").await.unwrap();
    assert!(stored.len() > 400 * 1024, "{}", stored.len());

    let (read, sent) = j.counted(j.store.episode(&alice, "ep-1")).await;
    assert_eq!(read.unwrap().state, state);
    assert_eq!(sent.to_string(), "DynamoDB.GetItem=1 S3.GetObject=1");
    // The turn that resumes gets it from its claim.
    let claimed = claim_ok(
        &j.store,
        claim_request(&alice, Some("ep-1"), "unused", "t-2", 2_000),
    )
    .await;
    assert_eq!(claimed.state, state);
    // Once the wait is over, a small state is back in META, and the key is gone.
    let mut next = commit_of(&alice, 1, turn_record("ep-1", 2, "t-2", 2_001), vec![]);
    next.state = busy_state(0);
    next.state.awaiting = None;
    assert_eq!(j.store.commit(&next).await, Ok(2));
    let meta = j.item("EP#ep-1", "META").await.unwrap();
    assert!(!meta.contains_key("state_s3_key"));
    assert_eq!(
        j.store.episode(&alice, "ep-1").await.unwrap().state,
        next.state
    );
    // Another principal learns nothing, and nothing is read from the bucket for them.
    let (read, sent) = j
        .counted(j.store.episode(&principal("mallory"), "ep-1"))
        .await;
    assert_eq!(read.map(|_| ()), Err(StoreError::NotFound));
    assert_eq!(sent.service_total("S3"), 0);
}

/// A state object the bucket's lifecycle rule expired reads as an empty state: everything
/// in it (a wait of a day, the rate window's minutes) had run out by then.
#[tokio::test]
async fn an_expired_state_object_reads_as_empty() {
    let j = journal().await;
    let alice = principal("alice");
    claim_ok(&j.store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
    let mut commit = commit_of(&alice, 0, turn_record("ep-1", 1, "t-1", 1_001), vec![]);
    commit.state = busy_state(0);
    commit.state.pending[0].query = "x".repeat(300 * 1024);
    assert_eq!(j.store.commit(&commit).await, Ok(1));
    j.delete_object("bodies/ep-1/t-1/state.json").await;
    let meta = j.store.episode(&alice, "ep-1").await.unwrap();
    assert_eq!(meta.state, baton_core::turn::EpisodeState::default());
    assert_eq!(meta.version, 1);
}

#[tokio::test]
async fn small_bodies_make_no_s3_request() {
    let j = journal().await;
    let alice = principal("alice");
    claim_ok(&j.store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
    let bodies = vec![
        body("t-1/call-1", json!({"offers": [1, 2, 3]})),
        body("t-1/call-2", document(31 * 1024)),
    ];
    let commit = commit_of(
        &alice,
        0,
        turn_record("ep-1", 1, "t-1", 1_001),
        bodies.clone(),
    );

    let (version, sent) = j.counted(j.store.commit(&commit)).await;
    assert_eq!(version, Ok(1));
    assert_eq!(sent.service_total("S3"), 0, "{sent}");
    for expected in &bodies {
        let (read, sent) = j.counted(j.store.body(&alice, "ep-1", &expected.key)).await;
        assert_eq!(read, Ok(parsed(expected)));
        assert_eq!(sent.to_string(), "DynamoDB.GetItem=1");
    }
}

#[tokio::test]
async fn the_inline_limit_is_inclusive() {
    let j =
        LocalJournal::start_with(|c| c.with_inline_body_limit(100), JournalBucket::Working).await;
    let alice = principal("alice");
    claim_ok(&j.store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
    let at_limit = Body {
        key: "at".into(),
        json: format!("\"{}\"", "a".repeat(98)),
    };
    let over_limit = Body {
        key: "over".into(),
        json: format!("\"{}\"", "a".repeat(99)),
    };
    assert_eq!(at_limit.json.len(), 100);
    let commit = commit_of(
        &alice,
        0,
        turn_record("ep-1", 1, "t-1", 1_001),
        vec![at_limit.clone(), over_limit.clone()],
    );
    j.store.commit(&commit).await.unwrap();

    let at = j.item("EP#ep-1", "BODY#at").await.unwrap();
    assert!(at.contains_key("json"));
    let over = j.item("EP#ep-1", "BODY#over").await.unwrap();
    assert_eq!(text(&over, "s3_key"), "bodies/ep-1/t-1/1.json");
    assert_eq!(
        j.store.body(&alice, "ep-1", "over").await,
        Ok(parsed(&over_limit))
    );
}

#[tokio::test]
async fn a_failed_s3_write_leaves_no_trace_in_the_table() {
    let j = LocalJournal::start_with(|c| c, JournalBucket::Broken).await;
    let alice = principal("alice");
    claim_ok(&j.store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
    let commit = commit_of(
        &alice,
        0,
        turn_record("ep-1", 1, "t-1", 1_001),
        vec![
            body("t-1/small", json!("inline")),
            body("t-1/large", document(64 * 1024)),
        ],
    );

    let (result, sent) = j.counted(j.store.commit(&commit)).await;
    assert!(
        matches!(result, Err(StoreError::Unavailable(_))),
        "{result:?}"
    );
    assert_eq!(sent.get("S3", "PutObject"), 1);
    assert_eq!(
        sent.get("DynamoDB", "TransactWriteItems"),
        0,
        "nothing is sent to the table after a failed S3 write"
    );

    assert_eq!(j.store.turns(&alice, "ep-1", usize::MAX).await, Ok(vec![]));
    assert_eq!(j.store.episode(&alice, "ep-1").await.unwrap().version, 0);
    assert_eq!(j.sort_keys("EP#ep-1").await, vec!["META"]);
    assert_eq!(
        j.store.body(&alice, "ep-1", "t-1/small").await,
        Err(StoreError::NotFound)
    );
    let turn_id = j.item("PR#alice", "TID#t-1").await.unwrap();
    assert_eq!(text(&turn_id, "state"), "claimed");

    // The claim still holds, and releasing it frees the episode.
    let other = claim_request(&alice, Some("ep-1"), "unused", "t-2", 1_002);
    assert_eq!(j.store.claim(other.clone()).await, Ok(Claim::Busy));
    assert_eq!(j.store.release("ep-1", "t-1").await, Ok(()));
    claim_ok(&j.store, other).await;
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

// ---- episode memory ----

fn summary(upto_seq: u64) -> EpisodeSummary {
    EpisodeSummary {
        upto_seq,
        text: format!("Up to turn {upto_seq}: points and a declined card."),
        agents: BTreeMap::from([("rewards".to_owned(), "12,400 points.".to_owned())]),
    }
}

/// Claims and commits turn `seq` of ep-1 (alice's), marking it due or not.
async fn commit_turn(j: &LocalJournal, seq: u64, now_ms: u64, due: bool) {
    let alice = principal("alice");
    let turn_id = format!("t-{seq}");
    let episode = (seq > 1).then_some("ep-1");
    claim_ok(
        &j.store,
        claim_request(&alice, episode, "ep-1", &turn_id, now_ms),
    )
    .await;
    let mut commit = commit_of(
        &alice,
        seq - 1,
        turn_record("ep-1", seq, &turn_id, now_ms + 1),
        vec![],
    );
    commit.compaction_due = due;
    j.store.commit(&commit).await.unwrap();
}

#[tokio::test]
async fn the_commit_marks_meta_due_and_the_summary_clears_the_mark_in_one_request() {
    let j = journal().await;
    let alice = principal("alice");
    commit_turn(&j, 1, 1_000, false).await;
    let meta = j.item("EP#ep-1", "META").await.unwrap();
    assert!(!meta.contains_key("due_pk") && !meta.contains_key("compaction_due"));

    // The mark rides on the commit's one transaction.
    claim_ok(
        &j.store,
        claim_request(&alice, Some("ep-1"), "ep-1", "t-2", 2_000),
    )
    .await;
    let mut commit = commit_of(&alice, 1, turn_record("ep-1", 2, "t-2", 2_001), vec![]);
    commit.compaction_due = true;
    let (version, sent) = j.counted(j.store.commit(&commit)).await;
    assert_eq!(version, Ok(2));
    assert_eq!(sent.to_string(), "DynamoDB.TransactWriteItems=1");
    commit_turn(&j, 3, 3_000, true).await;
    let meta = j.item("EP#ep-1", "META").await.unwrap();
    assert_eq!(text(&meta, "due_pk"), "DUE");
    assert_eq!(
        number(&meta, "compaction_due"),
        2_001,
        "the first mark's time"
    );

    let (due, sent) = j.counted(j.store.due_episodes(10)).await;
    assert_eq!(due.unwrap()[0].owner, alice);
    assert_eq!(sent.to_string(), "DynamoDB.Query=1");
    let (turns, sent) = j.counted(j.store.turns_after(&alice, "ep-1", 1, 10)).await;
    assert_eq!(turns.unwrap().len(), 2);
    assert_eq!(sent.to_string(), "DynamoDB.Query=1");

    let (saved, sent) = j
        .counted(j.store.save_summary(&alice, "ep-1", 3, &summary(1)))
        .await;
    assert_eq!(saved, Ok(()));
    assert_eq!(sent.to_string(), "DynamoDB.UpdateItem=1");
    let meta = j.item("EP#ep-1", "META").await.unwrap();
    assert!(!meta.contains_key("due_pk") && !meta.contains_key("compaction_due"));
    let stored: EpisodeSummary = serde_json::from_str(text(&meta, "summary")).unwrap();
    assert_eq!(stored, summary(1), "the summary is JSON text");
    assert_eq!(number(&meta, "version"), 3);

    // A refused summary costs the same one request, whichever the refusal.
    let bob = principal("bob");
    for (who, episode, version, expected) in [
        (&alice, "ep-1", 2, StoreError::Conflict),
        (&bob, "ep-1", 3, StoreError::NotFound),
        (&alice, "ep-404", 3, StoreError::NotFound),
    ] {
        let (saved, sent) = j
            .counted(j.store.save_summary(who, episode, version, &summary(2)))
            .await;
        assert_eq!(saved, Err(expected), "{who} {episode} {version}");
        assert_eq!(sent.to_string(), "DynamoDB.UpdateItem=1");
    }
    assert!(
        j.item("EP#ep-404", "META").await.is_none(),
        "nothing created"
    );
    assert_eq!(
        j.store.episode(&alice, "ep-1").await.unwrap().summary,
        Some(summary(1))
    );
}

#[tokio::test]
async fn turns_after_checks_ownership_even_when_no_turn_follows() {
    let j = journal().await;
    let alice = principal("alice");
    let bob = principal("bob");
    commit_turn(&j, 1, 1_000, false).await;
    commit_turn(&j, 2, 2_000, false).await;

    let (turns, sent) = j.counted(j.store.turns_after(&bob, "ep-1", 0, 10)).await;
    assert_eq!(turns, Err(StoreError::NotFound));
    assert_eq!(sent.to_string(), "DynamoDB.Query=1");
    // No turn follows: the META read decides (the Query is skipped past any seq a key holds).
    for (after, requests) in [
        (2, "DynamoDB.GetItem=1 DynamoDB.Query=1"),
        (10_000_000_000, "DynamoDB.GetItem=1"),
        (u64::MAX, "DynamoDB.GetItem=1"),
    ] {
        assert_eq!(
            j.store.turns_after(&bob, "ep-1", after, 10).await,
            Err(StoreError::NotFound)
        );
        let (turns, sent) = j
            .counted(j.store.turns_after(&alice, "ep-1", after, 10))
            .await;
        assert_eq!(turns, Ok(vec![]));
        assert_eq!(sent.to_string(), requests, "after {after}");
    }
    assert_eq!(j.store.turns_after(&alice, "ep-1", 0, 0).await, Ok(vec![]));
    assert_eq!(
        j.store.turns_after(&bob, "ep-1", 0, 0).await,
        Err(StoreError::NotFound)
    );
}

#[tokio::test]
async fn a_summary_that_does_not_decode_is_corrupt() {
    let j = journal().await;
    let alice = principal("alice");
    commit_turn(&j, 1, 1_000, false).await;
    let mut meta = j.item("EP#ep-1", "META").await.unwrap();
    meta.insert("summary".into(), AttributeValue::S("{\"upto_seq\":".into()));
    j.put_item(meta).await;
    assert!(matches!(
        j.store.episode(&alice, "ep-1").await,
        Err(StoreError::Corrupt(_))
    ));
}

// ---- upstream conversations ----

fn conversation(agent: &str, id: &str, expires_ms: u64) -> UpstreamConversation {
    UpstreamConversation {
        agent_id: agent.to_owned(),
        conversation_id: id.to_owned(),
        expires_ms,
        pending: None,
    }
}

#[tokio::test]
async fn an_upstream_conversation_is_its_own_item_with_a_ttl_in_seconds() {
    let j = journal().await;
    let alice = principal("alice");
    run_turn(&j.store, &alice, "ep-1", true, "t-1", 1_000).await;
    j.store
        .save_upstream_conversation(&alice, "ep-1", &conversation("support", "c-1", 3_301_500))
        .await
        .unwrap();

    let item = j.item("EP#ep-1", "UPSTREAM#support").await.unwrap();
    let mut names: Vec<&str> = item.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "conversation_id",
            "expires_at",
            "expires_ms",
            "owner",
            "pk",
            "sk"
        ]
    );
    assert_eq!(text(&item, "owner"), "alice");
    assert_eq!(text(&item, "conversation_id"), "c-1");
    assert_eq!(number(&item, "expires_ms"), 3_301_500);
    assert_eq!(
        number(&item, "expires_at"),
        3_302 + 86_400,
        "epoch seconds, rounded up, a day past the expiry"
    );
    // Beside the turns, never among them, and META untouched.
    assert_eq!(
        j.sort_keys("EP#ep-1").await,
        ["META", "TURN#0000000001", "UPSTREAM#support"]
    );
    assert_eq!(j.store.turns(&alice, "ep-1", 10).await.unwrap().len(), 1);
    assert_eq!(
        j.store
            .turns_after(&alice, "ep-1", 0, 10)
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(j.store.turns_after(&alice, "ep-1", 1, 10).await, Ok(vec![]));
    assert_eq!(j.store.episode(&alice, "ep-1").await.unwrap().version, 1);
}

#[tokio::test]
async fn upstream_reads_cost_one_request_and_two_only_without_an_item_of_the_callers() {
    let j = journal().await;
    let alice = principal("alice");
    let bob = principal("bob");
    run_turn(&j.store, &alice, "ep-1", true, "t-1", 1_000).await;
    let kept = conversation("support", "c-1", 9_000);
    j.store
        .save_upstream_conversation(&alice, "ep-1", &kept)
        .await
        .unwrap();

    let (read, sent) = j
        .counted(j.store.upstream_conversation(&alice, "ep-1", "support"))
        .await;
    assert_eq!(read, Ok(Some(kept)));
    assert_eq!(sent.to_string(), "DynamoDB.GetItem=1");

    // No item: META tells "none" from "not found".
    for (who, episode, agent, expected) in [
        (&alice, "ep-1", "billing", Ok(None)),
        (&bob, "ep-1", "support", Err(StoreError::NotFound)),
        (&alice, "ep-404", "support", Err(StoreError::NotFound)),
    ] {
        let (read, sent) = j
            .counted(j.store.upstream_conversation(who, episode, agent))
            .await;
        assert_eq!(read, expected, "{who} {episode} {agent}");
        assert_eq!(
            sent.to_string(),
            "DynamoDB.GetItem=2",
            "{who} {episode} {agent}"
        );
    }
}

#[tokio::test]
async fn an_upstream_refresh_is_one_put_and_a_first_save_adds_one_transaction() {
    let j = journal().await;
    let alice = principal("alice");
    let bob = principal("bob");
    run_turn(&j.store, &alice, "ep-1", true, "t-1", 1_000).await;

    let (saved, sent) = j
        .counted(j.store.save_upstream_conversation(
            &alice,
            "ep-1",
            &conversation("support", "c-1", 9_000),
        ))
        .await;
    assert_eq!(saved, Ok(()));
    assert_eq!(
        sent.to_string(),
        "DynamoDB.PutItem=1 DynamoDB.TransactWriteItems=1"
    );

    let refreshed = conversation("support", "c-1", 12_000);
    let (saved, sent) = j
        .counted(
            j.store
                .save_upstream_conversation(&alice, "ep-1", &refreshed),
        )
        .await;
    assert_eq!(saved, Ok(()));
    assert_eq!(sent.to_string(), "DynamoDB.PutItem=1");
    assert_eq!(
        j.store
            .upstream_conversation(&alice, "ep-1", "support")
            .await,
        Ok(Some(refreshed.clone()))
    );

    // Refused on another's or an unknown episode, at the same cost, and nothing written.
    let meta_before = j.item("EP#ep-1", "META").await;
    for (who, episode) in [(&bob, "ep-1"), (&alice, "ep-404"), (&bob, "ep-404")] {
        let (saved, sent) = j
            .counted(j.store.save_upstream_conversation(
                who,
                episode,
                &conversation("support", "stolen", 99_000),
            ))
            .await;
        assert_eq!(saved, Err(StoreError::NotFound), "{who} {episode}");
        assert_eq!(
            sent.to_string(),
            "DynamoDB.PutItem=1 DynamoDB.TransactWriteItems=1",
            "{who} {episode}"
        );
    }
    assert_eq!(
        j.store
            .upstream_conversation(&alice, "ep-1", "support")
            .await,
        Ok(Some(refreshed))
    );
    assert_eq!(j.item("EP#ep-1", "META").await, meta_before);
    assert!(j.item("EP#ep-404", "UPSTREAM#support").await.is_none());
    assert!(
        j.item("EP#ep-404", "META").await.is_none(),
        "no episode created"
    );
}

#[tokio::test]
async fn a_damaged_or_foreign_upstream_item_reads_as_none_and_the_next_save_replaces_it() {
    let j = journal().await;
    let alice = principal("alice");
    let bob = principal("bob");
    run_turn(&j.store, &alice, "ep-1", true, "t-1", 1_000).await;
    j.store
        .save_upstream_conversation(&alice, "ep-1", &conversation("support", "c-1", 9_000))
        .await
        .unwrap();
    let good = j.item("EP#ep-1", "UPSTREAM#support").await.unwrap();
    let with = |name: &str, value: Option<AttributeValue>| {
        let mut item = good.clone();
        match value {
            Some(value) => item.insert(name.to_owned(), value),
            None => item.remove(name),
        };
        item
    };

    // The caller's own item, damaged: one read, then none.
    for damaged in [
        with("expires_ms", Some(AttributeValue::S("soon".into()))),
        with("expires_ms", Some(AttributeValue::N("-5".into()))),
        with("expires_ms", None),
        with("conversation_id", Some(AttributeValue::N("7".into()))),
        with("conversation_id", None),
    ] {
        j.put_item(damaged.clone()).await;
        let (read, sent) = j
            .counted(j.store.upstream_conversation(&alice, "ep-1", "support"))
            .await;
        assert_eq!(read, Ok(None), "{damaged:?}");
        assert_eq!(sent.to_string(), "DynamoDB.GetItem=1", "{damaged:?}");
    }

    // An item in Alice's episode that is not hers: none for her (the episode is hers, one
    // more read says so). Bob still gets "not found" where the item does not claim him.
    for foreign in [
        with("owner", None),
        with("owner", Some(AttributeValue::S("bob".into()))),
    ] {
        j.put_item(foreign.clone()).await;
        let (read, sent) = j
            .counted(j.store.upstream_conversation(&alice, "ep-1", "support"))
            .await;
        assert_eq!(read, Ok(None), "{foreign:?}");
        assert_eq!(sent.to_string(), "DynamoDB.GetItem=2", "{foreign:?}");
    }
    j.put_item(with("owner", None)).await;
    assert_eq!(
        j.store.upstream_conversation(&bob, "ep-1", "support").await,
        Err(StoreError::NotFound)
    );
    assert_eq!(
        j.store
            .save_upstream_conversation(&bob, "ep-1", &conversation("support", "b-1", 99_000))
            .await,
        Err(StoreError::NotFound)
    );
    assert_eq!(
        j.item("EP#ep-1", "UPSTREAM#support").await,
        Some(with("owner", None))
    );

    // Alice's next save replaces it (her episode, checked by the transaction).
    let (saved, sent) = j
        .counted(j.store.save_upstream_conversation(
            &alice,
            "ep-1",
            &conversation("support", "c-2", 12_000),
        ))
        .await;
    assert_eq!(saved, Ok(()));
    assert_eq!(
        sent.to_string(),
        "DynamoDB.PutItem=1 DynamoDB.TransactWriteItems=1"
    );
    let item = j.item("EP#ep-1", "UPSTREAM#support").await.unwrap();
    assert_eq!(text(&item, "owner"), "alice");
    assert_eq!(
        j.store
            .upstream_conversation(&alice, "ep-1", "support")
            .await,
        Ok(Some(conversation("support", "c-2", 12_000)))
    );
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
