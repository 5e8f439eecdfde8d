//! What every task of one turn shares: identity, inherited context, output, trace, usage
//! and budgets.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use baton_core::Principal;
use baton_core::cost::cost_usd;
use baton_core::directive::DirectMode;
use baton_core::memory::EpisodeSummary;
use baton_core::ports::model::TokenUsage;
use baton_core::ports::store::Body;
use baton_core::prompt::DynamicContext;
use baton_core::registry::{Agent, ModelSpec, TurnLimits};
use baton_core::trace::RoutingRecord;
use baton_core::turn::{AgentStatus, ModelUsage, TurnRecord};

use super::output::Output;
use crate::request::TurnRequest;
use crate::services::Inner;

/// Calls and tokens of one model within a turn.
type ModelTally = (Arc<ModelSpec>, u32, TokenUsage);

/// The turn-wide context handed to every sub-agent (D-17, D-29).
pub(crate) struct TurnCtx {
    pub(crate) inner: Arc<Inner>,
    pub(crate) orchestrator: Arc<Agent>,
    pub(crate) principal: Principal,
    pub(crate) episode_id: Arc<str>,
    pub(crate) turn_id: Arc<str>,
    /// The turn id that tool calls' idempotency keys derive from (D-36): the turn's own,
    /// or, when it resumes a wait, the id that the wait's reply resumes under, whatever
    /// id the face gave it, so an act run again carries the same key.
    pub(crate) acts_under: Option<Arc<str>>,
    pub(crate) user_text: String,
    pub(crate) locale: Option<String>,
    pub(crate) location: Option<String>,
    pub(crate) date: String,
    /// What compaction wrote for the episode; `history` holds only the turns after it.
    pub(crate) summary: Option<EpisodeSummary>,
    pub(crate) history: Vec<TurnRecord>,
    pub(crate) out: Output,
    pub(crate) limits: TurnLimits,
    pub(crate) trace: Mutex<RoutingRecord>,
    /// The request's Direct Line mode, overriding the card's.
    pub(crate) direct_mode: Option<DirectMode>,
    /// Specialists the request says this turn must consult.
    pub(crate) must_consult: Vec<String>,
    /// When the turn started running (for its latency metric).
    pub(crate) started: tokio::time::Instant,
    /// What the request asked, hashed (kept with the record for idempotency checks).
    pub(crate) fingerprint: String,
    /// The user's reply this turn resumes with (D-36).
    pub(crate) resume: Option<baton_core::interruption::Reply>,
    /// Whether the user's message may itself answer what the episode waits on.
    pub(crate) reply_in_words: bool,
    /// The client's own id for the message, kept in the record.
    pub(crate) message_id: Option<String>,
    /// The face the turn came through (for the record of an answer).
    pub(crate) face: &'static str,
    /// Whether a sub-agent may stop for the user: a routed turn (not a Direct Line one, not
    /// a planned one) can wait; elsewhere a call that needs approval is held back.
    pub(crate) pausable: bool,
    /// Fires when the turn's caller stops it (`Runtime::cancel_turn`).
    pub(crate) cancel: tokio_util::sync::CancellationToken,
    /// A turn uses one or two models: a short list beats a map.
    usage: Mutex<Vec<ModelTally>>,
    bodies: Mutex<Vec<Body>>,
    /// Tool calls started (announced with `tool_call_start`), by agent: what the consulted
    /// record counts (D-20), also for a call a timeout cut short.
    started_calls: Mutex<Vec<(Arc<str>, u32)>>,
    /// Every sub-agent this run started, and its result once it ended: what a turn cut
    /// by a cancel or its deadline records as consulted (D-20), since the work that held
    /// the results is dropped with it.
    started_jobs: Mutex<Vec<StartedJob>>,
    tool_calls: AtomicU32,
    /// Sub-agent runs started in this turn: each gets the next number, which its tool calls'
    /// records carry (the audit trail files each call under its execution).
    runs: AtomicU32,
    /// Tool calls the turn had taken before it waited for the user (D-15): they count
    /// against its budget, not again against the episode's window.
    tool_calls_carried: u32,
    model_calls: AtomicU32,
    /// Model and tool calls in the episode's sliding window (D-15): the earlier turns'
    /// when this one started, plus each call this turn has begun.
    window_calls: AtomicU32,
}

