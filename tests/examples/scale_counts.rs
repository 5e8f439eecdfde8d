//! The counts `docs/scale.md` is built from: per turn, the DynamoDB requests and the
//! capacity units they consume, the S3 requests, and the model calls with the size of
//! what each sends and gets back; then the same for compaction and for the history
//! writer. Not a test: it prints measurements as JSON.
//!
//! ```text
//! cargo run --release -p baton-tests --example scale_counts [-- <episodes> <turns>]
//! ```
//!
//! Runs `<episodes>` episodes (default 12) of `<turns>` turns (default 10) of a user's
//! messages through the shipped registry and the offline model, once with the routing
//! orchestrator and once with the planner, on the DynamoDB + S3 journal (DynamoDB Local
//! behind `baton_tests::dynamodb_proxy`, which asks for and sums consumed capacity as an
//! on-demand table bills it). Then it compacts every episode, and feeds the table's stream
//! to the history writer, as the scheduled and stream-triggered functions would. Turns
//! are grouped by how many specialists they consulted. Model sizes are characters (the
//! system prompt split at its cache point, tool definitions, messages; output text and
//! tool arguments); tokens are about a quarter of that for English. Needs DynamoDB Local
//! (`BATON_TEST_DYNAMODB`, or `./infra/emulators.sh install`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use baton_core::Principal;
use baton_core::message::Content;
use baton_core::model::{CallPurpose, ModelEvent};
use baton_core::ports::clock::Clock;
use baton_core::ports::model::{Model, ModelRequest, ModelStream};
use baton_history_writer::{Config, HistoryWriter};
use baton_local::offline::OfflineModel;
use baton_runtime::{Runtime, RuntimeConfig, TurnRequest};
use baton_tests::dynamodb_local::DynamoDbLocal;
use baton_tests::dynamodb_proxy::{Attempt, DynamoProxy};
use baton_tests::fixtures::{registry_at, registry_dir};
use baton_tests::requests::{RequestCounter, RequestCounts};
use baton_tests::s3::InProcessS3;
use futures::StreamExt;
use serde_json::{Value, json};

const BUCKET: &str = "bodies";

/// Simulated time between two turns of an episode: the engine's per-episode rate window
/// reads the clock, and a user does not send ten messages in a second.
const TURN_PACE_MS: u64 = 60_000;

/// A clock the example moves on before each turn.
struct PacedClock(AtomicU64);

