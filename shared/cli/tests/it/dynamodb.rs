//! The laptop profile: `baton --store dynamodb --table T --bucket B` against DynamoDB Local
//! (`baton_tests::dynamodb_local`), with the offline model. An ordinary turn sends S3
//! nothing, so S3's endpoint is a closed local port: a request there would fail the turn.

use std::collections::HashMap;
use std::net::TcpListener;
use std::process::Command;

use aws_sdk_dynamodb::types::AttributeValue;
use baton_tests::dynamodb_local::{DynamoDbLocal, unique_table_name};

use crate::support::*;

/// The principal the CLI runs turns as when none is given.
const PRINCIPAL: &str = "local-user";

/// A loopback port nothing listens on.
fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `baton` pointed at DynamoDB Local through the SDK's standard variables, with dummy
/// credentials and nothing read from the machine's own AWS files.
fn baton(sandbox: &Sandbox, db: &DynamoDbLocal) -> Command {
    let mut cmd = sandbox.baton();
    for v in [
        "AWS_PROFILE",
        "AWS_SESSION_TOKEN",
        "AWS_ENDPOINT_URL",
        "AWS_DEFAULT_REGION",
    ] {
        cmd.env_remove(v);
    }
    let missing = sandbox.path().join("no-aws-files");
    cmd.env("AWS_CONFIG_FILE", &missing)
        .env("AWS_SHARED_CREDENTIALS_FILE", &missing)
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "local")
        .env("AWS_SECRET_ACCESS_KEY", "local")
        .env("AWS_ENDPOINT_URL_DYNAMODB", db.endpoint())
        .env(
            "AWS_ENDPOINT_URL_S3",
            format!("http://127.0.0.1:{}", closed_port()),
        );
    cmd
}

/// Runs `baton --registry … --model offline [store flags] chat --json [extra] <message>`.
fn chat(sandbox: &Sandbox, db: &DynamoDbLocal, store: &[&str], extra: &[&str]) -> Run {
    baton(sandbox, db)
        .args(["--registry", registry(), "--model", "offline"])
        .args(store)
        .args(["chat", "--json"])
        .args(extra)
        .arg("find me coffee deals")
        .output()
        .unwrap()
        .into()
}

async fn item(
    db: &DynamoDbLocal,
    table: &str,
    pk: &str,
    sk: &str,
) -> Option<HashMap<String, AttributeValue>> {
    db.client()
        .get_item()
        .table_name(table)
        .key("pk", AttributeValue::S(pk.to_owned()))
        .key("sk", AttributeValue::S(sk.to_owned()))
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .item
}

fn s<'a>(item: &'a HashMap<String, AttributeValue>, name: &str) -> &'a str {
    item[name].as_s().unwrap()
}

fn n(item: &HashMap<String, AttributeValue>, name: &str) -> u64 {
    item[name].as_n().unwrap().parse().unwrap()
}

/// A failure the user can fix: exit 1, one plain `error:` message, no panic or trace.
fn assert_plain_failure(run: &Run) {
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.starts_with("error: "), "{run:?}");
    for leak in ["panicked", "backtrace", "RUST_BACKTRACE", "stack"] {
        assert!(!run.stderr.contains(leak), "{leak}: {run:?}");
    }
}

#[tokio::test]
async fn create_table_creates_the_journal_and_the_turn_commits_to_it() {
    let db = DynamoDbLocal::connect().await;
    let sandbox = Sandbox::new();
    let table = unique_table_name("cli");
    let store = [
        "--store",
        "dynamodb",
        "--table",
        &table,
        "--bucket",
        "bodies",
        "--create-table",
    ];

    let run = chat(&sandbox, &db, &store, &[]);
    assert_eq!(run.code, 0, "{run:?}");
    let events = events(&run.stdout);
    assert_eq!(events.last().unwrap()["type"], "completed", "{run:?}");
    assert_eq!(events.last().unwrap()["outcome"], "answered", "{run:?}");
    let episode = episode_of(&events);

    let turn = item(&db, &table, &format!("EP#{episode}"), "TURN#0000000001")
        .await
        .expect("the TURN item");
    assert_eq!(s(&turn, "owner"), PRINCIPAL);
    assert_eq!(n(&turn, "seq"), 1);
    let record: serde_json::Value = serde_json::from_str(s(&turn, "record")).unwrap();
    assert_eq!(record["outcome"], "answered", "{record}");
    let meta = item(&db, &table, &format!("EP#{episode}"), "META")
        .await
        .expect("the META item");
    assert_eq!(n(&meta, "version"), 1);
    // Nothing of this turn was written locally.
    assert!(!sandbox.data_dir().join("baton.sqlite").exists());
}

