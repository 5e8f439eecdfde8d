//! The turn driver (DESIGN §3): history, routing, fan-out, composition, the consulted
//! record, the journal commit, usage and completion — in that order.

use std::sync::Arc;
use std::time::Duration;

use baton_core::consulted::footer;
use baton_core::events::{Event, SOURCE_ORCHESTRATOR};
use baton_core::message::Message;
use baton_core::plan::PendingPlan;
use baton_core::ports::metrics::{
    CALLS_DROPPED_TOTAL, DIRECT_LINE_TURNS_TOTAL, GUARD_FIRINGS_TOTAL, INTENT_COUNT,
    INTERVENTIONS_TOTAL, MODEL_RETRIES_TOTAL, MODEL_TOKENS_TOTAL, PRIVACY_MASKED_TOTAL,
    STATUS_EVENTS_PER_TURN, TURN_COST_USD, TURN_LATENCY_MS, TURNS_TOTAL,
};
use baton_core::ports::store::{Commit, EpisodeMeta, StoreError};
use baton_core::privacy::PrivacyReceipt;
use baton_core::registry::Composition;
use baton_core::trace::{
    AgentOutcome, AskedCall, DropReason, GuardName, InterventionKind, LimitHit,
};
use baton_core::turn::{
    AgentStatus, ConsultedAgent, DirectExchange, EpisodeState, ModelUsage, PendingCall, Segment,
    TurnOutcome, TurnRecord,
};

use super::compose;
use super::context::TurnCtx;
use super::direct_line::{self, Decision};
use super::dispatch::dispatch;
use super::live_slot::LiveSlot;
use super::memory;
use super::obligations;
use super::planner;
use super::route::{self, Plan};
use super::subagent::{AgentJob, AgentResult, TextMode};

pub(super) const TROUBLE: &str =
    "I'm having trouble answering right now. Please try again in a moment.";
const TOO_LONG: &str = "This is taking too long, so I stopped. Please try again in a moment.";
const COMMIT_ATTEMPTS: usize = 3;
const PAUSE: &str = "We've done a lot in the last few minutes, so I'm pausing for a moment. Ask again shortly and I'll continue.";

/// Runs a claimed turn to its end. Never panics; every failure ends in plain words.
pub(crate) async fn run(mut ctx: TurnCtx, meta: EpisodeMeta) {
    ctx.out.emit(Event::Thinking {}).await;
    ctx.out
        .emit(Event::ResponseId {
            response_id: ctx.turn_id.to_string(),
            episode_id: ctx.episode_id.to_string(),
        })
        .await;

    let store = ctx.inner.store.clone();
    if let Err(e) = memory::load(&mut ctx, &meta).await {
        tracing::error!(turn_id = %ctx.turn_id, error = %e, "could not load the episode's history");
        ctx.out
            .emit(Event::Error {
                message: "Conversation storage is unavailable right now; please try again shortly."
                    .into(),
            })
            .await;
        let _ = store.release(&ctx.episode_id, &ctx.turn_id).await;
        ctx.out.complete(TurnOutcome::Failed).await;
        return;
    }
    let mut state = meta.state.clone();
    let now = ctx.inner.clock.now_ms();

    let mut work = Work::default();
    let used = state.calls_in_window(now, ctx.limits.episode_window_ms);
    ctx.set_window_calls(used);
    if ctx.window_spent() {
        // D-15: the episode's sliding window is spent; say so and offer to go on later.
        ctx.trace(|t| t.limit = Some(LimitHit::EpisodeRate));
        pause(&ctx, &mut work).await;
        work.pending = std::mem::take(&mut state.pending);
        work.pending_plan = state.pending_plan.take();
    } else {
        // D-21: the user's own text, and nothing else, may hold a directive.
        let decision = direct_line::decide(&ctx, &mut state);
        let previous = std::mem::take(&mut state.pending);
        let previous_plan = state.pending_plan.take();
        let planner = ctx
            .orchestrator
            .orchestration
            .as_ref()
            .and_then(|o| o.mode.planner())
            .cloned();
        // One deadline bounds the whole turn, retries included; the lease outlives it.
        let deadline = Duration::from_millis(ctx.inner.config.turn_timeout_ms);
        let body = async {
            match decision {
                Decision::Route { unescaped } => {
                    if let Some(text) = unescaped {
                        ctx.user_text = text;
                    }
                    match &planner {
                        Some(planner) => {
                            planner::orchestrate(&ctx, planner, previous_plan, &mut work).await
                        }
                        None => orchestrate(&ctx, &previous, &mut work).await,
                    }
                }
                Decision::Direct(turn) => {
                    // The work a limit stopped waits for the next routed turn.
                    work.pending = previous;
                    work.pending_plan = previous_plan;
                    let done = direct_line::run(&ctx, turn).await;
                    work.jobs = done.jobs;
                    work.results = done.results;
                    work.direct = Some(done.exchange);
                }
                Decision::Reply { text, indicator } => {
                    work.pending = previous;
                    work.pending_plan = previous_plan;
                    direct_line::reply(&ctx, &text, indicator).await;
                }
            }
        };
        if tokio::time::timeout(deadline, body).await.is_err() {
            tracing::warn!(turn_id = %ctx.turn_id, "turn deadline reached");
            work.outcome = TurnOutcome::Failed;
            work.error = Some(TOO_LONG.into());
        }
    }
    finish(&ctx, meta, state, work).await;
}

