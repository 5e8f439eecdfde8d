//! The real `compaction` binary under a local Lambda Runtime API, against DynamoDB Local
//! and the Bedrock-wire fake: a scheduled event folds the due episode, a second run finds
//! nothing due, and a summarizer that fails leaves the episode as it was, still due.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use baton_aws::journal::{DynamoStore, JournalConfig};
use baton_core::ports::store::{SummaryStore as _, TurnStore as _};
use baton_testkit::store::records::{claim_ok, claim_request, commit_of, principal, turn_record};
use baton_tests::fake_bedrock::Reply;
use baton_tests::fixtures;
use baton_tests::function_process::{BUCKET, Running, Services};
use baton_tests::runtime_api::{FakeRuntimeApi, PostKind};
use serde_json::Value;

const WAIT: Duration = Duration::from_secs(60);

/// Commits `turns` turns on a new episode of alice's, the last `due_from..` marking it due.
async fn seed(store: &DynamoStore, episode: &str, turns: u64, due_from: u64) {
    let alice = principal("alice");
    for seq in 1..=turns {
        let existing = (seq > 1).then_some(episode);
        let turn_id = format!("{episode}-t{seq}");
        claim_ok(
            store,
            claim_request(&alice, existing, episode, &turn_id, seq * 1_000),
        )
        .await;
        let mut commit = commit_of(
            &alice,
            seq - 1,
            turn_record(episode, seq, &turn_id, seq * 1_000 + 1),
            vec![],
        );
        commit.compaction_due = seq >= due_from;
        store.commit(&commit).await.unwrap();
    }
}

fn store(services: &Services) -> DynamoStore {
    let s3 = aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::from(services.dynamodb.sdk_config())
            .endpoint_url(&services.s3)
            .force_path_style(true)
            .build(),
    );
    DynamoStore::new(
        services.dynamodb.client(),
        s3,
        JournalConfig::new(&services.table, BUCKET),
    )
}

async fn invoke(api: &FakeRuntimeApi, running: &Running, request_id: &str) -> Value {
    api.push(request_id, fixtures::event("scheduled-compaction.json"));
    let posted = api
        .next_post(WAIT)
        .await
        .unwrap_or_else(|| panic!("no answer; stdout: {:#?}", running.lines()));
    assert_eq!(posted.kind, PostKind::Response, "{:#?}", running.lines());
    serde_json::from_slice(&posted.body()).unwrap()
}

#[tokio::test]
async fn a_scheduled_run_folds_the_due_episode_once_and_a_failing_summarizer_changes_nothing() {
    let failing = Arc::new(AtomicBool::new(false));
    let fail = failing.clone();
    let services = Services::start(move |r| {
        if fail.load(Ordering::SeqCst) {
            return Reply::internal_error();
        }
        if r.system_text().contains("running summary") {
            Reply::text("The user asked about question 1 to question 5.")
        } else {
            Reply::validation_error("only summaries are expected here")
        }
    })
    .await;
    let journal = store(&services);
    seed(&journal, "ep-long", 9, 8).await;
    seed(&journal, "ep-short", 3, 99).await;

    let api = FakeRuntimeApi::start().await.unwrap();
    let binary = Path::new(env!("CARGO_BIN_EXE_compaction"));
    let running = Running::spawn(binary, &services.env(), &api.address());

    let first = invoke(&api, &running, "run-1").await;
    assert_eq!(first["episodes"], 1, "{first}");
    assert_eq!(first["compacted"], 1, "{first}");
    assert_eq!(
        first["turns_folded"], 5,
        "9 turns, the last 4 kept: {first}"
    );
    assert_eq!(first["skipped_on_conflict"], 0, "{first}");
    let alice = principal("alice");
    let meta = journal.episode(&alice, "ep-long").await.unwrap();
    let summary = meta.summary.unwrap();
    assert_eq!(summary.upto_seq, 5);
    assert_eq!(
        summary.text,
        "The user asked about question 1 to question 5."
    );
    assert!(summary.agents.contains_key("offers"), "{summary:?}");
    assert_eq!(meta.version, 9, "no turn lost");
    assert!(journal.due_episodes(10).await.unwrap().is_empty());
    // The summarizer got the masked turns of the batch, through the Bedrock wire.
    let asked = services.bedrock.requests();
    assert!(asked.iter().any(|r| {
        r.last_user_text()
            .is_some_and(|t| t.contains("Turn 5\nUser: question 5"))
    }));
    assert!(
        !asked
            .iter()
            .any(|r| r.last_user_text().is_some_and(|t| t.contains("Turn 6")))
    );
    // EMF metrics on stdout.
    let emf = running
        .wait_line(WAIT, |l| l.contains("compactions_total"))
        .await;
    assert!(emf.contains("\"outcome\":\"compacted\""), "{emf}");

    // Run again: nothing is due.
    let second = invoke(&api, &running, "run-2").await;
    assert_eq!(second["episodes"], 0, "{second}");

    // More turns make it due again; a failing summarizer leaves it as it was.
    failing.store(true, Ordering::SeqCst);
    seed_more(&journal, "ep-long", 10, 13).await;
    let third = invoke(&api, &running, "run-3").await;
    assert_eq!(
        (third["failed"].as_u64(), third["compacted"].as_u64()),
        (Some(1), Some(0)),
        "{third}"
    );
    let meta = journal.episode(&alice, "ep-long").await.unwrap();
    assert_eq!(meta.summary.map(|s| s.upto_seq), Some(5));
    assert_eq!(
        journal.due_episodes(10).await.unwrap().len(),
        1,
        "still due"
    );
}

/// Commits turns `from..=to` on an existing episode, each marking it due.
async fn seed_more(store: &DynamoStore, episode: &str, from: u64, to: u64) {
    let alice = principal("alice");
    for seq in from..=to {
        let turn_id = format!("{episode}-t{seq}");
        claim_ok(
            store,
            claim_request(&alice, Some(episode), episode, &turn_id, seq * 1_000),
        )
        .await;
        let mut commit = commit_of(
            &alice,
            seq - 1,
            turn_record(episode, seq, &turn_id, seq * 1_000 + 1),
            vec![],
        );
        commit.compaction_due = true;
        store.commit(&commit).await.unwrap();
    }
}