#[tokio::test]
async fn episode_continues_the_same_episode_in_dynamodb() {
    let db = DynamoDbLocal::connect().await;
    let table = db.fresh_table().await;
    let sandbox = Sandbox::new();
    let store = [
        "--store", "dynamodb", "--table", &table, "--bucket", "bodies",
    ];

    let first = chat(&sandbox, &db, &store, &[]);
    assert_eq!(first.code, 0, "{first:?}");
    let episode = episode_of(&events(&first.stdout));
    let second = chat(&sandbox, &db, &store, &["--episode", &episode]);
    assert_eq!(second.code, 0, "{second:?}");
    assert_eq!(episode_of(&events(&second.stdout)), episode);

    let pk = format!("EP#{episode}");
    let meta = item(&db, &table, &pk, "META").await.expect("the META item");
    assert_eq!(n(&meta, "version"), 2);
    let turn = item(&db, &table, &pk, "TURN#0000000002")
        .await
        .expect("the second TURN item");
    assert_eq!(n(&turn, "seq"), 2);
    assert_eq!(s(&turn, "owner"), PRINCIPAL);
}

#[tokio::test]
async fn dynamodb_without_a_table_is_refused_naming_the_table() {
    let db = DynamoDbLocal::connect().await;
    let sandbox = Sandbox::new();
    let run = chat(
        &sandbox,
        &db,
        &["--store", "dynamodb", "--bucket", "bodies"],
        &[],
    );
    assert_plain_failure(&run);
    assert!(run.stderr.contains("table"), "{run:?}");
    assert!(run.stdout.is_empty(), "{run:?}");
}

#[tokio::test]
async fn a_missing_table_without_create_table_is_a_plain_error() {
    let db = DynamoDbLocal::connect().await;
    let sandbox = Sandbox::new();
    let table = unique_table_name("missing");
    let run = chat(
        &sandbox,
        &db,
        &[
            "--store", "dynamodb", "--table", &table, "--bucket", "bodies",
        ],
        &[],
    );
    assert_plain_failure(&run);
    assert!(run.stderr.contains(&table), "{run:?}");
    assert!(run.stderr.contains("does not exist"), "{run:?}");
    assert!(run.stderr.contains("--create-table"), "{run:?}");
    assert!(!run.stderr.contains("Exception"), "{run:?}");
    assert_eq!(run.stderr.lines().count(), 1, "{run:?}");
    // Nothing was created behind the user's back.
    let tables = db.client().list_tables().send().await.unwrap();
    assert!(!tables.table_names().contains(&table));
}

#[tokio::test]
async fn an_unreachable_dynamodb_is_a_plain_error() {
    let db = DynamoDbLocal::connect().await;
    let sandbox = Sandbox::new();
    let run: Run = baton(&sandbox, &db)
        .env(
            "AWS_ENDPOINT_URL_DYNAMODB",
            format!("http://127.0.0.1:{}", closed_port()),
        )
        .env("AWS_MAX_ATTEMPTS", "1")
        .args(["--registry", registry(), "--model", "offline"])
        .args(["--store", "dynamodb", "--table", "t", "--bucket", "bodies"])
        .args(["chat", "find me coffee deals"])
        .output()
        .unwrap()
        .into();
    assert_plain_failure(&run);
    assert!(run.stderr.contains("could not be reached"), "{run:?}");
    assert!(!run.stderr.contains("dispatch failure"), "{run:?}");
    assert_eq!(run.stderr.lines().count(), 1, "{run:?}");
}

