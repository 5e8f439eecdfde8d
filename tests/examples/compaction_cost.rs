//! What compaction costs per episode on the DynamoDB + S3 journal, as the scheduled
//! compaction function runs it: wall time, requests, turns folded and summarizer calls.
//! Not a test: it prints measurements as JSON.
//!
//! ```text
//! cargo run --release -p baton-tests --example compaction_cost [-- <episodes> <turns>]
//! ```
//!
//! Runs `<episodes>` episodes (default 20) of `<turns>` turns each (default 12) through the
//! shipped registry and the offline model, with no compaction after a turn (as on Lambda),
//! then times `Runtime::compact_episode` on each. Turns are a simulated minute apart (the
//! engine's per-episode rate window reads the clock). Requests are counted by the store's
//! SDK interceptor. Needs DynamoDB Local (`BATON_TEST_DYNAMODB`, or
//! `./infra/emulators.sh install`). The figures are the emulator's, not DynamoDB's.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use baton_core::Principal;
use baton_core::events::Event;
use baton_core::ports::clock::Clock;
use baton_core::ports::model::{CallPurpose, Model, ModelRequest, ModelStream};
use baton_core::ports::store::SummaryStore as _;
use baton_local::offline::OfflineModel;
use baton_runtime::compaction::Outcome;
use baton_runtime::{Runtime, RuntimeConfig, TurnRequest};
use baton_tests::dynamodb_local::LocalJournal;
use baton_tests::fixtures::{registry_at, registry_dir};
use futures::StreamExt;
use serde_json::{Value, json};

/// A user's messages, one a turn, switching among the shipped specialists.
const MESSAGES: &[&str] = &[
    "hi! can you find me some coffee deals?",
    "any of those at FreshMart?",
    "what's my points balance right now?",
    "are any of my points about to expire?",
    "my receipt from Valu Depot on Saturday didn't scan",
    "I tried again and it still says it can't read it",
    "I'm planning to buy all my coffee in bulk to save money, good idea?",
    "thanks, that helps",
    "are there coupons for cat food this week?",
    "my receipt didn't scan and find me deals on snacks for a party",
    "how much is 10000 points worth as a gift card?",
    "should I switch to store brands to save?",
];

/// Simulated time between two turns of an episode.
const TURN_PACE_MS: u64 = 60_000;

/// A clock the example moves on before each turn.
struct PacedClock(AtomicU64);

