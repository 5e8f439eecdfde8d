//! The chaos test (D-39): a thousand mixed turns — routed and planned, read to the end,
//! hung up on, or canceled mid-stream — on the shipped registry and the offline model,
//! with fault injection points armed at random from a seed: the store's claim, release,
//! commit, checkpoint and summary writes (before and after each), the body store, the
//! model stream (before the first event and between events), the connectors and the
//! clock. After every turn, and once more at the end, it checks:
//!
//! - nothing panicked;
//! - every turn that was committed is still there, unchanged, and every turn that a client
//!   saw answered was committed;
//! - a turn that failed is taken again at once when sent again, or once its claim's lease
//!   has run out (the clock is moved past it), never later;
//! - every turn ends in an answer or a plain error, and no one is shown a fault's detail;
//! - the consulted record names only specialists that really ran, and every specialist
//!   that ran in the run that committed;
//! - once the faults stop and the breakers' cool-down passes, every specialist answers.
//!
//! It runs on the embedded store and on DynamoDB Local with the S3 server. The seed is
//! printed first; `BATON_CHAOS_SEED=<n>` runs that seed again and `BATON_CHAOS_TURNS=<n>`
//! sets the number of turns (1,000). Turns run one at a time, so a seed replays the same
//! faults (the planner's parallel waves may still take them in another order).

#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

use baton_core::Principal;
use baton_core::events::Event;
use baton_core::ports::connector::{Connector, ConnectorError, ConnectorRequest, Envelope};
use baton_core::ports::model::{Model, ModelRequest, ModelStream};
use baton_core::ports::store::Store;
use baton_core::turn::{TurnOutcome, TurnRecord};
use baton_runtime::{RejectionKind, Runtime, RuntimeConfig, TurnRequest};
use baton_tests::dynamodb_local::{BODIES_BUCKET, DynamoDbLocal};
use baton_tests::fixtures::{copy_dir, registry_at, registry_dir};
use baton_tests::s3::InProcessS3;
use futures::StreamExt;

/// Every point the test arms, but the clock's (armed with a jump).
const POINTS: &[&str] = &[
    "store.claim.before",
    "store.claim.after",
    "store.release.before",
    "store.release.after",
    "store.commit.before",
    "store.commit.after",
    "store.checkpoint.before",
    "store.checkpoint.after",
    "store.summary.before",
    "store.summary.after",
    "bodies.write",
    "bodies.read",
    "model.stream.first",
    "model.stream.next",
    "connector.fixture",
];

/// What users ask: each reaches in-process tools only (fixtures).
const MESSAGES: &[&str] = &[
    "find me coffee deals",
    "my receipts that didn't scan, then how to fix them",
    "my receipt didn't scan",
    "how many points do I have?",
    "my receipt didn't scan and find me coffee deals",
    "what's my points balance and find me coffee deals",
    "be honest, is skipping the caf\u{e9} every weekday realistic?",
];

/// How long a claim holds: short, and passed by moving the clock, not by waiting.
const LEASE_MS: u64 = 2_000;

/// A breaker's cool-down in the registry copy, so that the end's check need not wait 30 s.
const COOLDOWN_MS: u64 = 200;

/// The failpoint registry is one per process: the two journals take turns.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

static PANICS: AtomicUsize = AtomicUsize::new(0);

/// Counts every panic in the process, on any thread or task, before the usual report.
fn count_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let report = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            report(info);
        }));
    });
}

/// splitmix64: a seeded sequence, enough for choosing faults.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// The model, recording which agent each call was for.
struct Recording {
    inner: Arc<dyn Model>,
    ran: Arc<Mutex<Vec<String>>>,
}

impl Model for Recording {
    fn stream(&self, request: &ModelRequest) -> ModelStream {
        self.ran.lock().unwrap().push(request.agent_id.to_string());
        self.inner.stream(request)
    }
}

/// An in-process connector, recording who each call was for.
struct RecordingConnector {
    inner: Arc<dyn Connector>,
    ran: Arc<Mutex<Vec<String>>>,
}