impl TurnCtx {
    /// The context of the turn `request` asks for (its text already checked and trimmed).
    pub(crate) fn new(
        inner: Arc<Inner>,
        request: TurnRequest,
        episode_id: Arc<str>,
        turn_id: Arc<str>,
        out: Output,
    ) -> Self {
        let orchestrator = inner.entry.clone();
        let orch = orchestrator.orchestration.as_ref();
        let limits = orch.map(|o| o.limits).unwrap_or_default();
        let mut trace = RoutingRecord::default();
        if let Some(o) = orch {
            trace.cap = o.fanout_cap;
            trace.composition = Some(o.composition);
        }
        let date = baton_core::prompt::civil_date(inner.clock.now_ms());
        TurnCtx {
            inner,
            orchestrator,
            principal: request.principal,
            episode_id,
            turn_id,
            acts_under: None,
            user_text: request.text,
            locale: request.locale,
            location: request.location,
            date,
            summary: None,
            history: Vec::new(),
            out,
            limits,
            trace: Mutex::new(trace),
            direct_mode: request.direct_line_mode,
            must_consult: request.must_consult,
            resume: request.resume.map(|r| r.reply),
            reply_in_words: request.reply_in_words,
            message_id: request.message_id,
            face: request.face,
            pausable: false,
            started: tokio::time::Instant::now(),
            fingerprint: String::new(),
            cancel: tokio_util::sync::CancellationToken::new(),
            usage: Mutex::new(Vec::new()),
            bodies: Mutex::new(Vec::new()),
            started_calls: Mutex::new(Vec::new()),
            started_jobs: Mutex::new(Vec::new()),
            tool_calls: AtomicU32::new(0),
            runs: AtomicU32::new(0),
            tool_calls_carried: 0,
            model_calls: AtomicU32::new(0),
            window_calls: AtomicU32::new(0),
        }
    }

