//! What the DynamoDB + S3 journal adds to a turn: wall time and requests, against the
//! in-memory store, with the same engine, registry and zero-latency scripted model. Not a
//! test: it prints measurements.
//!
//! ```text
//! cargo run --release -p baton-tests --example journal_cost [-- <turns>]
//! ```
//!
//! Each side runs `<turns>` turns (default 200) in episodes of five: the first turn of an
//! episode starts it (claim, commit), the others continue it (claim, episode, history,
//! commit). Times are per turn, from the request to the stream's last event; requests are
//! counted by the store's SDK interceptor. Needs DynamoDB Local (`BATON_TEST_DYNAMODB`, or
//! `./infra/emulators.sh install`). The figures are the emulator's, not DynamoDB's.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use baton_core::Principal;
use baton_core::events::Event;
use baton_core::ports::store::Store;
use baton_inproc::HeapStore;
use baton_inproc::scripted::ScriptedModel;
use baton_runtime::{Runtime, TurnRequest};
use baton_tests::dynamodb_local::LocalJournal;
use baton_tests::fixtures::{SHOP_SCRIPT, registry_at, registry_dir};
use futures::StreamExt;

const TURNS_PER_EPISODE: usize = 5;

fn runtime(store: Arc<dyn Store>) -> Runtime {
    let (registry, connectors) = registry_at(&registry_dir());
    Runtime::builder(registry)
        .model_override(Arc::new(ScriptedModel::from_yaml(SHOP_SCRIPT).unwrap()))
        .store(store)
        .connectors(connectors)
        .build()
        .unwrap()
}

/// One turn, drained; returns its wall time and the episode it ran on.
async fn turn(runtime: &Runtime, episode: Option<String>) -> (Duration, String) {
    let started = Instant::now();
    let request = TurnRequest {
        episode_id: episode,
        ..TurnRequest::new(Principal::new("alice").unwrap(), "find me coffee deals")
    };
    let mut stream = runtime.run_turn(request).await.unwrap();
    let mut episode_id = String::new();
    while let Some(wire) = stream.next().await {
        if let Event::ResponseId { episode_id: id, .. } = wire.event {
            episode_id = id;
        }
    }
    (started.elapsed(), episode_id)
}

/// Runs `turns` turns in episodes; returns the times of starting and continuing turns.
async fn run(runtime: &Runtime, turns: usize) -> (Vec<Duration>, Vec<Duration>) {
    let (mut starting, mut continuing) = (Vec::new(), Vec::new());
    let mut episode = None;
    for i in 0..turns {
        if i % TURNS_PER_EPISODE == 0 {
            episode = None;
        }
        let (took, id) = turn(runtime, episode.clone()).await;
        if episode.is_none() {
            starting.push(took);
        } else {
            continuing.push(took);
        }
        episode = Some(id);
    }
    (starting, continuing)
}

fn percentile(times: &mut [Duration], p: f64) -> f64 {
    times.sort();
    let index = ((times.len() as f64 - 1.0) * p).round() as usize;
    times[index].as_secs_f64() * 1e3
}

fn row(name: &str, times: &mut [Duration]) -> (f64, f64) {
    let (p50, p90) = (percentile(times, 0.5), percentile(times, 0.9));
    println!("| {name} | {p50:.3} | {p90:.3} |");
    (p50, p90)
}

fn main() {
    let turns: usize = std::env::args()
        .nth(1)
        .map(|n| n.parse().expect("the number of turns"))
        .unwrap_or(200);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let journal = Arc::new(LocalJournal::start().await);
        let memory = runtime(Arc::new(HeapStore::new()));
        let dynamo = runtime(Arc::new(journal.store.clone()));
        // Warm both (connections, allocator, caches).
        run(&memory, 20).await;
        run(&dynamo, 20).await;

        let (mut mem_start, mut mem_cont) = run(&memory, turns).await;
        let before = journal.counter.snapshot();
        let (mut ddb_start, mut ddb_cont) = run(&dynamo, turns).await;
        let requests = journal.counter.snapshot().since(&before);

        println!("| per turn, ms | p50 | p90 |\n| --- | ---: | ---: |");
        let (m1, _) = row("in-memory store, starting an episode", &mut mem_start);
        let (d1, _) = row("DynamoDB Local + S3, starting an episode", &mut ddb_start);
        let (m2, _) = row("in-memory store, continuing", &mut mem_cont);
        let (d2, _) = row("DynamoDB Local + S3, continuing", &mut ddb_cont);
        println!(
            "\njournal adds {:.2} ms (starting) and {:.2} ms (continuing) per turn at the median",
            d1 - m1,
            d2 - m2
        );
        let episodes = turns.div_ceil(TURNS_PER_EPISODE);
        println!(
            "requests over {turns} turns ({episodes} episodes): {requests}\n\
             per turn: {:.2} DynamoDB, {:.2} S3",
            requests.service_total(baton_tests::requests::DYNAMODB) as f64 / turns as f64,
            requests.service_total(baton_tests::requests::S3) as f64 / turns as f64,
        );
    });
}
