//! The soak: `baton serve` under a steady mixed load for a long time (`--soak-minutes`),
//! to see what a test is too short to see: memory that creeps, descriptors or tasks that
//! leak, latency that drifts, turns that go missing.
//!
//! The load, at `--soak-rate` turns a second, started on a fixed schedule whatever the
//! server does: of every 20 turns, 2 ask for a 4 MB answer and read it slowly (64 KiB,
//! then a 50 ms pause), 2 hang up early (one after the first event, one at the first
//! piece of the answer after the specialists' tool calls), the rest are the reference
//! turn, single and mixed, read at once. The model is the benchmark's scripted model at
//! the reference's fixed latencies.
//!
//! Every 10 s the server's RSS, open descriptors, threads and live tokio tasks (from its
//! `/metrics`) are sampled; time to first event is kept per turn. At the end, each turn id
//! is sent again: a committed turn replays (`x-baton-replay: true`), so a turn that is not
//! replayed is one the journal lost.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use futures::StreamExt;
use serde_json::{Value, json};

use crate::serve_load::start;
use crate::stats::{percentile, rss_mib};
use crate::workload::{self, Latencies, MIXED_PROMPT, SINGLE_PROMPT};

/// What a big turn asks for; the script answers it with [`BIG_PIECES`] pieces.
const BIG_PROMPT: &str = "[big] Find me running shoes under 100";
/// Pieces of about 1 KB in a big answer: 4 MB.
const BIG_PIECES: usize = 4_000;
/// Seconds between samples of the server.
const SAMPLE_EVERY: Duration = Duration::from_secs(10);
/// Minutes per latency window.
const WINDOW_MINUTES: f64 = 5.0;
/// The first minutes are warm-up: the allocator and pools settle.
const WARM_UP_MINUTES: f64 = 5.0;

/// How a turn of the load behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Single,
    Mixed,
    /// A 4 MB answer, read slowly.
    Big,
    /// Hangs up after the first event.
    HangUpAtOnce,
    /// Hangs up after this many events.
    HangUpMidway,
}

impl Kind {
    fn of(i: u64) -> Kind {
        match i % 20 {
            0 | 10 => Kind::Big,
            5 => Kind::HangUpAtOnce,
            15 => Kind::HangUpMidway,
            n if n % 2 == 1 => Kind::Mixed,
            _ => Kind::Single,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Single => "single",
            Kind::Mixed => "mixed",
            Kind::Big => "big",
            Kind::HangUpAtOnce => "hang up at once",
            Kind::HangUpMidway => "hang up midway",
        }
    }

    fn prompt(self) -> &'static str {
        match self {
            Kind::Mixed | Kind::HangUpMidway => MIXED_PROMPT,
            Kind::Big => BIG_PROMPT,
            Kind::Single | Kind::HangUpAtOnce => SINGLE_PROMPT,
        }
    }
}

/// One turn of the load, as the client saw it.
#[derive(Debug, Clone)]
struct Turn {
    id: String,
    principal: String,
    kind: Kind,
    prompt: &'static str,
    /// Seconds since the soak started.
    at_s: f64,
    first_event_ms: Option<f64>,
    outcome: &'static str,
    /// The end of the stream when it ended some other way than `completed`, or the status
    /// and message of a refusal.
    tail: String,
}

/// One sample of the server.
#[derive(Debug, Clone, serde::Serialize)]
struct Sample {
    at_s: f64,
    rss_mib: f64,
    fds: usize,
    threads: usize,
    tasks: Option<u64>,
    turns_started: usize,
    /// Free space on the disk holding the store: the server refuses turns it could not save.
    free_disk_mib: Option<u64>,
}

/// The script: the reference turn at its fixed latencies, and a 4 MB composition for
/// [`BIG_PROMPT`].
fn script() -> String {
    let piece = format!("\"{} \"", "lorem ipsum dolor sit amet ".repeat(37));
    let big = format!("[{}]", vec![piece; BIG_PIECES].join(", "));
    let general = "    - when: { purpose: compose }\n";
    workload::script(Latencies::FIXED).replacen(
        general,
        &format!("    - when: {{ purpose: compose, user_contains: \"[big]\" }}\n      text: {big}\n{general}"),
        1,
    )
}