#[tokio::test]
async fn compact_due_folds_a_long_conversation_on_dynamodb() {
    let db = DynamoDbLocal::connect().await;
    let table = db.fresh_table().await;
    let sandbox = Sandbox::new();
    let store = [
        "--store", "dynamodb", "--table", &table, "--bucket", "bodies",
    ];
    let turn = |extra: &[&str]| -> Run {
        baton(&sandbox, &db)
            .env("BATON_COMPACT_AFTER_TURN", "false")
            .args(["--registry", registry(), "--model", "offline"])
            .args(store)
            .args(["chat", "--json"])
            .args(extra)
            .arg("find me coffee deals")
            .output()
            .unwrap()
            .into()
    };
    let first = turn(&[]);
    assert_eq!(first.code, 0, "{first:?}");
    let episode = episode_of(&events(&first.stdout));
    for _ in 2..=8 {
        let run = turn(&["--episode", &episode]);
        assert_eq!(run.code, 0, "{run:?}");
    }
    let pk = format!("EP#{episode}");
    let meta = item(&db, &table, &pk, "META").await.unwrap();
    assert_eq!(s(&meta, "due_pk"), "DUE", "the 8th turn marked it due");

    let run: Run = baton(&sandbox, &db)
        .args(["--registry", registry(), "--model", "offline"])
        .args(store)
        .args(["compact", "--due", "--json"])
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{run:?}");
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["episodes"][0]["outcome"], "compacted", "{report}");
    assert_eq!(report["episodes"][0]["upto_seq"], 4, "{report}");
    let meta = item(&db, &table, &pk, "META").await.unwrap();
    assert!(
        !meta.contains_key("due_pk"),
        "the mark is cleared: {meta:?}"
    );
    let summary: serde_json::Value = serde_json::from_str(s(&meta, "summary")).unwrap();
    assert_eq!(summary["upto_seq"], 4);
    assert!(
        summary["text"].as_str().unwrap().contains("coffee"),
        "{summary}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_turn_survives_sigkill_and_resumes_on_dynamodb() {
    let db = DynamoDbLocal::connect().await;
    let table = db.fresh_table().await;
    let sandbox = Sandbox::new();
    let store = [
        "--store", "dynamodb", "--table", &table, "--bucket", "bodies",
    ];
    // The processes are blocking; the emulator's client stays on this runtime.
    tokio::task::block_in_place(|| {
        crate::approvals::survives_sigkill(&sandbox, || baton(&sandbox, &db), &store);
    });
}

/// An approved act, the server killed after the ledger acted, the approval sent again
/// after a restart, through each face that resumes on a restarted server: one act, told
/// as done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_act_runs_once_through_a_crash_after_it_ran_on_dynamodb() {
    let db = DynamoDbLocal::connect().await;
    for face in [
        &crate::approvals::TURNS_API,
        &crate::approvals::CHAT_COMPLETIONS,
        &crate::approvals::A2A,
        &crate::approvals::AG_UI,
        &crate::approvals::MCP,
    ] {
        let table = db.fresh_table().await;
        let sandbox = Sandbox::new();
        let store = [
            "--store", "dynamodb", "--table", &table, "--bucket", "bodies",
        ];
        // The dead process's turn is freed when its lease ends: a short one, for the test.
        let baton = || {
            let mut command = baton(&sandbox, &db);
            command
                .env("BATON_TURN_TIMEOUT_MS", "4000")
                .env("BATON_LEASE_MS", "5000");
            command
        };
        tokio::task::block_in_place(|| {
            crate::approvals::approved_act_survives_a_crash_on(&sandbox, baton, &store, face);
        });
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_account_link_is_kept_across_a_restart_on_dynamodb() {
    let db = DynamoDbLocal::connect().await;
    let table = db.fresh_table().await;
    let sandbox = Sandbox::new();
    let store = [
        "--store", "dynamodb", "--table", &table, "--bucket", "bodies",
    ];
    tokio::task::block_in_place(|| {
        crate::account_links::connects_once(&sandbox, || baton(&sandbox, &db), &store);
    });
}