#[async_trait::async_trait]
impl Connector for RecordingConnector {
    async fn call(&self, request: ConnectorRequest) -> Result<Envelope, ConnectorError> {
        // A tool that an orchestrator calls itself is consulted in its own name.
        let direct = matches!(&*request.agent_id, "orchestrator" | "planner");
        self.ran.lock().unwrap().push(if direct {
            request.tool_id.to_string()
        } else {
            request.agent_id.to_string()
        });
        self.inner.call(request).await
    }

    fn check_config(&self, tool_id: &str, config: &serde_json::Value) -> Result<(), String> {
        self.inner.check_config(tool_id, config)
    }
}

/// Disarms every point.
fn disarm() {
    for point in POINTS {
        fail::remove(point);
    }
    fail::remove("clock.now");
}

/// How one attempt at a turn went, as its client saw it.
#[derive(Debug)]
enum Seen {
    /// Refused before it started.
    Refused(RejectionKind, String),
    /// Read to its end: the events.
    Ended(Vec<Event>),
    /// The client stopped reading after some events.
    HungUp,
}

/// How the client treats the stream.
#[derive(Debug, Clone, Copy)]
enum Mode {
    ReadAll,
    HangUpAfter(usize),
    CancelAfter(usize),
}

/// One planned turn of the run.
struct Plan {
    planned: bool,
    episode: Option<String>,
    turn_id: String,
    message: &'static str,
}

struct Chaos {
    rng: Rng,
    seed: u64,
    /// Panics in the process before this run (another journal's run may have failed).
    panics_before: usize,
    store: Arc<dyn Store>,
    routed: Runtime,
    planned: Runtime,
    ran: Arc<Mutex<Vec<String>>>,
    principal: Principal,
    episodes: Vec<String>,
    /// Every committed turn as first read, by turn id: (episode, record).
    committed: HashMap<String, (String, TurnRecord)>,
    /// Attempts that ended and were answered, turns that were retried.
    answered: usize,
    retried: usize,
    faults: usize,
}

impl Chaos {
    async fn new(store: Arc<dyn Store>, registry_copy: &Path, seed: u64) -> Chaos {
        let (registry, connectors) = registry_at(registry_copy);
        let ran = Arc::new(Mutex::new(Vec::new()));
        let model: Arc<dyn Model> = Arc::new(Recording {
            inner: Arc::new(baton_local::offline::OfflineModel::new(registry.clone())),
            ran: ran.clone(),
        });
        let mut recording = connectors.clone();
        for kind in ["fixture", "rate_table"] {
            let inner = connectors[kind].clone();
            recording.insert(
                kind.to_owned(),
                Arc::new(RecordingConnector {
                    inner,
                    ran: ran.clone(),
                }),
            );
        }
        let runtime = |entry: &str| {
            Runtime::builder(registry.clone())
                .model_override(model.clone())
                .store(store.clone())
                .connectors(recording.clone())
                .config(RuntimeConfig {
                    orchestrator: Some(entry.into()),
                    lease_ms: LEASE_MS,
                    // As `baton serve` does: compaction after the turn, so that the summary's
                    // writes meet faults too.
                    compact_after_turn: true,
                    ..RuntimeConfig::default()
                })
                .build()
                .unwrap()
        };
        let (routed, planned) = (runtime("orchestrator"), runtime("planner"));
        Chaos {
            rng: Rng(seed),
            seed,
            panics_before: PANICS.load(Ordering::SeqCst),
            store,
            routed,
            planned,
            ran,
            principal: Principal::new("alice").unwrap(),
            episodes: Vec::new(),
            committed: HashMap::new(),
            answered: 0,
            retried: 0,
            faults: 0,
        }
    }

    fn fail(&self, what: String) -> ! {
        panic!("chaos seed {}: {what}", self.seed);
    }