    /// The per-request dynamic context (after the cache point) of the orchestrator's
    /// requests: with the conversation's summary.
    pub(crate) fn dynamic(&self) -> DynamicContext<'_> {
        DynamicContext {
            summary: self.summary.as_ref().map(|s| s.text.as_str()),
            ..self.dynamic_for(None)
        }
    }

    /// The dynamic context of a specialist's requests: with its own summary only (D-17).
    pub(crate) fn dynamic_for(&self, agent_id: Option<&str>) -> DynamicContext<'_> {
        DynamicContext {
            date: &self.date,
            locale: self.locale.as_deref(),
            location: self.location.as_deref(),
            user_id: self.principal.as_str(),
            summary: agent_id
                .and_then(|id| self.summary.as_ref()?.agents.get(id))
                .map(String::as_str),
        }
    }

    /// Edits the routing record.
    pub(crate) fn trace<R>(&self, f: impl FnOnce(&mut RoutingRecord) -> R) -> Option<R> {
        self.trace.lock().ok().map(|mut t| f(&mut t))
    }

    /// Adds one model call's usage.
    pub(crate) fn add_usage(&self, model: &Arc<ModelSpec>, usage: &TokenUsage) {
        self.model_calls.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut u) = self.usage.lock() {
            match u.iter_mut().find(|t| t.0.key == model.key) {
                Some(tally) => {
                    tally.1 += 1;
                    tally.2.add(usage);
                }
                None => u.push((model.clone(), 1, *usage)),
            }
        }
    }

    /// Usage by model with cost, and the total cost (D-32).
    pub(crate) fn usage(&self) -> (Vec<ModelUsage>, f64) {
        let Ok(u) = self.usage.lock() else {
            return (Vec::new(), 0.0);
        };
        let mut models: Vec<ModelUsage> = u
            .iter()
            .map(|(spec, calls, tokens)| ModelUsage {
                model: spec.key.to_string(),
                calls: *calls,
                tokens: *tokens,
                cost_usd: round_usd(cost_usd(tokens, &spec.prices)),
            })
            .collect();
        models.sort_by(|a, b| a.model.cmp(&b.model));
        let total = round_usd(models.iter().map(|m| m.cost_usd).sum());
        (models, total)
    }

    /// The turn id tool calls' idempotency keys derive from.
    pub(crate) fn acts_under(&self) -> &str {
        self.acts_under.as_deref().unwrap_or(&self.turn_id)
    }

    /// Goes on from the budgets the waiting turn had spent (D-15, D-36).
    pub(crate) fn restore_spent(&mut self, spent: baton_core::interruption::TurnSpent) {
        self.tool_calls_carried = spent.tool_calls;
    }

    /// What the turn has spent of its own budgets, with `iterations` of the orchestrator.
    pub(crate) fn spent(&self, iterations: u32) -> baton_core::interruption::TurnSpent {
        baton_core::interruption::TurnSpent {
            tool_calls: self.tool_calls_carried + self.tool_calls.load(Ordering::Acquire),
            iterations,
        }
    }

    /// Takes one tool call from the turn budget (D-15); false when it is spent.
    pub(crate) fn take_tool_call(&self) -> bool {
        let max = self
            .limits
            .max_tool_calls
            .saturating_sub(self.tool_calls_carried);
        self.tool_calls
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .is_ok()
    }

    /// Sets the calls the episode made in its window before this turn.
    pub(crate) fn set_window_calls(&self, before: u32) {
        self.window_calls.store(before, Ordering::Release);
    }

    /// Takes one model or tool call from the episode's sliding window (D-15): false when
    /// it already holds `episode_max_calls`, so a turn that starts near the end of it
    /// cannot run past it. Recorded as the turn's limit.
    pub(crate) fn take_window_call(&self) -> bool {
        let max = self.limits.episode_max_calls;
        let ok = self
            .window_calls
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .is_ok();
        if !ok {
            self.trace(|t| {
                t.limit
                    .get_or_insert(baton_core::trace::LimitHit::EpisodeRate);
            });
        }
        ok
    }

    /// Whether the episode's window is spent.
    pub(crate) fn window_spent(&self) -> bool {
        self.window_calls.load(Ordering::Acquire) >= self.limits.episode_max_calls
    }

    /// Whether the turn's tool-call budget is spent.
    pub(crate) fn tool_calls_spent(&self) -> bool {
        self.tool_calls_carried + self.tool_calls.load(Ordering::Acquire)
            >= self.limits.max_tool_calls
    }

    /// The number of a sub-agent run starting now, unique in the turn (from 1).
    pub(crate) fn next_run(&self) -> u32 {
        self.runs.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// Notes that `agent` started a tool call.
    pub(crate) fn call_started(&self, agent: &Arc<str>) {
        let Ok(mut started) = self.started_calls.lock() else {
            return;
        };
        match started.iter_mut().find(|(a, _)| a == agent) {
            Some((_, n)) => *n += 1,
            None => started.push((agent.clone(), 1)),
        }
    }

    /// The tool calls `agent` has started in this turn.
    pub(crate) fn calls_started(&self, agent: &str) -> u32 {
        self.started_calls
            .lock()
            .ok()
            .and_then(|s| s.iter().find(|(a, _)| &**a == agent).map(|(_, n)| *n))
            .unwrap_or(0)
    }

    /// Notes that a sub-agent's job started now.
    pub(crate) fn job_started(
        &self,
        agent: &Arc<Agent>,
        call_id: &str,
        query: &str,
        started_ms: u64,
    ) {
        if let Ok(mut jobs) = self.started_jobs.lock() {
            jobs.push(StartedJob {
                agent: agent.clone(),
                call_id: call_id.to_owned(),
                query: query.to_owned(),
                started: tokio::time::Instant::now(),
                started_ms,
                ended: None,
            });
        }
    }

    /// Notes how a started job ended.
    pub(crate) fn job_ended(&self, agent: &str, call_id: &str, ended: JobEnd) {
        if let Ok(mut jobs) = self.started_jobs.lock()
            && let Some(job) = jobs
                .iter_mut()
                .rev()
                .find(|j| j.ended.is_none() && j.call_id == call_id && &*j.agent.id == agent)
        {
            job.ended = Some(ended);
        }
    }

    /// Takes the jobs this run started, each with how it ended, or, for one still
    /// running, as `unfinished` with its time and tool calls so far.
    pub(crate) fn take_started_jobs(&self, unfinished: AgentStatus) -> Vec<(StartedJob, JobEnd)> {
        let jobs = match self.started_jobs.lock() {
            Ok(mut jobs) => std::mem::take(&mut *jobs),
            Err(_) => return Vec::new(),
        };
        jobs.into_iter()
            .map(|j| {
                let end = j.ended.unwrap_or(JobEnd {
                    status: unfinished,
                    tool_calls: self.calls_started(&j.agent.id),
                    duration_ms: j.started.elapsed().as_millis() as u64,
                    refused: false,
                });
                (j, end)
            })
            .collect()
    }

    /// Model and tool calls made so far (for the episode's sliding window).
    pub(crate) fn calls_made(&self) -> u32 {
        self.tool_calls.load(Ordering::Relaxed) + self.model_calls.load(Ordering::Relaxed)
    }

    /// Keeps a body (tool message) to store apart from the turn record (D-19). A model
    /// may reuse a tool-use id within a turn; the key then gets a suffix, so that no body
    /// is lost and the commit does not refuse a key used twice.
    pub(crate) fn add_body(&self, mut body: Body) {
        if let Ok(mut b) = self.bodies.lock() {
            let taken = |key: &str| b.iter().any(|other| other.key == key);
            if taken(&body.key) {
                let base = body.key.clone();
                let mut n = 2;
                while taken(&format!("{base}~{n}")) {
                    n += 1;
                }
                body.key = format!("{base}~{n}");
            }
            b.push(body);
        }
    }

    /// The bodies kept so far.
    pub(crate) fn take_bodies(&self) -> Vec<Body> {
        self.bodies
            .lock()
            .map(|mut b| std::mem::take(&mut *b))
            .unwrap_or_default()
    }

    /// The label of a card.
    pub(crate) fn label_of(&self, agent_id: &str) -> String {
        self.inner
            .registry
            .agent(agent_id)
            .map(|a| a.label.to_string())
            .unwrap_or_else(|| agent_id.to_owned())
    }
}

/// Cost to a billionth of a dollar: enough for tokens, free of float noise in events.
/// Rounded to a billionth of a dollar. No cost is `0`, never `-0` (an empty float sum is
/// `-0.0`, which JSON would print as such).
fn round_usd(usd: f64) -> f64 {
    let rounded = (usd * 1e9).round() / 1e9;
    if rounded == 0.0 { 0.0 } else { rounded }
}

/// A sub-agent's job as this run started it (see `TurnCtx::started_jobs`).
#[derive(Debug)]
pub(crate) struct StartedJob {
    pub(crate) agent: Arc<Agent>,
    pub(crate) call_id: String,
    pub(crate) query: String,
    started: tokio::time::Instant,
    pub(crate) started_ms: u64,
    ended: Option<JobEnd>,
}

/// How a started job ended, as the consulted record tells it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct JobEnd {
    pub(crate) status: AgentStatus,
    pub(crate) tool_calls: u32,
    pub(crate) duration_ms: u64,
    pub(crate) refused: bool,
}
