//! Memory scenarios (design.md §4): the turns a compaction folds, its summary written under the
//! episode's version, and the due marks a commit leaves.

use std::collections::BTreeMap;

use baton_core::memory::EpisodeSummary;
use baton_core::ports::store::{Store, StoreError};

use super::records::{claim_ok, claim_request, commit_of, principal, run_turn, turn_record};

fn summary(upto_seq: u64) -> EpisodeSummary {
    EpisodeSummary {
        upto_seq,
        text: format!("Everything up to turn {upto_seq}: the user wants coffee deals."),
        agents: BTreeMap::from([("offers".to_owned(), "Roast coffee, 500 points.".to_owned())]),
    }
}

/// Claims and commits the next turn of `episode_id`, marking it due or not.
async fn commit_turn(store: &dyn Store, episode_id: &str, turn_id: &str, now_ms: u64, due: bool) {
    let alice = principal("alice");
    let meta = claim_ok(
        store,
        claim_request(&alice, Some(episode_id), "unused", turn_id, now_ms),
    )
    .await;
    let mut commit = commit_of(
        &alice,
        meta.version,
        turn_record(episode_id, meta.version + 1, turn_id, now_ms + 1),
        vec![],
    );
    commit.compaction_due = due;
    store.commit(&commit).await.unwrap();
}

/// `turns_after` reads forward from a turn: the batch a compaction folds.
pub async fn turns_after_a_seq_are_oldest_first_and_limited(store: &dyn Store) {
    let alice = principal("alice");
    let mut records = vec![run_turn(store, &alice, "ep-1", true, "t-1", 1_000).await];
    for i in 2..=5u64 {
        records.push(run_turn(store, &alice, "ep-1", false, &format!("t-{i}"), i * 1_000).await);
    }
    let seqs =
        |turns: Vec<baton_core::turn::TurnRecord>| turns.iter().map(|t| t.seq).collect::<Vec<_>>();
    assert_eq!(
        seqs(store.turns_after(&alice, "ep-1", 0, 2).await.unwrap()),
        [1, 2]
    );
    assert_eq!(
        seqs(store.turns_after(&alice, "ep-1", 2, 10).await.unwrap()),
        [3, 4, 5]
    );
    assert_eq!(
        store.turns_after(&alice, "ep-1", 5, 10).await.unwrap(),
        vec![]
    );
    assert_eq!(
        store.turns_after(&alice, "ep-1", 99, 10).await.unwrap(),
        vec![]
    );
    assert_eq!(
        store.turns_after(&alice, "ep-1", 1, 1).await.unwrap(),
        vec![records[1].clone()],
        "records come back whole"
    );
    assert_eq!(
        store.turns_after(&alice, "ep-404", 0, 10).await,
        Err(StoreError::NotFound)
    );
}

/// A summary saved at the current version is read back whole with the episode, and the
/// episode is no longer due.
pub async fn a_summary_round_trips_and_clears_the_due_mark(store: &dyn Store) {
    let alice = principal("alice");
    run_turn(store, &alice, "ep-1", true, "t-1", 1_000).await;
    commit_turn(store, "ep-1", "t-2", 2_000, true).await;
    assert_eq!(store.due_episodes(10).await.unwrap().len(), 1);
    assert_eq!(store.episode(&alice, "ep-1").await.unwrap().summary, None);

    store
        .save_summary(&alice, "ep-1", 2, &summary(1))
        .await
        .unwrap();
    let meta = store.episode(&alice, "ep-1").await.unwrap();
    assert_eq!(meta.summary, Some(summary(1)));
    assert_eq!(meta.version, 2, "a summary is not a turn");
    assert_eq!(store.due_episodes(10).await.unwrap(), vec![]);
    // A later summary replaces it; the next claim sees it.
    store
        .save_summary(&alice, "ep-1", 2, &summary(2))
        .await
        .unwrap();
    let claimed = claim_ok(
        store,
        claim_request(&alice, Some("ep-1"), "unused", "t-3", 3_000),
    )
    .await;
    assert_eq!(claimed.summary, Some(summary(2)));
}

/// Due episodes are listed by how long they have been due, each once, up to the limit; a
/// commit that marks an episode already due keeps its first time.
pub async fn due_episodes_are_listed_longest_due_first(store: &dyn Store) {
    let alice = principal("alice");
    for (ep, at) in [("ep-a", 10_000), ("ep-b", 20_000), ("ep-c", 30_000)] {
        run_turn(store, &alice, ep, true, &format!("{ep}-1"), at).await;
    }
    commit_turn(store, "ep-b", "ep-b-2", 40_000, true).await;
    commit_turn(store, "ep-a", "ep-a-2", 50_000, true).await;
    commit_turn(store, "ep-c", "ep-c-2", 60_000, false).await;
    // Marked again later: it stays where it was in the queue.
    commit_turn(store, "ep-b", "ep-b-3", 70_000, true).await;

    let due = store.due_episodes(10).await.unwrap();
    let ids: Vec<&str> = due.iter().map(|d| d.episode_id.as_str()).collect();
    assert_eq!(ids, ["ep-b", "ep-a"]);
    assert_eq!(due[0].owner, alice);
    assert_eq!(
        due[0].since_ms, 40_001,
        "marked at the commit's time, kept when marked again"
    );
    assert_eq!(store.due_episodes(1).await.unwrap().len(), 1);
}

/// A compaction reads the episode, a turn commits, the compaction writes: the write is a
/// conflict and changes nothing, so the turn is never lost and the episode stays due.
pub async fn a_turn_committed_meanwhile_makes_the_summary_conflict(store: &dyn Store) {
    let alice = principal("alice");
    run_turn(store, &alice, "ep-1", true, "t-1", 1_000).await;
    commit_turn(store, "ep-1", "t-2", 2_000, true).await;
    let read = store.episode(&alice, "ep-1").await.unwrap();
    commit_turn(store, "ep-1", "t-3", 3_000, true).await;

    assert_eq!(
        store
            .save_summary(&alice, "ep-1", read.version, &summary(1))
            .await,
        Err(StoreError::Conflict)
    );
    let meta = store.episode(&alice, "ep-1").await.unwrap();
    assert_eq!((meta.version, meta.summary), (3, None));
    assert_eq!(store.turns(&alice, "ep-1", 10).await.unwrap().len(), 3);
    assert_eq!(store.due_episodes(10).await.unwrap().len(), 1, "still due");
    // Re-read, it goes through; the commit after it keeps the summary.
    store
        .save_summary(&alice, "ep-1", 3, &summary(1))
        .await
        .unwrap();
    commit_turn(store, "ep-1", "t-4", 4_000, false).await;
    assert_eq!(
        store.episode(&alice, "ep-1").await.unwrap().summary,
        Some(summary(1))
    );
}

/// Only the owner's summary is written; another principal is told "not found".
pub async fn another_principal_cannot_summarise(store: &dyn Store) {
    let alice = principal("alice");
    let bob = principal("bob");
    run_turn(store, &alice, "ep-1", true, "t-1", 1_000).await;
    assert_eq!(
        store.save_summary(&bob, "ep-1", 1, &summary(1)).await,
        Err(StoreError::NotFound)
    );
    assert_eq!(
        store.save_summary(&alice, "ep-404", 1, &summary(1)).await,
        Err(StoreError::NotFound)
    );
    assert_eq!(store.episode(&alice, "ep-1").await.unwrap().summary, None);
}