impl Clock for PacedClock {
    fn now_ms(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Counts the summarizer's calls and passes every request on.
struct CountingModel {
    inner: Arc<dyn Model>,
    summaries: AtomicUsize,
}

impl Model for CountingModel {
    fn stream(&self, request: &ModelRequest) -> ModelStream {
        if request.purpose == CallPurpose::Summarize {
            self.summaries.fetch_add(1, Ordering::Relaxed);
        }
        self.inner.stream(request)
    }
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

/// Median, p95, mean, min and max of `xs`.
fn distribution(xs: &[f64]) -> Value {
    let mut sorted = xs.to_vec();
    sorted.sort_by(f64::total_cmp);
    let at = |p: f64| {
        sorted
            .get(((sorted.len().max(1) - 1) as f64 * p).round() as usize)
            .copied()
            .unwrap_or(0.0)
    };
    let mean = xs.iter().sum::<f64>() / xs.len().max(1) as f64;
    json!({
        "n": xs.len(),
        "median": at(0.5),
        "p95": at(0.95),
        "mean": (mean * 1000.0).round() / 1000.0,
        "min": at(0.0),
        "max": at(1.0),
    })
}

fn main() {
    let mut args = std::env::args()
        .skip(1)
        .map(|n| n.parse::<usize>().unwrap());
    let episodes = args.next().unwrap_or(20);
    let turns = args.next().unwrap_or(12);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let results = rt.block_on(run(episodes, turns));
    println!("{}", serde_json::to_string_pretty(&results).unwrap());
}

async fn run(episodes: usize, turns: usize) -> Value {
    let journal = LocalJournal::start().await;
    let (registry, connectors) = registry_at(&registry_dir());
    let model = Arc::new(CountingModel {
        inner: Arc::new(OfflineModel::new(registry.clone())),
        summaries: AtomicUsize::new(0),
    });
    let clock = Arc::new(PacedClock(AtomicU64::new(
        baton_runtime::clock::SystemClock.now_ms(),
    )));
    let store = Arc::new(journal.store.clone());
    let runtime = Runtime::builder(registry)
        .model_override(model.clone())
        .store(store.clone())
        .clock(clock.clone())
        .connectors(connectors)
        .config(RuntimeConfig {
            // The scheduled function compacts on AWS, not the turn.
            compact_after_turn: false,
            ..RuntimeConfig::default()
        })
        .build()
        .unwrap();

    let mut ran = Vec::new();
    let mut turn_ms = Vec::new();
    for i in 0..episodes {
        let principal = Principal::new(&format!("user-{i}")).unwrap();
        let mut episode: Option<String> = None;
        for turn in 0..turns {
            clock.0.fetch_add(TURN_PACE_MS, Ordering::Relaxed);
            // Each episode starts elsewhere in the cycle.
            let text = MESSAGES[(turn + i * 7) % MESSAGES.len()];
            let started = Instant::now();
            let mut stream = runtime
                .run_turn(TurnRequest {
                    episode_id: episode.clone(),
                    ..TurnRequest::new(principal.clone(), text)
                })
                .await
                .unwrap();
            let mut outcome = None;
            while let Some(wire) = stream.next().await {
                if let Event::Completed { outcome: o, .. } = wire.event {
                    outcome = Some(o);
                }
            }
            let outcome = outcome.expect("every turn completes");
            if outcome.as_str() != "answered" {
                eprintln!(
                    "warning: episode {i} turn {turn} ({text:?}) ended {}",
                    outcome.as_str()
                );
            }
            turn_ms.push(ms(started.elapsed()));
            episode = Some(stream.episode_id.clone());
        }
        ran.push((principal, episode.expect("at least one turn")));
    }
    let due_before = store.due_episodes(episodes + 16).await.unwrap().len();

    let (mut times, mut folded, mut summaries, mut totals) = (vec![], vec![], vec![], vec![]);
    let mut outcomes: BTreeMap<&str, usize> = BTreeMap::new();
    let mut requests: BTreeMap<String, u64> = BTreeMap::new();
    for (principal, episode) in &ran {
        let summaries_before = model.summaries.load(Ordering::Relaxed);
        let ((report, took), counts) = journal
            .counted(async {
                let started = Instant::now();
                let report = runtime.compact_episode(principal, episode).await;
                (report, started.elapsed())
            })
            .await;
        let report = report.unwrap();
        times.push(ms(took));
        *outcomes.entry(report.outcome.as_str()).or_default() += 1;
        folded.push(report.turns_folded as f64);
        summaries.push((model.summaries.load(Ordering::Relaxed) - summaries_before) as f64);
        for (service, operation, n) in counts.iter() {
            *requests
                .entry(format!("{service}.{operation}"))
                .or_default() += n;
        }
        totals.push(counts.total() as f64);
        if report.outcome != Outcome::Compacted {
            eprintln!(
                "warning: episode {episode} ended {}",
                report.outcome.as_str()
            );
        }
    }
    let due_after = store.due_episodes(episodes + 16).await.unwrap().len();
    let per_episode: BTreeMap<String, f64> = requests
        .into_iter()
        .map(|(k, n)| (k, n as f64 / episodes.max(1) as f64))
        .collect();
    json!({
        "store": "DynamoDB Local + in-process S3 (baton_aws::journal::DynamoStore)",
        "endpoint": journal.dynamodb.endpoint(),
        "episodes": episodes,
        "turns_per_episode": turns,
        "summarizer": "offline (zero latency)",
        "due_before": due_before,
        "due_after": due_after,
        "outcomes": outcomes,
        "compact_episode_ms": distribution(&times),
        "turns_folded_per_episode": distribution(&folded),
        "summarizer_calls_per_episode": distribution(&summaries),
        "requests_per_episode": distribution(&totals),
        "requests_per_episode_by_operation": per_episode,
        "turn_ms": distribution(&turn_ms),
    })
}
