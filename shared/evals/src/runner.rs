//! The eval runner: each case of a suite through the real engine, its history seeded into
//! a fresh episode, then what the turn did — read back from the journal's routing record —
//! judged against the case ([`crate::judge`]).
//!
//! Two modes, set when the runtime is built: `routing` (`RuntimeConfig::routing_only`: the
//! orchestrator decides, nobody is consulted — cheap) and `end-to-end` (the specialists and
//! their connectors run, and the answer is checked too). The runtime should be over a store
//! of its own (an in-memory one): every case writes an episode.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::{Case, CaseResult, Metrics, Observation, PastTurn, Repeated, Suite, judge, metrics};
use baton_core::Principal;
use baton_core::events::Event;
use baton_core::ports::store::{Claim, ClaimRequest, Commit, Store};
use baton_core::trace::{GuardName, ObligationMet, RoutingRecord};
use baton_core::turn::{AgentStatus, Segment, TurnOutcome, TurnRecord};
use futures::StreamExt;
use serde::Serialize;
use tokio::time::Instant;

use baton_runtime::{Runtime, TurnRequest};

/// Which part of a turn runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EvalMode {
    /// The orchestrator's decision only.
    Routing,
    /// The whole turn.
    EndToEnd,
}

/// A suite's run.
#[derive(Debug, Clone, Serialize)]
pub struct SuiteRun {
    /// The suite.
    pub suite: String,
    /// Its file.
    pub file: String,
    /// The mode.
    pub mode: EvalMode,
    /// Wall time of the whole run, ms.
    pub duration_ms: u64,
    /// Each case, in suite order.
    pub results: Vec<CaseResult>,
    /// The figures.
    pub metrics: Metrics,
    /// With repeated runs (`--repeat`): each case's stability over all of them; the
    /// results and figures above are the first run's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeated: Option<Repeated>,
}

/// Runs started in this process.
static RUNS: AtomicU64 = AtomicU64::new(0);

/// Who eval turns run as: this, and the case's episode (each case its own principal, so
/// that what one case sets up — an outage — touches no other).
const PRINCIPAL: &str = "eval";

/// Runs `suite` on `runtime` (built over `store`), at most `concurrency` cases at once.
pub async fn run_suite(
    runtime: &Runtime,
    store: &Arc<dyn Store>,
    suite: &Suite,
    concurrency: usize,
) -> SuiteRun {
    let mode = if runtime.config().routing_only {
        EvalMode::Routing
    } else {
        EvalMode::EndToEnd
    };
    let started = Instant::now();
    // Every case writes an episode: a run number keeps runs over one store apart.
    let run = RUNS.fetch_add(1, Ordering::Relaxed);
    let results: Vec<CaseResult> = futures::stream::iter(suite.cases.iter().enumerate())
        .map(|(i, case)| run_case(runtime, store, case, format!("ev-{run}-{i}")))
        // In suite order, at most `concurrency` at once.
        .buffered(concurrency.max(1))
        .collect()
        .await;
    let metrics = metrics(&suite.cases, &results, &specialists(runtime));
    SuiteRun {
        suite: suite.name.clone(),
        file: suite.file.clone(),
        mode,
        duration_ms: started.elapsed().as_millis() as u64,
        results,
        metrics,
        repeated: None,
    }
}