    /// Arms up to two points, each to fire once after skipping a few passes, and sometimes
    /// the clock's jump.
    fn arm(&mut self) -> Vec<String> {
        let mut armed = Vec::new();
        if self.rng.below(2) == 0 {
            return armed;
        }
        for _ in 0..=self.rng.below(2) {
            let point = *self.rng.pick(POINTS);
            let skip = self.rng.below(4);
            fail::cfg(point, &format!("{skip}*off->1*return")).unwrap();
            armed.push(format!("{point} after {skip}"));
        }
        if self.rng.below(8) == 0 {
            let jump = if self.rng.below(2) == 0 {
                LEASE_MS as i64 + 1
            } else {
                -(LEASE_MS as i64)
            };
            let skip = self.rng.below(6);
            fail::cfg("clock.now", &format!("{skip}*off->1*return({jump})")).unwrap();
            armed.push(format!("clock {jump:+} ms after {skip}"));
        }
        self.faults += armed.len();
        armed
    }

    fn runtime(&self, planned: bool) -> &Runtime {
        if planned { &self.planned } else { &self.routed }
    }

    fn request(&self, plan: &Plan) -> TurnRequest {
        TurnRequest {
            turn_id: Some(plan.turn_id.clone()),
            episode_id: plan.episode.clone(),
            ..TurnRequest::new(self.principal.clone(), plan.message)
        }
    }

