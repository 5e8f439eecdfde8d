//! The DynamoDB journal's bodies and large state in S3: what goes there, what reads back,
//! and what a failed write leaves.

use super::*;

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