/// One case: its history committed to a new episode `episode`, then its turn.
pub async fn run_case(
    runtime: &Runtime,
    store: &Arc<dyn Store>,
    case: &Case,
    episode: String,
) -> CaseResult {
    let episode = episode.as_str();
    let principal = match Principal::new(&format!("{PRINCIPAL}-{episode}")) {
        Ok(p) => p,
        Err(e) => return CaseResult::errored(case, e.to_string()),
    };
    if let Err(e) = seed(store, &principal, episode, &case.history).await {
        return CaseResult::errored(case, format!("could not seed the history: {e}"));
    }
    if let Err(e) = remember_earlier(runtime, store, &principal, episode, &case.earlier).await {
        return CaseResult::errored(case, e);
    }
    let summary = if case.compact {
        match compact(runtime, store, &principal, episode).await {
            Ok(summary) => summary,
            Err(e) => return CaseResult::errored(case, e),
        }
    } else {
        None
    };
    let _down = crate::outage::Down::start(&principal, &case.unavailable);
    let started = Instant::now();
    if case.picture_bytes.len() != case.pictures.len() {
        return CaseResult::errored(case, "its pictures were not read with the suite");
    }
    let request = TurnRequest {
        episode_id: (!case.history.is_empty()).then(|| episode.to_owned()),
        turn_id: Some(format!("{episode}-case")),
        pictures: case.picture_bytes.clone(),
        ..TurnRequest::new(principal.clone(), case.turn.clone())
    };
    let stream = match runtime.run_turn(request).await {
        Ok(s) => s,
        Err(e) => return CaseResult::errored(case, e.message),
    };
    let episode_id = stream.episode_id.clone();
    let mut answer = String::new();
    let mut outcome = None;
    let mut events = stream;
    while let Some(e) = events.next().await {
        match e.event {
            Event::Text { text, .. } => answer.push_str(&text),
            Event::Completed { outcome: o, .. } => outcome = Some(o),
            _ => {}
        }
    }
    let latency_ms = started.elapsed().as_millis() as u64;
    if matches!(
        outcome,
        Some(TurnOutcome::Failed | TurnOutcome::Canceled) | None
    ) {
        return CaseResult::errored(case, "the turn failed (a model or store error)");
    }
    let record = match store.turns(&principal, &episode_id, 1).await {
        Ok(mut turns) => match turns.pop() {
            Some(r) => r,
            None => return CaseResult::errored(case, "the turn was not recorded"),
        },
        Err(e) => return CaseResult::errored(case, format!("could not read the turn: {e}")),
    };
    let end_to_end = !runtime.config().routing_only;
    let mut observed = observe(&record, end_to_end.then_some(answer), latency_ms);
    observed.summary = summary;
    if !case.expect.recalled.is_empty() {
        match runtime
            .memory()
            .search(&principal, &case.turn, &[], RECALL_AT)
            .await
        {
            Ok(found) => observed.recalled = found.into_iter().map(|f| f.memory.text).collect(),
            Err(e) => return CaseResult::errored(case, format!("could not search memories: {e}")),
        }
    }
    observed.failed = record
        .routing
        .outcomes
        .iter()
        .filter(|o| !o.status.answered())
        .map(|o| {
            let label = runtime
                .registry()
                .agent(&o.agent_id)
                .map_or_else(|| o.agent_id.clone(), |a| a.label.to_string());
            (o.agent_id.clone(), label)
        })
        .collect();
    // An outage the run could not make (a specialist that calls no tool through a
    // connector) is not a failure of the turn: the case could not be observed.
    if end_to_end
        && let Some(agent) = case.unavailable.iter().find(|a| {
            observed.consulted.contains(a) && !observed.failed.iter().any(|(id, _)| id == *a)
        })
    {
        return CaseResult::errored(
            case,
            format!(
                "{agent} could not be made unavailable: it answered without a failing tool call"
            ),
        );
    }
    judge(case, observed)
}

/// How many memories a search's top holds when recall is judged (recall@5).
const RECALL_AT: usize = 5;

/// Runs the case's earlier conversations as the same user, each in a new episode, and
/// extracts what each committed turn holds worth remembering (D-43), as a deployment does
/// after every turn.
async fn remember_earlier(
    runtime: &Runtime,
    store: &Arc<dyn Store>,
    principal: &Principal,
    episode: &str,
    earlier: &[Vec<String>],
) -> Result<(), String> {
    if earlier.is_empty() {
        return Ok(());
    }
    if !runtime.memory().kept() {
        return Err("this run keeps no memory across conversations".to_owned());
    }
    for (c, said) in earlier.iter().enumerate() {
        let mut episode_id: Option<String> = None;
        for (t, text) in said.iter().enumerate() {
            let request = TurnRequest {
                episode_id: episode_id.clone(),
                turn_id: Some(format!("{episode}-e{c}-{t}")),
                ..TurnRequest::new(principal.clone(), text.clone())
            };
            let stream = runtime.run_turn(request).await.map_err(|e| {
                format!("an earlier conversation's turn was refused: {}", e.message)
            })?;
            let id = stream.episode_id.clone();
            let _events: Vec<_> = stream.collect().await;
            let record = store
                .turns(principal, &id, 1)
                .await
                .map_err(|e| format!("could not read an earlier turn: {e}"))?
                .pop()
                .ok_or("an earlier turn was not recorded")?;
            runtime
                .memory()
                .extract(principal, &record)
                .await
                .map_err(|e| format!("could not extract memories: {e}"))?;
            episode_id = Some(id);
        }
    }
    Ok(())
}

/// Folds the seeded history into the episode's summary with the summarizer model, as a
/// compaction run would: the summary it wrote, or `None` when there was nothing to fold.
async fn compact(
    runtime: &Runtime,
    store: &Arc<dyn Store>,
    principal: &Principal,
    episode: &str,
) -> Result<Option<String>, String> {
    let report = runtime
        .compact_episode(principal, episode)
        .await
        .map_err(|e| format!("could not compact the history: {e}"))?;
    if report.outcome == baton_runtime::compaction::Outcome::Failed {
        return Err("the summarizer failed to compact the history".to_owned());
    }
    let meta = store
        .episode(principal, episode)
        .await
        .map_err(|e| format!("could not read the compacted episode: {e}"))?;
    Ok(meta.summary.map(|s| s.text))
}

