//! The DynamoDB journal's episode memory: the due mark, summaries, and reads after them.

use super::*;

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