impl Clock for PacedClock {
    fn now_ms(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A user's messages, one a turn, switching among the shipped specialists.
const MESSAGES: &[&str] = &[
    "hi! can you find me some coffee deals?",
    "any of those at FreshMart?",
    "what's my points balance right now?",
    "are any of my points about to expire?",
    "my receipt from Valu Depot on Saturday didn't scan",
    "I'm planning to buy all my coffee in bulk to save money, good idea?",
    "thanks, that helps",
    "are there coupons for cat food this week?",
    "my receipt didn't scan and find me deals on snacks for a party",
    "how much is 10000 points worth as a gift card?",
    "should I switch to store brands to save?",
];

/// One model call's sizes, in characters.
#[derive(Debug, Clone, Default)]
struct Call {
    purpose: &'static str,
    agent: String,
    /// The system prompt up to its last cache point (cacheable across calls).
    system_cached: usize,
    system_rest: usize,
    tools: usize,
    messages: usize,
    output: usize,
}

/// Records every call's sizes and passes it on.
struct SizingModel {
    inner: Arc<dyn Model>,
    calls: Arc<Mutex<Vec<Call>>>,
}

fn purpose(p: CallPurpose) -> &'static str {
    match p {
        CallPurpose::Route => "route",
        CallPurpose::Reminder => "reminder",
        CallPurpose::Compose => "compose",
        CallPurpose::Agent => "specialist",
        CallPurpose::Note => "note",
        CallPurpose::Summarize => "summarize",
        CallPurpose::Remember => "remember",
    }
}

fn content_chars(c: &Content) -> usize {
    match c {
        Content::Text { text } => text.chars().count(),
        Content::ToolUse { name, input, .. } => name.len() + input.to_string().len(),
        Content::ToolResult { content, .. } => content.to_string().len(),
        Content::Picture { picture, .. } => {
            usize::try_from(picture.tokens().saturating_mul(4)).unwrap_or(usize::MAX)
        }
    }
}

impl Model for SizingModel {
    fn stream(&self, request: &ModelRequest) -> ModelStream {
        let cached_blocks = request
            .system
            .iter()
            .rposition(|b| b.cache_point)
            .map_or(0, |i| i + 1);
        let chars = |blocks: &[baton_core::model::SystemBlock]| {
            blocks.iter().map(|b| b.text.chars().count()).sum::<usize>()
        };
        let index = {
            let mut calls = self.calls.lock().unwrap();
            calls.push(Call {
                purpose: purpose(request.purpose),
                agent: request.agent_id.to_string(),
                system_cached: chars(&request.system[..cached_blocks]),
                system_rest: chars(&request.system[cached_blocks..]),
                tools: request
                    .tools
                    .iter()
                    .map(|t| t.name.len() + t.description.len() + t.input_schema.to_string().len())
                    .sum(),
                messages: request
                    .messages
                    .iter()
                    .flat_map(|m| &m.content)
                    .map(content_chars)
                    .sum(),
                output: 0,
            });
            calls.len() - 1
        };
        let calls = self.calls.clone();
        Box::pin(self.inner.stream(request).inspect(move |event| {
            let n = match event {
                Ok(ModelEvent::TextDelta(t)) => t.chars().count(),
                Ok(ModelEvent::ToolUseStart { name, .. }) => name.len(),
                Ok(ModelEvent::ToolUseDelta { fragment, .. }) => fragment.len(),
                _ => 0,
            };
            calls.lock().unwrap()[index].output += n;
        }))
    }
}

/// What one group of work cost: how many of it, and the sums.
#[derive(Debug, Default)]
struct Tally {
    n: usize,
    requests: BTreeMap<String, u64>,
    read_units: f64,
    write_units: f64,
    index_units: f64,
    calls: BTreeMap<&'static str, (usize, [usize; 5])>,
}

impl Tally {
    fn add(&mut self, attempts: &[Attempt], s3: &RequestCounts, calls: &[Call]) {
        self.n += 1;
        for a in attempts {
            *self
                .requests
                .entry(format!("DynamoDB.{}", a.operation))
                .or_default() += 1;
            self.index_units += a.index_units;
            if a.writes() {
                self.write_units += a.units;
            } else {
                self.read_units += a.units;
            }
        }
        for (service, operation, n) in s3.iter() {
            if service == baton_tests::requests::S3 {
                *self.requests.entry(format!("S3.{operation}")).or_default() += n;
            }
        }
        for c in calls {
            let (count, sizes) = self.calls.entry(c.purpose).or_default();
            *count += 1;
            for (total, n) in sizes.iter_mut().zip([
                c.system_cached,
                c.system_rest,
                c.tools,
                c.messages,
                c.output,
            ]) {
                *total += n;
            }
        }
    }