/// The episode's window of calls is spent (D-15): the turn says so in plain words and
/// ends as limited; nothing it held is lost.
async fn pause(ctx: &TurnCtx, work: &mut Work) {
    ctx.out.paragraph().await;
    ctx.out.text(SOURCE_ORCHESTRATOR, PAUSE).await;
    work.outcome = TurnOutcome::Limited;
}

/// What the turn did, gathered for the record.
pub(super) struct Work {
    pub(super) jobs: Vec<AgentJob>,
    pub(super) direct: Option<DirectExchange>,
    pub(super) results: Vec<AgentResult>,
    pub(super) pending: Vec<PendingCall>,
    /// A planner's nodes a limit stopped (D-16).
    pub(super) pending_plan: Option<Box<PendingPlan>>,
    pub(super) outcome: TurnOutcome,
    pub(super) error: Option<String>,
}

impl Default for Work {
    fn default() -> Self {
        Work {
            jobs: Vec::new(),
            direct: None,
            results: Vec::new(),
            pending: Vec::new(),
            pending_plan: None,
            outcome: TurnOutcome::Answered,
            error: None,
        }
    }
}

async fn orchestrate(ctx: &TurnCtx, previous: &[PendingCall], work: &mut Work) {
    let mut iterations = 0;
    // `routed`: whether the orchestrator made the plan (and so can be reminded).
    let (mut plan, routed) = if !previous.is_empty() && route::is_continue(&ctx.user_text) {
        (route::resume(ctx, previous), true)
    } else {
        match route::route(ctx, &mut iterations).await {
            Ok(plan) => (plan, true),
            Err(e) if !obligations::due(ctx).is_empty() => {
                // D-22 holds even when the orchestrator cannot route: the specialists this
                // turn must consult are asked directly, and the answer is composed from them.
                tracing::error!(turn_id = %ctx.turn_id, error = %e, "routing call failed; consulting the turn's obligations directly");
                (Plan::default(), false)
            }
            Err(_) if ctx.window_spent() => {
                pause(ctx, work).await;
                return;
            }
            Err(e) => {
                tracing::error!(turn_id = %ctx.turn_id, error = %e, "routing call failed");
                work.outcome = TurnOutcome::Failed;
                work.error = Some(TROUBLE.into());
                return;
            }
        }
    };
    // D-22: whatever the orchestrator chose, the turn's obligations are in the plan. Once
    // per turn: a second pass would count the runtime's own consultation as the model's.
    obligations::enforce(ctx, &mut plan, &mut iterations, routed).await;
    let Plan {
        jobs,
        refused,
        text: preamble,
        fastpath,
        pending,
    } = plan;
    work.pending = pending;
    ctx.trace(|t| {
        t.calls = jobs
            .iter()
            .map(|j| AskedCall {
                agent_id: j.agent.id.to_string(),
                args: j.executed_args(jobs.len()),
            })
            .collect();
    });
    if fastpath || ctx.inner.config.routing_only {
        // Routing only (evals): the decision is recorded; nobody is consulted.
        return;
    }
    let composition = ctx
        .orchestrator
        .orchestration
        .as_ref()
        .map(|o| o.composition)
        .unwrap_or_default();
    let mode = match composition {
        Composition::Passthrough if jobs.len() == 1 => TextMode::Live,
        Composition::Direct | Composition::DirectThenCompose => TextMode::Slot(Arc::new(
            LiveSlot::new(Duration::from_millis(ctx.inner.config.flush_pacing_ms)),
        )),
        _ => TextMode::Collect,
    };
    ctx.out.paragraph().await;
    let results = dispatch(ctx, &jobs, &mode).await;
    let composes =
        matches!(mode, TextMode::Collect) || composition == Composition::DirectThenCompose;
    if composes {
        // After streamed work, the composed answer starts a paragraph of its own.
        ctx.out.paragraph().await;
        let mut messages = route::conversation(ctx);
        messages.extend(compose::round_messages(
            &preamble, &jobs, &results, &refused,
        ));
        work.jobs = jobs;
        work.results = results;
        compose_rounds(ctx, messages, &mut iterations, work).await;
    } else {
        compose::acknowledge_failures(ctx, &jobs, &results).await;
        work.jobs = jobs;
        work.results = results;
    }
}