/// A planner's waves as a case writes them: each node as its skills, joined by `+`.
fn plan_waves(plan: &baton_core::plan::PlanRecord) -> Vec<Vec<String>> {
    plan.waves()
        .iter()
        .map(|ids| {
            ids.iter()
                .filter_map(|id| plan.nodes.iter().find(|n| &n.id == id))
                .map(|n| n.skills.join("+"))
                .collect()
        })
        .collect()
}

/// What the turn did, from its record.
fn observe(record: &TurnRecord, answer: Option<String>, latency_ms: u64) -> Observation {
    let r: &RoutingRecord = &record.routing;
    let direct_line = r.direct_line.as_ref().map(|d| d.agent_id.clone());
    // A Direct Line turn is not routed: the specialist addressed is who was consulted.
    let consulted = match &direct_line {
        Some(agent) if r.calls.is_empty() => vec![agent.clone()],
        _ => r.calls.iter().map(|c| c.agent_id.clone()).collect(),
    };
    Observation {
        consulted,
        direct_line,
        obligations_met: r.obligations.iter().map(|o| o.agent_id.clone()).collect(),
        masked: record.privacy.total,
        summary: None,
        failed: Vec::new(),
        plan: r.plan.as_ref().map(plan_waves).unwrap_or_default(),
        args: r
            .calls
            .iter()
            .map(|c| (c.agent_id.clone(), c.args.value()))
            .collect(),
        fastpath: r.calls.is_empty() && r.direct_line.is_none(),
        answer,
        failsafe_reasks: r
            .guards
            .iter()
            .filter(|g| g.guard == GuardName::IntentCount)
            .count() as u32,
        dropped_calls: r.dropped.len() as u32,
        obligations_forced: r
            .obligations
            .iter()
            .filter(|o| {
                matches!(
                    o.met,
                    ObligationMet::AfterReminder | ObligationMet::ByRuntime
                )
            })
            .count() as u32,
        latency_ms,
        tokens: record
            .usage
            .iter()
            .map(|u| u.tokens.input + u.tokens.output + u.tokens.cache_read + u.tokens.cache_write)
            .sum(),
        cost_usd: record.cost_usd,
        recalled: Vec::new(),
    }
}

/// Commits the case's conversation so far as turns of a new episode.
async fn seed(
    store: &Arc<dyn Store>,
    principal: &Principal,
    episode: &str,
    history: &[PastTurn],
) -> Result<(), String> {
    for (i, past) in history.iter().enumerate() {
        let turn_id = format!("{episode}-h{i}");
        let claim = ClaimRequest {
            principal: principal.clone(),
            episode_id: (i > 0).then(|| episode.to_owned()),
            new_episode_id: episode.to_owned(),
            turn_id: turn_id.clone(),
            now_ms: 0,
            lease_ms: 60_000,
            fingerprint: String::new(),
        };
        let meta = match store.claim(claim).await.map_err(|e| e.to_string())? {
            Claim::Claimed(meta) => meta,
            other => return Err(format!("the episode could not be claimed: {other:?}")),
        };
        let record = TurnRecord {
            episode_id: episode.to_owned(),
            seq: meta.version + 1,
            turn_id,
            created_ms: 0,
            user_text: past.user.clone(),
            narration: past.answer.clone(),
            segments: past
                .consulted
                .iter()
                .map(|agent| Segment {
                    agent_id: agent.clone(),
                    query: past.user.clone(),
                    text: past.said.get(agent).unwrap_or(&past.answer).clone(),
                    status: AgentStatus::Ok,
                })
                .collect(),
            consulted: Vec::new(),
            routing: RoutingRecord::default(),
            usage: Vec::new(),
            cost_usd: 0.0,
            body_keys: Vec::new(),
            outcome: TurnOutcome::Answered,
            direct: None,
            privacy: Default::default(),
            fingerprint: String::new(),
            message_id: None,
            pictures: Vec::new(),
        };
        store
            .commit(&Commit {
                principal: principal.clone(),
                expected_version: meta.version,
                record,
                bodies: Vec::new(),
                pictures: Vec::new(),
                state: meta.state,
                compaction_due: false,
            })
            .await
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// A share as a percentage with one decimal, as the reports print it.
pub fn percent(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

pub use baton_core::cost::display_usd as money;

/// The entry orchestrator's specialists.
pub fn specialists(runtime: &Runtime) -> BTreeSet<String> {
    runtime
        .entry()
        .orchestration
        .as_ref()
        .map(|o| o.sub_agents.iter().map(|s| s.to_string()).collect())
        .unwrap_or_default()
}