    /// Per item of work: requests, units, and per call purpose the calls and their mean
    /// sizes in characters.
    fn report(&self) -> Value {
        let n = self.n.max(1) as f64;
        let per = |x: f64| (x / n * 100.0).round() / 100.0;
        let calls: BTreeMap<&str, Value> = self
            .calls
            .iter()
            .map(|(p, (count, sizes))| {
                let mean = |i: usize| sizes[i] / (*count).max(1);
                (
                    *p,
                    json!({
                        "calls": per(*count as f64),
                        "mean_chars": {
                            "system_cached": mean(0),
                            "system_rest": mean(1),
                            "tools": mean(2),
                            "messages": mean(3),
                            "output": mean(4),
                        },
                    }),
                )
            })
            .collect();
        let input: usize = self
            .calls
            .values()
            .map(|(_, s)| s[0] + s[1] + s[2] + s[3])
            .sum();
        let output: usize = self.calls.values().map(|(_, s)| s[4]).sum();
        json!({
            "n": self.n,
            "requests": self.requests.iter().map(|(k, v)| (k.clone(), per(*v as f64))).collect::<BTreeMap<_, _>>(),
            "read_units": per(self.read_units),
            "write_units": per(self.write_units),
            "of_which_index_units": per(self.index_units),
            "model_calls": calls,
            "input_chars": per(input as f64),
            "output_chars": per(output as f64),
        })
    }
}

struct Rig {
    proxy: DynamoProxy,
    dynamodb: DynamoDbLocal,
    ddb: aws_sdk_dynamodb::Client,
    s3: InProcessS3,
    s3_counter: RequestCounter,
    table: String,
    calls: Arc<Mutex<Vec<Call>>>,
    clock: Arc<PacedClock>,
}

impl Rig {
    fn s3_client(&self) -> aws_sdk_s3::Client {
        aws_sdk_s3::Client::from_conf(
            self.s3
                .config_builder()
                .interceptor(self.s3_counter.clone())
                .build(),
        )
    }

    fn runtime(&self, orchestrator: &str) -> Runtime {
        let (registry, connectors) = registry_at(&registry_dir());
        let model = Arc::new(SizingModel {
            inner: Arc::new(OfflineModel::new(registry.clone())),
            calls: self.calls.clone(),
        });
        let store = baton_aws::journal::DynamoStore::new(
            self.ddb.clone(),
            self.s3_client(),
            baton_aws::journal::JournalConfig::new(&self.table, BUCKET),
        );
        Runtime::builder(registry)
            .model_override(model)
            .store(Arc::new(store))
            .clock(self.clock.clone())
            .connectors(connectors)
            .config(RuntimeConfig {
                orchestrator: Some(orchestrator.to_owned()),
                // The scheduled function compacts on AWS, not the turn.
                compact_after_turn: false,
                ..RuntimeConfig::default()
            })
            .build()
            .unwrap()
    }