/// Mediated composition, with further rounds while the orchestrator keeps calling
/// sub-agents, bounded by the orchestrator's iteration limit (D-15).
async fn compose_rounds(
    ctx: &TurnCtx,
    mut messages: Vec<Message>,
    iterations: &mut u32,
    work: &mut Work,
) {
    loop {
        if *iterations >= ctx.limits.max_iterations {
            ctx.trace(|t| {
                t.limit.get_or_insert(LimitHit::OrchestratorIterations);
            });
            compose::template(ctx, &work.jobs, &work.results).await;
            return;
        }
        *iterations += 1;
        let reply = match compose::mediated(ctx, messages.clone()).await {
            Ok(reply) => reply,
            Err(e) => {
                tracing::warn!(turn_id = %ctx.turn_id, error = %e, "composition call failed; composing from the answers");
                compose::template(ctx, &work.jobs, &work.results).await;
                return;
            }
        };
        if reply.calls.is_empty() {
            if !reply.has_text {
                compose::template(ctx, &work.jobs, &work.results).await;
            }
            return;
        }
        // The orchestrator wants more: screen the calls as for routing, within the limits.
        let dispatched = work.jobs.len() as u32;
        let room = ctx.limits.max_subagents.saturating_sub(dispatched) as usize;
        let (jobs, refused, over) = route::follow_up(ctx, reply.calls, room);
        for p in over {
            work.pending.push(p);
        }
        if jobs.is_empty() {
            compose::template(ctx, &work.jobs, &work.results).await;
            return;
        }
        ctx.out.paragraph().await;
        let results = dispatch(ctx, &jobs, &TextMode::Collect).await;
        messages.extend(compose::round_messages(
            &reply.text,
            &jobs,
            &results,
            &refused,
        ));
        work.jobs.extend(jobs);
        work.results.extend(results);
    }
}