fn count_entries(path: &str) -> usize {
    std::fs::read_dir(path).map_or(0, |d| d.count())
}

async fn alive_tasks(client: &reqwest::Client, base: &str) -> Option<u64> {
    let metrics: Value = client
        .get(format!("{base}/metrics"))
        .send()
        .await
        .ok()?
        .json()
        .await
        .ok()?;
    metrics.pointer("/runtime/alive_tasks")?.as_u64()
}

/// Runs one turn of the load and says how it went.
async fn run_turn(client: reqwest::Client, url: String, mut turn: Turn) -> Turn {
    let started = Instant::now();
    let sent = client
        .post(&url)
        .header("x-baton-principal", &turn.principal)
        .json(&json!({ "message": turn.prompt, "turn_id": turn.id }))
        .send()
        .await;
    let response = match sent {
        Ok(r) if r.status().is_success() => r,
        Ok(r) => {
            let status = r.status();
            turn.outcome = if status.as_u16() == 429 || status.as_u16() == 503 {
                "refused"
            } else {
                "error status"
            };
            // What the server said, so that the report shows why.
            let message = r.text().await.unwrap_or_default();
            turn.tail = format!(
                "{status}: {}",
                message.chars().take(200).collect::<String>()
            );
            return turn;
        }
        Err(_) => {
            turn.outcome = "connection failed";
            return turn;
        }
    };
    let mut body = response.bytes_stream();
    let mut tools_ended = false;
    let mut unpaced = 0usize;
    let mut tail = String::new();
    while let Some(chunk) = body.next().await {
        let chunk = match chunk {
            Ok(chunk) => chunk,
            Err(e) => {
                turn.outcome = "stream broken";
                turn.tail = format!("{tail} / {e}");
                return turn;
            }
        };
        if turn.first_event_ms.is_none() {
            turn.first_event_ms = Some(started.elapsed().as_secs_f64() * 1e3);
        }
        let text = String::from_utf8_lossy(&chunk);
        let answering = answer_has_begun(&mut tools_ended, &text);
        tail.push_str(&text);
        if tail.contains("event: completed") {
            turn.outcome = "completed";
            return turn;
        }
        let keep = tail.len().saturating_sub(256);
        let keep = (keep..tail.len())
            .find(|i| tail.is_char_boundary(*i))
            .unwrap_or(0);
        tail.drain(..keep);
        unpaced += chunk.len();
        match turn.kind {
            Kind::HangUpAtOnce => {
                turn.outcome = "hung up";
                return turn;
            }
            Kind::HangUpMidway if answering => {
                turn.outcome = "hung up";
                return turn;
            }
            Kind::Big if unpaced >= 64 * 1024 => {
                unpaced = 0;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            _ => {}
        }
    }
    turn.outcome = "ended without completed";
    turn.tail = tail;
    turn
}

/// Whether `chunk` holds a piece of the answer that follows a specialist's tool call:
/// where a turn that hangs up midway does, with the rest of the answer still to come.
/// `tools_ended` carries what earlier chunks showed.
fn answer_has_begun(tools_ended: &mut bool, chunk: &str) -> bool {
    let after = match chunk.rfind("event: tool_call_end") {
        Some(at) => {
            *tools_ended = true;
            &chunk[at..]
        }
        None => chunk,
    };
    *tools_ended && after.contains("event: text")
}

/// Sends each turn again; how many replayed from the journal.
async fn replays(client: &reqwest::Client, url: &str, turns: &[Turn]) -> (usize, Vec<String>) {
    let results: Vec<(bool, String)> = futures::stream::iter(turns.iter().cloned().map(|t| {
        let (client, url) = (client.clone(), url.to_owned());
        async move {
            let replayed = match client
                .post(&url)
                .header("x-baton-principal", &t.principal)
                .json(&json!({ "message": t.prompt, "turn_id": t.id }))
                .send()
                .await
            {
                Ok(r) => {
                    let replayed = r
                        .headers()
                        .get("x-baton-replay")
                        .is_some_and(|v| v == "true");
                    // Drain, so that the connection is reused.
                    let _ = r.bytes().await;
                    replayed
                }
                Err(_) => false,
            };
            (replayed, t.id.clone())
        }
    }))
    .buffer_unordered(16)
    .collect()
    .await;
    let missing: Vec<String> = results
        .iter()
        .filter(|(ok, _)| !ok)
        .map(|(_, id)| id.clone())
        .collect();
    (results.len() - missing.len(), missing)
}

/// Runs the soak for `minutes` at `rate` turns a second against `baton`.
pub(crate) async fn run(baton: &Path, minutes: f64, rate: f64) -> anyhow::Result<Value> {
    let dir = tempfile::tempdir()?;
    workload::write(dir.path(), workload::FAITHFUL, Latencies::FIXED)?;
    std::fs::write(dir.path().join("script.yaml"), script()).context("writing the script")?;
    let data = tempfile::tempdir()?;
    let (server, _) = start(baton, dir.path(), data.path()).await?;
    let pid = server.child.id();
    let base = server.base.clone();
    let url = format!("{base}/v1/turns");
    let client = reqwest::Client::new();

    let began = Instant::now();
    let duration = Duration::from_secs_f64(minutes * 60.0);
    let turns: Arc<Mutex<Vec<Turn>>> = Arc::new(Mutex::new(Vec::new()));
    let started_count = Arc::new(std::sync::atomic::AtomicUsize::new(0));

    let sampler = {
        let (client, base, started_count) = (client.clone(), base.clone(), started_count.clone());
        let data_path = data.path().to_owned();
        tokio::spawn(async move {
            let mut samples = Vec::new();
            let mut tick = tokio::time::interval(SAMPLE_EVERY);
            loop {
                tick.tick().await;
                let Some((rss, _)) = rss_mib(pid) else {
                    break;
                };
                samples.push(Sample {
                    at_s: began.elapsed().as_secs_f64().round(),
                    rss_mib: rss,
                    fds: count_entries(&format!("/proc/{pid}/fd")),
                    threads: count_entries(&format!("/proc/{pid}/task")),
                    tasks: alive_tasks(&client, &base).await,
                    turns_started: started_count.load(std::sync::atomic::Ordering::Relaxed),
                    free_disk_mib: baton_local::embedded_store::free_bytes(&data_path)
                        .ok()
                        .map(|b| b / 1_048_576),
                });
                if began.elapsed() > duration + Duration::from_secs(60) {
                    break;
                }
            }
            samples
        })
    };

    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut running = Vec::new();
    let mut i = 0u64;
    while began.elapsed() < duration {
        tick.tick().await;
        let kind = Kind::of(i);
        let turn = Turn {
            id: format!("soak-{i}"),
            principal: format!("soak-{}", i % 50),
            kind,
            prompt: kind.prompt(),
            at_s: began.elapsed().as_secs_f64(),
            first_event_ms: None,
            outcome: "",
            tail: String::new(),
        };
        let (client, url, turns) = (client.clone(), url.clone(), turns.clone());
        started_count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        running.push(tokio::spawn(async move {
            let done = run_turn(client, url, turn).await;
            turns
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(done);
        }));
        running.retain(|t| !t.is_finished());
        i += 1;
    }
    for task in running {
        let _ = tokio::time::timeout(Duration::from_secs(60), task).await;
    }
    let load_ended_s = began.elapsed().as_secs_f64();
    let samples = sampler.await.context("the sampler stopped")?;
    let idle_after = rss_mib(pid).map(|r| r.0);

    let turns = std::mem::take(&mut *turns.lock().unwrap_or_else(PoisonError::into_inner));
    let mut by_kind = ByKind::new();
    for t in &turns {
        *by_kind
            .entry(t.kind.name())
            .or_default()
            .entry(t.outcome)
            .or_default() += 1;
    }
    let mut outcomes = Counts::new();
    for (outcome, n) in by_kind.values().flatten() {
        *outcomes.entry(*outcome).or_default() += n;
    }
    // The turns a reply was seen for; a refused one was never claimed.
    let claimed: Vec<Turn> = turns
        .iter()
        .filter(|t| t.first_event_ms.is_some())
        .cloned()
        .collect();
    let (replayed, missing) = replays(&client, &url, &claimed).await;
    // A few of each way a turn did not complete, so that one kind does not hide another.
    let mut incomplete = Vec::new();
    for outcome in outcomes.keys() {
        incomplete.extend(
            turns
                .iter()
                .filter(|t| t.outcome == *outcome && !t.tail.is_empty())
                .take(3)
                .map(|t| format!("{} ({}): {}", t.id, t.outcome, t.tail)),
        );
    }

    Ok(report(ReportInput {
        minutes,
        rate,
        turns: &turns,
        samples: &samples,
        outcomes,
        by_kind,
        claimed: claimed.len(),
        replayed,
        missing,
        load_ended_s,
        idle_after,
        incomplete,
        data_dir_bytes: dir_size(data.path()),
    }))
}

fn dir_size(path: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(path) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_size(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// Turns by outcome.
type Counts = BTreeMap<&'static str, usize>;
/// Turns by kind, then by outcome.
type ByKind = BTreeMap<&'static str, Counts>;

struct ReportInput<'a> {
    minutes: f64,
    rate: f64,
    turns: &'a [Turn],
    samples: &'a [Sample],
    outcomes: Counts,
    by_kind: ByKind,
    claimed: usize,
    replayed: usize,
    missing: Vec<String>,
    load_ended_s: f64,
    idle_after: Option<f64>,
    incomplete: Vec<String>,
    data_dir_bytes: u64,
}

fn report(r: ReportInput<'_>) -> Value {
    let warm = WARM_UP_MINUTES * 60.0;
    let windows: Vec<Value> = (0..)
        .map(|w| f64::from(w) * WINDOW_MINUTES * 60.0)
        .take_while(|from| *from < r.minutes * 60.0)
        .map(|from| {
            let to = from + WINDOW_MINUTES * 60.0;
            let firsts: Vec<f64> = r
                .turns
                .iter()
                .filter(|t| t.at_s >= from && t.at_s < to)
                .filter_map(|t| t.first_event_ms)
                .collect();
            json!({
                "from_min": from / 60.0,
                "turns": firsts.len(),
                "first_event_p50_ms": percentile(&firsts, 50.0),
                "first_event_p99_ms": percentile(&firsts, 99.0),
            })
        })
        .collect();
    let settled: Vec<&Sample> = r
        .samples
        .iter()
        .filter(|s| s.at_s >= warm && s.at_s <= r.load_ended_s)
        .collect();
    // RSS growth after warm-up: the last five minutes against the first five, by their
    // mean, their median and their floor. A sample lands with however many 4 MB answers
    // happen to be in flight, so the mean swings with them; the floor is what stays when
    // few are, and is where a leak shows first.
    let span = WINDOW_MINUTES * 60.0;
    let rss_in = |from: f64, to: f64| -> Vec<f64> {
        settled
            .iter()
            .filter(|s| s.at_s >= from && s.at_s < to)
            .map(|s| s.rss_mib)
            .collect()
    };
    let (first, last) = (
        rss_in(warm, warm + span),
        rss_in(r.load_ended_s - span, r.load_ended_s + 1.0),
    );
    let growth = |of: fn(&[f64]) -> f64| {
        (!first.is_empty() && !last.is_empty()).then(|| {
            let (a, b) = (of(&first), of(&last));
            ((b - a) / a * 1000.0).round() / 10.0
        })
    };
    let mean: fn(&[f64]) -> f64 = |xs| xs.iter().sum::<f64>() / xs.len() as f64;
    let median: fn(&[f64]) -> f64 = |xs| percentile(xs, 50.0);
    let floor: fn(&[f64]) -> f64 = |xs| xs.iter().copied().fold(f64::INFINITY, f64::min);
    let range = |f: fn(&Sample) -> f64| {
        let xs: Vec<f64> = settled.iter().map(|s| f(s)).collect();
        let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
        let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        json!({ "min": min, "max": max })
    };
    let p99s: Vec<f64> = windows
        .iter()
        .filter(|w| w["from_min"].as_f64().unwrap_or(0.0) >= WARM_UP_MINUTES)
        .filter_map(|w| w["first_event_p99_ms"].as_f64())
        .collect();
    let p99_min = p99s.iter().copied().fold(f64::INFINITY, f64::min);
    let p99_max = p99s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    json!({
        "what": "baton serve under a steady mixed load; see shared/bench/src/soak.rs",
        "minutes": r.minutes,
        "rate_per_s": r.rate,
        "turns": r.turns.len(),
        "outcomes": r.outcomes,
        "outcomes_by_kind": r.by_kind,
        "incomplete_sample": r.incomplete,
        "accounting": {
            "turns_with_a_reply": r.claimed,
            "replayed_from_the_journal": r.replayed,
            "not_replayed_sample": r.missing.iter().take(5).collect::<Vec<_>>(),
            "not_replayed": r.missing.len(),
        },
        "targets": {
            "rss_growth_after_warm_up_percent": growth(mean),
            "rss_growth_after_warm_up_percent_by_median": growth(median),
            "rss_growth_after_warm_up_percent_by_floor": growth(floor),
            "fds_after_warm_up": range(|s| s.fds as f64),
            "threads_after_warm_up": range(|s| s.threads as f64),
            "tasks_after_warm_up": range(|s| s.tasks.unwrap_or(0) as f64),
            "first_event_p99_ms_after_warm_up": { "min": p99_min, "max": p99_max,
                "spread_percent": ((p99_max - p99_min) / p99_min * 1000.0).round() / 10.0 },
        },
        "rss_mib_after_the_load": r.idle_after,
        "data_dir_mib": (r.data_dir_bytes as f64 / 1048576.0).round(),
        "windows": windows,
        "samples": r.samples,
    })
}

/// The figures in a few lines, for the terminal.
pub(crate) fn table(results: &Value) -> String {
    let t = &results["targets"];
    let a = &results["accounting"];
    format!(
        "soak: {} turns in {} min at {}/s; outcomes {}\n\
         RSS growth after warm-up {}% (target < 5; by median {}%, by floor {}%); \
         descriptors {}; tasks {}; \
         first-event p99 per 5 min {} (target within 20%)\n\
         journal: {} of {} turns with a reply replayed",
        results["turns"],
        results["minutes"],
        results["rate_per_s"],
        results["outcomes"],
        t["rss_growth_after_warm_up_percent"],
        t["rss_growth_after_warm_up_percent_by_median"],
        t["rss_growth_after_warm_up_percent_by_floor"],
        t["fds_after_warm_up"],
        t["tasks_after_warm_up"],
        t["first_event_p99_ms_after_warm_up"],
        a["replayed_from_the_journal"],
        a["turns_with_a_reply"],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mix_is_a_tenth_big_and_a_tenth_hanging_up() {
        let kinds: Vec<Kind> = (0..20).map(Kind::of).collect();
        let count = |k: Kind| kinds.iter().filter(|x| **x == k).count();
        assert_eq!(count(Kind::Big), 2);
        assert_eq!(count(Kind::HangUpAtOnce) + count(Kind::HangUpMidway), 2);
        assert_eq!(count(Kind::Single) + count(Kind::Mixed), 16);
    }

    #[test]
    fn a_midway_hang_up_comes_with_the_answer_after_the_tools() {
        let mut ended = false;
        let narration = "event: text\ndata: {\"text\":\"Let me check.\"}\n\n";
        assert!(
            !answer_has_begun(&mut ended, narration),
            "narration is not the answer"
        );
        assert!(!answer_has_begun(
            &mut ended,
            "event: tool_call_start\ndata: {}\n\nevent: tool_call_end\ndata: {}\n\n"
        ));
        assert!(answer_has_begun(&mut ended, narration));

        let mut ended = false;
        let one_chunk = format!("{narration}event: tool_call_end\ndata: {{}}\n\n{narration}");
        assert!(answer_has_begun(&mut ended, &one_chunk));
    }

    #[test]
    fn the_script_answers_big_turns_with_four_megabytes() {
        let s = script();
        assert!(s.contains("user_contains: \"[big]\""));
        assert!(s.len() > 4_000_000);
        assert!(s.contains("final0"), "the ordinary composition is kept");
    }
}
