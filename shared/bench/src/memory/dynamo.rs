//! Compaction's time per episode on the DynamoDB + S3 journal: DynamoDB Local (started by
//! `baton-tests`' launcher, or `BATON_TEST_DYNAMODB`) and an in-process S3, through the
//! real SDK clients. Built with the `dynamodb` feature.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use baton_core::Principal;
use baton_core::events::Event;
use baton_core::ports::model::CallPurpose;
use baton_core::ports::store::Store;
use baton_local::offline::OfflineModel;
use baton_runtime::compaction::Outcome;
use baton_runtime::{Runtime, RuntimeConfig, TurnRequest};
use baton_tests::dynamodb_local::LocalJournal;
use futures::StreamExt;
use serde_json::{Value, json};

use super::conversation::{MESSAGES, PROBE_EMAIL, message};
use super::long_run::{Compaction, TURN_PACE_MS, registry};
use super::recorder::{PacedClock, RecordingModel};
use crate::stats::percentile;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn distribution(xs: &[f64]) -> Value {
    let mean = if xs.is_empty() {
        0.0
    } else {
        xs.iter().sum::<f64>() / xs.len() as f64
    };
    json!({
        "n": xs.len(),
        "median": percentile(xs, 50.0),
        "p95": percentile(xs, 95.0),
        "mean": (mean * 1000.0).round() / 1000.0,
        "min": percentile(xs, 0.0),
        "max": percentile(xs, 100.0),
    })
}

/// Runs `episodes` episodes of `turns` turns each on the journal (no compaction after a
/// turn, as on Lambda), then times `Runtime::compact_episode` on each, as the scheduled
/// compaction function runs it for each due episode.
pub(crate) async fn compaction_timing(
    root: &Path,
    episodes: usize,
    turns: usize,
) -> anyhow::Result<Value> {
    // The launcher panics with a plain message when DynamoDB Local is not available.
    let journal = tokio::spawn(LocalJournal::start()).await.map_err(|e| {
        anyhow::anyhow!(
            "DynamoDB Local is not available ({e}): run ./infra/emulators.sh install \
             (needs Java and npm), or set BATON_TEST_DYNAMODB to a running instance"
        )
    })?;
    let (registry, connectors) = registry(root, Compaction::AfterTurn)?;
    let recorder = RecordingModel::new(Arc::new(OfflineModel::new(registry.clone())), PROBE_EMAIL);
    let store = Arc::new(journal.store.clone());
    let clock = Arc::new(PacedClock::starting_now());
    let runtime = Runtime::builder(registry)
        .model_override(Arc::new(recorder.clone()))
        .store(store.clone())
        .clock(clock.clone())
        .connectors(connectors)
        .config(RuntimeConfig {
            // The scheduled function compacts on AWS, not the turn.
            compact_after_turn: false,
            ..RuntimeConfig::default()
        })
        .build()?;

    let mut ran = Vec::new();
    let mut turn_ms = Vec::new();
    for i in 0..episodes {
        let principal =
            Principal::new(&format!("bench-user-{i}")).map_err(|e| anyhow::anyhow!("{e}"))?;
        let mut episode: Option<String> = None;
        // Each episode starts elsewhere in the cycle.
        let offset = (i * 7) % MESSAGES.len();
        for turn in 1..=turns {
            clock.advance(TURN_PACE_MS);
            let text = message(turn, offset);
            let t0 = Instant::now();
            let mut stream = runtime
                .run_turn(TurnRequest {
                    episode_id: episode.clone(),
                    ..TurnRequest::new(principal.clone(), text)
                })
                .await
                .map_err(|e| anyhow::anyhow!("episode {i} turn {turn} was refused: {e}"))?;
            let mut outcome = None;
            while let Some(wire) = stream.next().await {
                if let Event::Completed { outcome: o, .. } = wire.event {
                    outcome = Some(o);
                }
            }
            match outcome {
                Some(o) if o.as_str() == "answered" => {}
                Some(o) => eprintln!(
                    "warning: episode {i} turn {turn} ({text:?}) ended {}",
                    o.as_str()
                ),
                None => bail!("episode {i} turn {turn} ({text:?}) did not complete"),
            }
            turn_ms.push(ms(t0.elapsed()));
            episode = Some(stream.episode_id.clone());
        }
        let episode = episode.context("no turn ran")?;
        ran.push((principal, episode));
    }
    let _ = recorder.take();
    let due_before = store.due_episodes(episodes + 16).await?.len();

    let mut times = Vec::new();
    let mut outcomes: BTreeMap<&str, usize> = BTreeMap::new();
    let mut folded = Vec::new();
    let mut summarizer_calls = Vec::new();
    let mut requests: BTreeMap<String, u64> = BTreeMap::new();
    let mut total_requests = Vec::new();
    for (principal, episode) in &ran {
        let ((report, took), counts) = journal
            .counted(async {
                let t0 = Instant::now();
                let report = runtime.compact_episode(principal, episode).await;
                (report, t0.elapsed())
            })
            .await;
        let report = report.with_context(|| format!("compacting {episode}"))?;
        times.push(ms(took));
        *outcomes.entry(report.outcome.as_str()).or_default() += 1;
        folded.push(report.turns_folded as f64);
        summarizer_calls.push(
            recorder
                .take()
                .iter()
                .filter(|c| c.purpose == CallPurpose::Summarize)
                .count() as f64,
        );
        for (service, operation, n) in counts.iter() {
            *requests
                .entry(format!("{service}.{operation}"))
                .or_default() += n;
        }
        total_requests.push(counts.total() as f64);
        if report.outcome != Outcome::Compacted {
            eprintln!(
                "warning: episode {episode} compacted with outcome {}",
                report.outcome.as_str()
            );
        }
    }
    let due_after = store.due_episodes(episodes + 16).await?.len();
    let per_episode: BTreeMap<String, f64> = requests
        .into_iter()
        .map(|(k, n)| (k, n as f64 / episodes.max(1) as f64))
        .collect();
    Ok(json!({
        "store": "DynamoDB Local + in-process S3 (baton_aws::journal::DynamoStore)",
        "endpoint": journal.dynamodb.endpoint(),
        "episodes": episodes,
        "turns_per_episode": turns,
        "summarizer": "offline (zero latency)",
        "due_before": due_before,
        "due_after": due_after,
        "outcomes": outcomes,
        "compact_episode_ms": distribution(&times),
        "compact_episode_ms_values": times.iter().map(|t| (t * 1000.0).round() / 1000.0).collect::<Vec<_>>(),
        "turns_folded_per_episode": distribution(&folded),
        "summarizer_calls_per_episode": distribution(&summarizer_calls),
        "requests_per_episode": distribution(&total_requests),
        "requests_per_episode_by_operation": per_episode,
        "turn_ms": distribution(&turn_ms),
    }))
}