    /// Runs `op`, returning what it sent to DynamoDB and S3 and the model calls it made.
    async fn measured<T>(
        &self,
        op: impl Future<Output = T>,
    ) -> (T, Vec<Attempt>, RequestCounts, Vec<Call>) {
        let (from, s3_before, calls_from) = (
            self.proxy.attempts().len(),
            self.s3_counter.snapshot(),
            self.calls.lock().unwrap().len(),
        );
        let out = op.await;
        let calls = self.calls.lock().unwrap()[calls_from..].to_vec();
        (
            out,
            self.proxy.attempts_since(from),
            self.s3_counter.snapshot().since(&s3_before),
            calls,
        )
    }
}

fn main() {
    let mut args = std::env::args()
        .skip(1)
        .map(|n| n.parse::<usize>().unwrap());
    let episodes = args.next().unwrap_or(12);
    let turns = args.next().unwrap_or(10);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let results = rt.block_on(run(episodes, turns));
    println!("{}", serde_json::to_string_pretty(&results).unwrap());
}

async fn run(episodes: usize, turns: usize) -> Value {
    let dynamodb = DynamoDbLocal::connect().await;
    let table = dynamodb.fresh_table().await;
    let proxy = DynamoProxy::start(dynamodb.endpoint()).await;
    let ddb = aws_sdk_dynamodb::Client::from_conf(
        dynamodb
            .config_builder()
            .endpoint_url(proxy.endpoint_url())
            .build(),
    );
    let s3 = InProcessS3::start();
    s3.create_bucket(BUCKET).await;
    let rig = Rig {
        proxy,
        dynamodb,
        ddb,
        s3,
        s3_counter: RequestCounter::new(),
        table,
        calls: Arc::new(Mutex::new(Vec::new())),
        clock: Arc::new(PacedClock(AtomicU64::new(
            baton_runtime::clock::SystemClock.now_ms(),
        ))),
    };

    let mut kinds: BTreeMap<String, Tally> = BTreeMap::new();
    let mut ran = Vec::new();
    for orchestrator in ["orchestrator", "planner"] {
        let runtime = rig.runtime(orchestrator);
        for i in 0..episodes {
            let principal = Principal::new(&format!("{orchestrator}-user-{i}")).unwrap();
            let mut episode: Option<String> = None;
            for turn in 0..turns {
                rig.clock.0.fetch_add(TURN_PACE_MS, Ordering::Relaxed);
                let text = MESSAGES[(turn + i * 7) % MESSAGES.len()];
                let request = TurnRequest {
                    episode_id: episode.clone(),
                    ..TurnRequest::new(principal.clone(), text)
                };
                let (id, attempts, s3, calls) = rig
                    .measured(async {
                        let mut stream = runtime.run_turn(request).await.unwrap();
                        while stream.next().await.is_some() {}
                        stream.episode_id.clone()
                    })
                    .await;
                let consulted: std::collections::BTreeSet<&str> = calls
                    .iter()
                    .filter(|c| c.purpose == "specialist")
                    .map(|c| c.agent.as_str())
                    .collect();
                let place = if episode.is_none() { "first" } else { "later" };
                let kind = format!(
                    "{orchestrator}, {} specialist(s), {place} turn of an episode",
                    consulted.len().min(2)
                );
                kinds.entry(kind).or_default().add(&attempts, &s3, &calls);
                kinds
                    .entry(format!("{orchestrator}, all turns"))
                    .or_default()
                    .add(&attempts, &s3, &calls);
                episode = Some(id);
            }
            ran.push((principal, runtime.clone(), episode.expect("a turn ran")));
        }
    }

    let mut compaction = Tally::default();
    for (principal, runtime, episode) in &ran {
        let (report, attempts, s3, calls) = rig
            .measured(runtime.compact_episode(principal, episode))
            .await;
        report.unwrap();
        compaction.add(&attempts, &s3, &calls);
    }

    // The history writer: the whole stream as one batch, per turn committed.
    let streams = aws_sdk_dynamodbstreams::Client::new(rig.dynamodb.sdk_config());
    let event = baton_tests::streams::table_event(&rig.ddb, &streams, &rig.table)
        .await
        .unwrap();
    let records = event.records.len();
    let writer = HistoryWriter::new(
        rig.ddb.clone(),
        rig.s3_client(),
        Config {
            table: rig.table.clone(),
            bucket: BUCKET.to_owned(),
        },
    );
    let started = std::time::Instant::now();
    let (summary, attempts, s3, _) = rig.measured(writer.process(event)).await;
    let took_ms = started.elapsed().as_secs_f64() * 1e3;
    let (response, _) = summary.unwrap();
    assert!(response.batch_item_failures.is_empty());
    let committed = episodes * turns * 2;
    let mut history = Tally::default();
    history.add(&attempts, &s3, &[]);

    json!({
        "store": "DynamoDB Local (on-demand capacity reported per request) + in-process S3",
        "model": "offline (the shipped registry's prompts and tools; templated answers)",
        "episodes_per_orchestrator": episodes,
        "turns_per_episode": turns,
        "turn_kinds": kinds.iter().map(|(k, t)| (k.clone(), t.report())).collect::<BTreeMap<_, _>>(),
        "compaction_per_episode": compaction.report(),
        "history_writer": {
            "stream_records": records,
            "turns_committed": committed,
            "wall_ms_per_turn_on_the_emulator": (took_ms / committed as f64 * 100.0).round() / 100.0,
            "whole_batch": history.report(),
        },
    })
}