async fn finish(ctx: &TurnCtx, meta: EpisodeMeta, mut state: EpisodeState, mut work: Work) {
    let limit = ctx.trace(|t| t.limit).flatten();
    if limit == Some(LimitHit::EpisodeRate) && work.outcome != TurnOutcome::Limited {
        // The window ran out mid-turn: the work left needs time, not a "yes".
        pause(ctx, &mut work).await;
    } else if let Some(why) = &limit
        && work.outcome != TurnOutcome::Limited
    {
        let done: Vec<(String, AgentStatus)> = work
            .jobs
            .iter()
            .zip(&work.results)
            .map(|(j, r)| (j.agent.label.to_string(), r.status))
            .collect();
        let not_started: Vec<String> = work
            .pending
            .iter()
            .map(|p| ctx.label_of(&p.agent_id))
            .chain(
                work.pending_plan
                    .iter()
                    .flat_map(|p| p.nodes.iter().map(|n| n.id.clone())),
            )
            .collect();
        compose::limit_note(ctx, &done, &not_started, limit_words(*why)).await;
        work.outcome = TurnOutcome::Limited;
    }
    if let Some(message) = &work.error {
        ctx.out
            .emit(Event::Error {
                message: message.clone(),
            })
            .await;
    }

    let consulted = consulted_record(&work);
    record_outcomes(ctx, &work);
    ctx.out.flush_all().await;
    ctx.out
        .emit(Event::AgentsConsulted {
            footer: footer(&consulted),
            agents: consulted.clone(),
        })
        .await;

    let (usage, cost) = ctx.usage();
    let now = ctx.inner.clock.now_ms();
    state.record_calls(now, ctx.limits.episode_window_ms, ctx.calls_made());
    state.pending = std::mem::take(&mut work.pending);
    state.pending_plan = work.pending_plan.take();
    // Taken, not copied: an answer of megabytes is held once while it is saved.
    let mut narration = ctx.out.take_narration();
    let end = narration.trim_end().len();
    narration.truncate(end);
    let start = narration.len() - narration.trim_start().len();
    narration.drain(..start);
    if let Some(message) = &work.error {
        narration = message.clone();
    }
    let routing = ctx.trace(|t| t.clone()).unwrap_or_default();
    tracing::info!(
        target: "baton::routing",
        turn_id = %ctx.turn_id,
        episode_id = %ctx.episode_id,
        routing = %serde_json::to_string(&routing).unwrap_or_default(),
        "routing record"
    );
    let bodies = ctx.take_bodies();
    // Everything the user will see of the answer has been sent: the receipt is final.
    let privacy = ctx.out.receipt().await;
    let outcome = work.outcome;
    // The turn's working data goes into the record by value: nothing is held twice while
    // the commit waits for the store.
    let segments = work
        .jobs
        .into_iter()
        .zip(work.results)
        .map(|(j, r)| Segment {
            agent_id: j.agent.id.to_string(),
            query: j.query,
            // The journal keeps what may be shown, never more (D-23).
            text: ctx.out.mask_stored(&r.text),
            status: r.status,
        })
        .collect();
    let compaction_due = memory::due_after(ctx, meta.version + 1, &ctx.user_text, &narration);
    // Boxed: the turn's future keeps room for its largest step, so the record lives on the
    // heap only while it is being saved.
    let mut commit = Box::new(Commit {
        principal: ctx.principal.clone(),
        expected_version: meta.version,
        record: TurnRecord {
            episode_id: ctx.episode_id.to_string(),
            seq: meta.version + 1,
            turn_id: ctx.turn_id.to_string(),
            created_ms: now,
            user_text: ctx.user_text.clone(),
            narration,
            segments,
            consulted,
            routing,
            usage: usage.clone(),
            cost_usd: cost,
            body_keys: bodies.iter().map(|b| b.key.clone()).collect(),
            outcome,
            direct: work.direct.take(),
            privacy: privacy.clone(),
            fingerprint: ctx.fingerprint.clone(),
        },
        bodies,
        state,
        compaction_due,
    });
    let saved = commit_with_retry(ctx, &mut commit).await;
    let compact = saved && commit.compaction_due && ctx.inner.config.compact_after_turn;
    drop(commit);
    // A turn that did not commit is never reported as answered. Its claim is released
    // with the turn id still bound to this episode: the client, told this episode, can
    // send the same turn again and it runs here.
    let outcome = if saved { outcome } else { TurnOutcome::Failed };
    if !saved {
        let _ = ctx.inner.store.release(&ctx.episode_id, &ctx.turn_id).await;
        ctx.out
            .emit(Event::Error { message: "I couldn't save this turn of the conversation, so it is not in its history; please send it again.".into() })
            .await;
    }
    let label = outcome.as_str();
    ctx.inner
        .metrics
        .count(TURNS_TOTAL, 1, &[("outcome", label)]);
    ctx.inner.metrics.measure(TURN_COST_USD, cost, &[]);
    report(ctx, label, &usage, &privacy);
    ctx.out
        .emit(Event::Usage {
            models: usage,
            cost_usd: cost,
        })
        .await;
    ctx.out.complete(outcome).await;
    if compact {
        // After the stream ended, on the turn's own task: nobody waits for it.
        match crate::compaction::episode(&ctx.inner, &ctx.principal, &ctx.episode_id, None).await {
            Ok(r) => {
                tracing::info!(episode_id = %ctx.episode_id, outcome = r.outcome.as_str(), turns = r.turns_folded, "compacted after the turn")
            }
            Err(e) => {
                tracing::warn!(episode_id = %ctx.episode_id, error = %e, "compaction after the turn failed; the episode stays due")
            }
        }
    }
}

/// Who was consulted and how it went (D-24), from the runtime's own jobs, never the model's
/// words.
fn consulted_record(work: &Work) -> Vec<ConsultedAgent> {
    work.jobs
        .iter()
        .zip(&work.results)
        .map(|(j, r)| ConsultedAgent {
            agent_id: j.agent.id.to_string(),
            label: j.agent.label.to_string(),
            status: r.status,
            duration_ms: r.duration_ms,
            tool_calls: r.tool_calls,
        })
        .collect()
}

/// The routing record's part that is known only at the end: who ran, how each did and
/// when. (A call a limit left pending was recorded as dropped where it was held; work
/// carried over from an earlier turn is not this turn's.)
fn record_outcomes(ctx: &TurnCtx, work: &Work) {
    ctx.trace(|t| {
        t.invoked = work.jobs.iter().map(|j| j.agent.id.to_string()).collect();
        t.outcomes = work
            .jobs
            .iter()
            .zip(&work.results)
            .map(|(j, r)| AgentOutcome {
                agent_id: j.agent.id.to_string(),
                status: r.status,
                latency_ms: r.duration_ms,
                tool_calls: r.tool_calls,
                started_ms: r.started_ms,
                ended_ms: r.started_ms + r.duration_ms,
            })
            .collect();
    });
}