    /// One attempt at a turn: what its client saw, the episode it ran on (when it
    /// started), and the agents whose model calls it made.
    async fn attempt(&self, plan: &Plan, mode: Mode) -> (Seen, Option<String>, Vec<String>) {
        self.ran.lock().unwrap().clear();
        let runtime = self.runtime(plan.planned);
        let mut stream = match runtime.run_turn(self.request(plan)).await {
            Ok(stream) => stream,
            Err(refused) => {
                return (
                    Seen::Refused(refused.kind, refused.message),
                    None,
                    self.ran.lock().unwrap().clone(),
                );
            }
        };
        let episode = stream.episode_id.clone();
        let mut events = Vec::new();
        let seen = loop {
            match mode {
                Mode::HangUpAfter(n) if events.len() >= n => break Seen::HungUp,
                Mode::CancelAfter(n) if events.len() == n => {
                    runtime.cancel_turn(&self.principal, &episode, &plan.turn_id);
                }
                _ => {}
            }
            let next = tokio::time::timeout(Duration::from_secs(60), stream.next())
                .await
                .unwrap_or_else(|_| self.fail(format!("turn {} stalled", plan.turn_id)));
            match next {
                Some(wire) => events.push(wire.event),
                None => break Seen::Ended(events),
            }
        };
        drop(stream);
        // A turn left by its client goes on in the runtime: wait for its end.
        for _ in 0..6_000 {
            if !runtime.is_running(&self.principal, &episode, &plan.turn_id) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        if runtime.is_running(&self.principal, &episode, &plan.turn_id) {
            self.fail(format!(
                "turn {} still running after a minute",
                plan.turn_id
            ));
        }
        (seen, Some(episode), self.ran.lock().unwrap().clone())
    }

    /// The check every ending must pass: an answer or a plain error, nothing of a fault.
    fn check_plain(&self, plan: &Plan, seen: &Seen) {
        let shown = match seen {
            Seen::Refused(_, message) => message.clone(),
            Seen::Ended(events) => {
                if !matches!(events.last(), Some(Event::Completed { .. })) {
                    self.fail(format!(
                        "turn {} ended without `completed`: {events:?}",
                        plan.turn_id
                    ));
                }
                serde_json::to_string(events).unwrap()
            }
            Seen::HungUp => return,
        };
        for detail in ["injected", "fault at", "StoreError", "Unavailable("] {
            if shown.contains(detail) {
                self.fail(format!(
                    "turn {} showed a fault's detail ({detail}): {shown}",
                    plan.turn_id
                ));
            }
        }
        if let Seen::Refused(_, message) = seen
            && message.trim().is_empty()
        {
            self.fail(format!("turn {} refused without words", plan.turn_id));
        }
    }

    /// The committed record of `turn_id` on `episode`, if any.
    async fn record(&self, episode: &str, turn_id: &str) -> Option<TurnRecord> {
        let turns = self
            .store
            .turns(&self.principal, episode, usize::MAX)
            .await
            .unwrap_or_else(|e| self.fail(format!("reading episode {episode}: {e}")));
        turns.into_iter().find(|t| t.turn_id == turn_id)
    }

    /// Every committed turn of `episode` is as first read, in order, none missing; new
    /// ones are remembered.
    async fn check_episode(&mut self, episode: &str) {
        let turns = self
            .store
            .turns(&self.principal, episode, usize::MAX)
            .await
            .unwrap_or_else(|e| self.fail(format!("reading episode {episode}: {e}")));
        for (i, turn) in turns.iter().enumerate() {
            if turn.seq != i as u64 + 1 {
                self.fail(format!("episode {episode}: turn {i} has seq {}", turn.seq));
            }
            match self.committed.get(&turn.turn_id) {
                Some((_, first)) if first != turn => self.fail(format!(
                    "committed turn {} changed:\n{first:?}\n{turn:?}",
                    turn.turn_id
                )),
                Some(_) => {}
                None => {
                    self.committed
                        .insert(turn.turn_id.clone(), (episode.to_owned(), turn.clone()));
                }
            }
        }
        let kept = self
            .committed
            .iter()
            .filter(|(_, (e, _))| e == episode)
            .count();
        if kept != turns.len() {
            self.fail(format!(
                "episode {episode} holds {} turns, {kept} were committed",
                turns.len()
            ));
        }
    }

    /// Who ran, but the orchestrators: the specialists, the planner's workers (by node)
    /// and the tools an orchestrator called itself.
    fn specialists_of(&self, ran: &[String]) -> BTreeSet<String> {
        ran.iter()
            .filter(|a| !matches!(a.as_str(), "orchestrator" | "planner"))
            .cloned()
            .collect()
    }

    /// One turn: an attempt under faults, then clean retries until it is committed.
    async fn turn(&mut self, i: usize) {
        let planned = self.rng.below(5) < 2;
        let episode = if self.episodes.is_empty() || self.rng.below(4) == 0 {
            None
        } else {
            Some(self.rng.pick(&self.episodes).clone())
        };
        let plan = Plan {
            planned,
            episode,
            turn_id: format!("t-{}-{i}", self.seed),
            message: MESSAGES[self.rng.below(MESSAGES.len())],
        };
        let mode = match self.rng.below(10) {
            0 => Mode::HangUpAfter(self.rng.below(12)),
            1 => Mode::CancelAfter(self.rng.below(12)),
            _ => Mode::ReadAll,
        };
        let armed = self.arm();
        let (seen, mut episode, ran) = self.attempt(&plan, mode).await;
        disarm();
        self.check_plain(&plan, &seen);
        let mut ran_all: BTreeSet<String> = self.specialists_of(&ran);
        let mut committing = None;
        if let Some(e) = &episode
            && self.record(e, &plan.turn_id).await.is_some()
        {
            committing = Some(ran.clone());
        }
        if let Seen::Ended(events) = &seen
            && events.iter().any(|e| {
                matches!(
                    e,
                    Event::Completed {
                        outcome: TurnOutcome::Answered,
                        ..
                    }
                )
            })
        {
            self.answered += 1;
            if committing.is_none() {
                self.fail(format!(
                    "turn {} was answered but not committed (faults {armed:?})",
                    plan.turn_id
                ));
            }
        }

        // Sent again, as a client would after an error: it runs, or replays what was
        // committed. A claim left behind must give way once its lease has run out.
        let mut past_lease = false;
        let mut tries = 0;
        while committing.is_none() {
            tries += 1;
            if tries > 3 {
                self.fail(format!(
                    "turn {} not committed after 3 clean tries (faults {armed:?})",
                    plan.turn_id
                ));
            }
            self.retried += 1;
            if past_lease {
                fail::cfg("clock.now", &format!("return({})", LEASE_MS + 1)).unwrap();
            }
            let (again, on, ran) = self.attempt(&plan, Mode::ReadAll).await;
            disarm();
            self.check_plain(&plan, &again);
            ran_all.extend(self.specialists_of(&ran));
            match &again {
                Seen::Refused(RejectionKind::Busy | RejectionKind::InFlight, _) if !past_lease => {
                    past_lease = true;
                    continue;
                }
                Seen::Refused(kind, message) => self.fail(format!(
                    "turn {} sent again was refused ({kind:?}: {message}); past its lease: {past_lease}; faults {armed:?}",
                    plan.turn_id
                )),
                _ => {}
            }
            if on.is_some() {
                episode = on;
            }
            let Some(e) = &episode else { continue };
            if self.record(e, &plan.turn_id).await.is_some() {
                committing = Some(ran);
            }
        }
        let Some(episode) = episode else {
            self.fail(format!("turn {} has no episode", plan.turn_id));
        };
        if !self.episodes.contains(&episode) {
            self.episodes.push(episode.clone());
        }
        self.check_episode(&episode).await;

        // The consulted record: only specialists that ran, and all that ran in the run
        // that committed (a resumed plan's earlier waves ran in an earlier attempt).
        let record = self.record(&episode, &plan.turn_id).await.unwrap();
        let consulted: BTreeSet<String> = record
            .consulted
            .iter()
            .map(|c| c.agent_id.clone())
            .collect();
        let committing = self.specialists_of(&committing.unwrap_or_default());
        if !consulted.is_subset(&ran_all) || !committing.is_subset(&consulted) {
            self.fail(format!(
                "turn {}: consulted {consulted:?}, ran {ran_all:?}, in the committing run {committing:?} (faults {armed:?}); planned {}; {record:?}",
                plan.turn_id, plan.planned
            ));
        }
        let panics = PANICS.load(Ordering::SeqCst) - self.panics_before;
        if panics > 0 {
            self.fail(format!(
                "{panics} panic(s) by turn {} (faults {armed:?})",
                plan.turn_id
            ));
        }
    }

    /// Counts, over a few clean turns on one episode (routed and planned, past the
    /// compaction threshold, their bodies read back), how often each point is passed: a
    /// point the workload never reaches would test nothing.
    async fn reach(&mut self, passed_by_large_bodies_only: bool) {
        let hits: Arc<Mutex<HashMap<&'static str, usize>>> = Arc::default();
        for point in POINTS.iter().chain(&["clock.now"]) {
            let hits = hits.clone();
            fail::cfg_callback(*point, move || {
                *hits.lock().unwrap().entry(point).or_default() += 1;
            })
            .unwrap();
        }
        let mut episode = None;
        for (n, message) in MESSAGES.iter().cycle().take(16).enumerate() {
            let plan = Plan {
                planned: n % 2 == 1,
                episode: episode.clone(),
                turn_id: format!("t-{}-reach-{n}", self.seed),
                message,
            };
            let (seen, on, _) = self.attempt(&plan, Mode::ReadAll).await;
            self.check_plain(&plan, &seen);
            episode = on;
        }
        let episode = episode.unwrap();
        for turn in self
            .store
            .turns(&self.principal, &episode, 100)
            .await
            .unwrap()
        {
            for key in &turn.body_keys {
                self.store
                    .body(&self.principal, &episode, key)
                    .await
                    .unwrap();
            }
        }
        // Compaction runs once the stream has ended: give it its moment.
        tokio::time::sleep(Duration::from_millis(500)).await;
        disarm();
        let hits = hits.lock().unwrap().clone();
        // A release follows only a turn that failed; the DynamoDB journal keeps small
        // bodies in the table, so its body store is passed by large ones only.
        let missed: Vec<&&str> = POINTS
            .iter()
            .filter(|p| !p.starts_with("store.release.") && !hits.contains_key(*p))
            .filter(|p| !(passed_by_large_bodies_only && p.starts_with("bodies.")))
            .collect();
        eprintln!("points passed by 16 clean turns: {hits:?}");
        if !missed.is_empty() {
            self.fail(format!("the workload never passes {missed:?}"));
        }
        self.episodes.push(episode);
    }

    /// After the faults: every episode as committed, and every specialist answers once
    /// the breakers' cool-down has passed.
    async fn finish(&mut self) {
        let episodes = self.episodes.clone();
        for episode in &episodes {
            self.check_episode(episode).await;
        }
        tokio::time::sleep(Duration::from_millis(COOLDOWN_MS * 2)).await;
        for (n, message) in MESSAGES.iter().enumerate() {
            for planned in [false, true] {
                let plan = Plan {
                    planned,
                    episode: None,
                    turn_id: format!("t-{}-clean-{n}-{planned}", self.seed),
                    message,
                };
                let (seen, _, _) = self.attempt(&plan, Mode::ReadAll).await;
                let Seen::Ended(events) = &seen else {
                    self.fail(format!("clean turn {}: {seen:?}", plan.turn_id));
                };
                let statuses: Vec<String> = events
                    .iter()
                    .filter_map(|e| match e {
                        Event::AgentsConsulted { agents, .. } => Some(
                            agents
                                .iter()
                                .filter(|c| !c.status.answered())
                                .map(|c| format!("{}: {}", c.agent_id, c.status.as_str()))
                                .collect::<Vec<_>>(),
                        ),
                        _ => None,
                    })
                    .flatten()
                    .collect();
                let answered = events.iter().any(|e| {
                    matches!(
                        e,
                        Event::Completed {
                            outcome: TurnOutcome::Answered,
                            ..
                        }
                    )
                });
                if !answered || !statuses.is_empty() {
                    self.fail(format!(
                        "after the faults, {:?} ({}) was not answered by every specialist: {statuses:?} {events:?}",
                        message,
                        if planned { "planned" } else { "routed" }
                    ));
                }
            }
        }
    }
}

fn seed() -> u64 {
    std::env::var("BATON_CHAOS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        })
}

fn turns() -> usize {
    std::env::var("BATON_CHAOS_TURNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000)
}

/// The shipped registry with a short breaker cool-down.
fn registry_copy(into: &Path) -> std::path::PathBuf {
    let copy = into.join("registry");
    copy_dir(&registry_dir(), &copy);
    for card in ["orchestrator.yaml", "planner.yaml"] {
        let path = copy.join("agents").join(card);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.contains("breaker_cooldown_ms: 30000"),
            "{card} changed"
        );
        std::fs::write(
            &path,
            text.replace(
                "breaker_cooldown_ms: 30000",
                &format!("breaker_cooldown_ms: {COOLDOWN_MS}"),
            ),
        )
        .unwrap();
    }
    copy
}

async fn run(journal: &str, store: Arc<dyn Store>, dir: &Path, bodies_inline: bool) {
    count_panics();
    let seed = seed();
    let turns = turns();
    eprintln!("chaos on the {journal}: seed {seed}, {turns} turns (BATON_CHAOS_SEED={seed})");
    let registry = registry_copy(dir);
    let mut chaos = Chaos::new(store, &registry, seed).await;
    chaos.reach(bodies_inline).await;
    for i in 0..turns {
        chaos.turn(i).await;
    }
    chaos.finish().await;
    eprintln!(
        "chaos on the {journal}: seed {seed}: {turns} turns, {} faults armed, {} answered at once, {} sent again, {} committed on {} episodes",
        chaos.faults,
        chaos.answered,
        chaos.retried,
        chaos.committed.len(),
        chaos.episodes.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_on_the_embedded_store() {
    let _one = ONE_AT_A_TIME.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let store = baton_local::embedded_store::EmbeddedStore::open(&dir.path().join("store"))
        .expect("opening the embedded store");
    run("embedded store", Arc::new(store), dir.path(), false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_on_dynamodb_and_s3() {
    let _one = ONE_AT_A_TIME.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let dynamodb = DynamoDbLocal::connect().await;
    let table = dynamodb.fresh_table_without_ttl().await;
    let s3 = InProcessS3::start();
    s3.create_bucket(BODIES_BUCKET).await;
    let store = baton_aws::journal::DynamoStore::new(
        aws_sdk_dynamodb::Client::from_conf(
            baton_aws::journal::dynamodb_config(dynamodb.sdk_config()).build(),
        ),
        aws_sdk_s3::Client::from_conf(s3.config_builder().build()),
        baton_aws::journal::JournalConfig::new(&table, BODIES_BUCKET),
    );
    run("DynamoDB Local + S3", Arc::new(store), dir.path(), true).await;
}