/// Saves the turn; when another turn committed in between (D-26), appends after it, up to
/// `COMMIT_ATTEMPTS` times. Whether it was saved.
async fn commit_with_retry(ctx: &TurnCtx, commit: &mut Commit) -> bool {
    let store = &ctx.inner.store;
    for _ in 0..COMMIT_ATTEMPTS {
        match store.commit(commit).await {
            Ok(_) => return true,
            Err(StoreError::Conflict) => match store.episode(&ctx.principal, &ctx.episode_id).await
            {
                Ok(m) => {
                    commit.expected_version = m.version;
                    commit.record.seq = m.version + 1;
                }
                Err(e) => {
                    tracing::error!(turn_id = %ctx.turn_id, error = %e, "could not reload the episode after a conflict");
                    return false;
                }
            },
            Err(e) => {
                tracing::error!(turn_id = %ctx.turn_id, error = %e, "could not commit the turn");
                return false;
            }
        }
    }
    false
}

/// The turn's measurements from its routing record and usage (D-31, D-32).
fn report(ctx: &TurnCtx, outcome: &str, usage: &[ModelUsage], privacy: &PrivacyReceipt) {
    let metrics = &ctx.inner.metrics;
    let (guards, dropped, retries, direct, interventions, intent_count) = ctx
        .trace(|t| {
            let guards: Vec<GuardName> = t.guards.iter().map(|g| g.guard).collect();
            let dropped: Vec<DropReason> = t.dropped.iter().map(|d| d.reason).collect();
            let interventions: Vec<InterventionKind> =
                t.interventions.iter().map(|i| i.kind).collect();
            let direct = t.direct_line.as_ref().map(|d| (d.mode, d.sticky));
            (
                guards,
                dropped,
                t.retries,
                direct,
                interventions,
                t.intent_count,
            )
        })
        .unwrap_or_default();
    if intent_count > 0 {
        metrics.measure(INTENT_COUNT, f64::from(intent_count), &[]);
    }
    metrics.measure(
        STATUS_EVENTS_PER_TURN,
        f64::from(ctx.out.status_events()),
        &[],
    );
    if let Some((mode, sticky)) = direct {
        let state = if sticky { "sticky" } else { "single" };
        metrics.count(
            DIRECT_LINE_TURNS_TOTAL,
            1,
            &[("mode", mode.as_str()), ("state", state)],
        );
    }
    for kind in interventions {
        metrics.count(INTERVENTIONS_TOTAL, 1, &[("kind", kind.as_str())]);
    }
    for (kind, n) in &privacy.by_kind {
        metrics.count(
            PRIVACY_MASKED_TOTAL,
            u64::from(*n),
            &[("kind", kind.as_str())],
        );
    }
    for guard in &guards {
        metrics.count(GUARD_FIRINGS_TOTAL, 1, &[("guard", guard.as_str())]);
    }
    for reason in dropped {
        metrics.count(CALLS_DROPPED_TOTAL, 1, &[("reason", reason.as_str())]);
    }
    if retries > 0 {
        metrics.count(MODEL_RETRIES_TOTAL, u64::from(retries), &[]);
    }
    for m in usage {
        let kinds = [
            ("input", m.tokens.input),
            ("output", m.tokens.output),
            ("cache_read", m.tokens.cache_read),
            ("cache_write", m.tokens.cache_write),
        ];
        for (kind, tokens) in kinds {
            if tokens > 0 {
                metrics.count(
                    MODEL_TOKENS_TOTAL,
                    tokens,
                    &[("model", &m.model), ("kind", kind)],
                );
            }
        }
    }
    metrics.measure(
        TURN_LATENCY_MS,
        ctx.started.elapsed().as_secs_f64() * 1000.0,
        &[("outcome", outcome)],
    );
}

fn limit_words(limit: LimitHit) -> &'static str {
    match limit {
        LimitHit::TurnToolCalls => "this turn reached its limit of tool calls",
        LimitHit::TurnSubagents => "this turn reached its limit of specialists",
        LimitHit::OrchestratorIterations => "this turn reached its limit of steps",
        LimitHit::EpisodeRate => {
            "this conversation reached its limit of calls for the last few minutes"
        }
        LimitHit::FanoutCap => "this turn had to consult more specialists than I consult at once",
    }
}
