//! The turn driver (design.md §3): history, routing, fan-out, composition, the consulted
//! record, the journal commit, usage and completion — in that order.

use std::sync::Arc;
use std::time::Duration;

use baton_core::events::Event;
use baton_core::message::Message;
use baton_core::ports::store::EpisodeMeta;
use baton_core::registry::Composition;
use baton_core::trace::{AskedCall, LimitHit};
use baton_core::turn::{AgentStatus, PendingCall, TurnOutcome};

use super::compose;
use super::context::TurnCtx;
use super::direct_line::{self, Decision};
use super::dispatch::dispatch;
use super::finish::{finish, pause};
use super::interruption;
use super::live_slot::LiveSlot;
use super::memory;
use super::obligations;
use super::planner;
use super::prior_context::prior_context;
use super::recall;
use super::route::{self, Plan};
use super::work::{AgentJob, AgentResult, TROUBLE, TextMode, Work};

const TOO_LONG: &str = "This is taking too long, so I stopped. Please try again in a moment.";
const CANCELED: &str = "Stopped, as you asked.";
const WINDOW_SPENT_REPLY: &str = "This conversation reached its limit of calls for the last few minutes, so nothing was done yet. Your request still waits: send the same answer again shortly.";

/// Runs a claimed turn to its end. Never panics; every failure ends in plain words.
///
/// Takes its context boxed: an async fn keeps its arguments twice (as given and as moved
/// into its body), so a 1.4 KB context would cost every open turn twice that (D-40).
pub(crate) async fn run(mut ctx: Box<TurnCtx>, meta: Box<EpisodeMeta>) {
    ctx.out.emit(Event::Thinking {}).await;
    ctx.out
        .emit(Event::ResponseId {
            response_id: ctx.ids.turn_id.to_string(),
            episode_id: ctx.ids.episode_id.to_string(),
        })
        .await;

    if let Err(e) = memory::load(&mut ctx, &meta).await {
        tracing::error!(turn_id = %ctx.ids.turn_id, error = %e, "could not load the episode's history");
        let said = "Conversation storage is unavailable right now; please try again shortly.";
        end_unrecorded(&ctx, said, TurnOutcome::Failed).await;
        return;
    }
    recall::load(&mut ctx).await;
    let mut state = meta.state.clone();
    let now = ctx.inner.clock.now_ms();
    let mut work = Work::default();
    let used = state.calls_in_window(now, ctx.budget.limits.episode_window_ms);
    ctx.budget.set_window_calls(used);
    if ctx.budget.window_spent() {
        // D-15: the episode's sliding window is spent. Nothing runs, so what waits for the
        // user still waits (D-36).
        if ctx.asked.resume.is_some() {
            // The reply is not recorded either: the same reply, sent once the window has
            // room, resumes the wait under the same turn id.
            end_unrecorded(&ctx, WINDOW_SPENT_REPLY, TurnOutcome::Limited).await;
            return;
        }
        ctx.trace(|t| t.limit = Some(LimitHit::EpisodeRate));
        pause(&ctx, &mut work).await;
        work.pending = std::mem::take(&mut state.pending);
        work.pending_plan = state.pending_plan.take();
        work.awaiting = state.awaiting.take();
        finish(&ctx, *meta, state, work).await;
        return;
    }
    // D-36: a reply resumes the turn that waits for it, and nothing else; a message that
    // may answer in words does so when its words fit the wait, in time.
    let resuming = match ctx.asked.resume.clone() {
        None => match answered_in_words(&ctx, &mut state, now) {
            Ok(resuming) => resuming,
            Err(e) => {
                // Nothing is set aside, nothing recorded: the next message can answer.
                end_unrecorded(&ctx, &e.to_string(), TurnOutcome::Failed).await;
                return;
            }
        },
        Some(reply) => match resumable(&ctx, &mut state, &reply, now) {
            Ok(awaiting) => Some((awaiting, reply)),
            Err(e) => {
                end_unrecorded(&ctx, &e.to_string(), TurnOutcome::Failed).await;
                return;
            }
        },
    };

    record_answer(&ctx, &state, resuming.as_ref(), now);

    if let Some((awaiting, reply)) = resuming {
        // The waiting turn's trace is another: this one links to it (D-33).
        if let (Some(link), Some(waited)) = (ctx.inner.trace_link, awaiting.traceparent.as_deref())
        {
            link(waited);
        }
        // The approved act keeps one idempotency key whichever turn id carries the reply
        // (a face's own, or a fresh one for words): the waiting turn's and the question's.
        ctx.ids.acts_under =
            Some(interruption::resume_turn_id(&awaiting.turn_id, &reply.interruption_id).into());
        // The turn's budgets go on from where the waiting turn left them (D-15), in the
        // user's locale and location unless the reply names its own.
        ctx.budget.restore_spent(awaiting.spent);
        if ctx.asked.locale.is_none() {
            ctx.asked.locale.clone_from(&awaiting.locale);
        }
        if ctx.asked.location.is_none() {
            ctx.asked.location.clone_from(&awaiting.location);
        }
        // A resumed turn is a routed one: it can wait again.
        ctx.pausable = true;
        let deadline = Duration::from_millis(ctx.inner.config.turn_timeout_ms);
        let cancel = ctx.cancel.clone();
        let planner = planner_of(&ctx);
        // Boxed, as the planner's step below: the turn's future is as large as its largest
        // path, and every turn would otherwise carry these rarer paths' room (D-40).
        let body = Box::pin(async {
            match (awaiting.plan.is_some(), &planner) {
                (true, Some(planner)) => {
                    planner::orchestrate_resumed(&ctx, planner, *awaiting, &reply, &mut work).await;
                }
                _ => {
                    // It routed before it waited (state saved before the count was kept
                    // has none).
                    let mut iterations = awaiting.spent.iterations.max(1);
                    let resumed = interruption::resume(&ctx, *awaiting, &reply, &mut work).await;
                    if let Some(messages) = resumed {
                        compose_rounds(&ctx, messages, &mut iterations, &mut work).await;
                    }
                }
            }
        });
        let ended = tokio::select! {
            ran = tokio::time::timeout(deadline, body) => ran.map_err(|_| TurnOutcome::Failed),
            () = cancel.cancelled() => Err(TurnOutcome::Canceled),
        };
        stopped(&ctx, ended, &mut work);
    } else {
        // D-21: the user's own text, and nothing else, may hold a directive.
        let decision = direct_line::decide(&ctx, &mut state);
        let previous = std::mem::take(&mut state.pending);
        let previous_plan = state.pending_plan.take();
        let planner = planner_of(&ctx);
        // D-36: a routed turn (planned or not) and a Direct Line turn can wait for the user.
        ctx.pausable = !matches!(decision, Decision::Reply { .. });
        // One deadline bounds the whole turn, retries included; the lease outlives it.
        let deadline = Duration::from_millis(ctx.inner.config.turn_timeout_ms);
        let cancel = ctx.cancel.clone();
        let body = async {
            match decision {
                Decision::Route { unescaped } => {
                    if let Some(text) = unescaped {
                        ctx.asked.user_text = text;
                    }
                    match &planner {
                        Some(planner) => {
                            Box::pin(planner::orchestrate(
                                &ctx,
                                planner,
                                previous_plan,
                                &mut work,
                            ))
                            .await
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
                    if interruption::waiting(&work) {
                        interruption::pause(&ctx, &mut work, "", 0).await;
                    }
                }
                Decision::Reply { text, indicator } => {
                    work.pending = previous;
                    work.pending_plan = previous_plan;
                    direct_line::reply(&ctx, &text, indicator).await;
                }
            }
        };
        let ended = tokio::select! {
            ran = tokio::time::timeout(deadline, body) => ran.map_err(|_| TurnOutcome::Failed),
            () = cancel.cancelled() => Err(TurnOutcome::Canceled),
        };
        stopped(&ctx, ended, &mut work);
    }
    finish(&ctx, *meta, state, work).await;
}

/// Ends a turn that records nothing: says why, frees its claim (the same request may run
/// again) and completes with `outcome`.
async fn end_unrecorded(ctx: &TurnCtx, message: &str, outcome: TurnOutcome) {
    ctx.out
        .emit(Event::Error {
            message: message.to_owned(),
        })
        .await;
    let _ = ctx
        .inner
        .store
        .release(&ctx.ids.episode_id, &ctx.ids.turn_id)
        .await;
    ctx.out.complete(outcome).await;
}

/// The entry card's planner, when it plans (D-16) rather than routes.
fn planner_of(ctx: &TurnCtx) -> Option<std::sync::Arc<baton_core::registry::Planner>> {
    ctx.orchestrator
        .orchestration
        .as_ref()
        .and_then(|o| o.mode.planner())
        .cloned()
}

/// Records how a turn's body ended when it did not run to its end. The work stopped
/// mid-way is dropped; every sub-agent that started is still recorded as consulted
/// (D-20), a running one as failed (canceled) or timed out (the deadline).
fn stopped(ctx: &TurnCtx, ended: Result<(), TurnOutcome>, work: &mut Work) {
    if let Err(outcome) = ended {
        let unfinished = if outcome == TurnOutcome::Canceled {
            AgentStatus::Error
        } else {
            AgentStatus::Timeout
        };
        for (job, end) in ctx.jobs.take_started_jobs(unfinished) {
            let known = work
                .jobs
                .iter()
                .any(|j| j.call_id == job.call_id && j.agent.id == job.agent.id);
            if !known {
                work.results.push(AgentResult {
                    status: end.status,
                    text: String::new(),
                    tool_calls: end.tool_calls,
                    duration_ms: end.duration_ms,
                    started_ms: job.started_ms,
                    run: 0,
                    failure_told: false,
                    waiting: None,
                    refused: end.refused,
                    carried: false,
                });
                work.jobs.push(AgentJob {
                    agent: job.agent,
                    call_id: job.call_id,
                    query: job.query,
                    prior_context: None,
                    extra: serde_json::Map::new(),
                    worker: None,
                    pictures: Vec::new(),
                });
            }
        }
    }
    match ended {
        Ok(()) => {}
        Err(TurnOutcome::Canceled) => {
            tracing::info!(turn_id = %ctx.ids.turn_id, "turn canceled by its caller");
            work.outcome = TurnOutcome::Canceled;
            work.error = Some(CANCELED.into());
        }
        Err(_) => {
            tracing::warn!(turn_id = %ctx.ids.turn_id, "turn deadline reached");
            work.outcome = TurnOutcome::Failed;
            work.error = Some(TOO_LONG.into());
            // What waited is lost with the turn: nothing resumes a failed one.
            work.awaiting = None;
        }
    }
}

/// Puts in the routing record what became of the interruption the episode waited on: the
/// user's answer (this turn resumes it), or, for any other turn, that it was set aside
/// unanswered (`expired` past its time, which counts as declined; `set_aside` before).
fn record_answer(
    ctx: &TurnCtx,
    state: &baton_core::turn::EpisodeState,
    resuming: Option<&(
        Box<baton_core::interruption::Awaiting>,
        baton_core::interruption::Reply,
    )>,
    now_ms: u64,
) {
    use baton_core::interruption::AnswerRecord;
    let (awaiting, answer) = match (resuming, state.awaiting.as_deref()) {
        (Some((awaiting, reply)), _) => (&**awaiting, reply.answer.as_str()),
        (None, Some(awaiting)) if now_ms >= awaiting.interruption.expires_ms => {
            (awaiting, "expired")
        }
        (None, Some(awaiting)) => (awaiting, "set_aside"),
        (None, None) => return,
    };
    let record = AnswerRecord::new(
        awaiting,
        answer,
        ctx.ids.principal.as_str(),
        ctx.ids.face,
        now_ms,
    );
    ctx.trace(|t| t.answered = Some(record));
}

/// The waiting work this turn's message answers in words, taken from `state`, when the
/// request lets it and the words fit the wait before it expires; `None` leaves the wait to
/// be set aside as any other turn does.
///
/// # Errors
/// The message says an account was connected without the code that proves it (D-37): it
/// is meant as the answer, so it sets nothing aside, and the user is told what to give.
fn answered_in_words(
    ctx: &TurnCtx,
    state: &mut baton_core::turn::EpisodeState,
    now_ms: u64,
) -> Result<
    Option<(
        Box<baton_core::interruption::Awaiting>,
        baton_core::interruption::Reply,
    )>,
    baton_core::interruption::ReplyError,
> {
    use baton_core::interruption::{Answer, InterruptionKind, ReplyError};
    let Some(awaiting) = state
        .awaiting
        .as_deref()
        .filter(|_| ctx.asked.reply_in_words)
    else {
        return Ok(None);
    };
    let reply = match awaiting.reply_in_words(&ctx.asked.user_text) {
        Ok(reply) => reply,
        Err(ReplyError::NeedsCode)
            if awaiting.interruption.kind == InterruptionKind::AccountLink
                && Answer::says_done(&ctx.asked.user_text)
                && now_ms < awaiting.interruption.expires_ms =>
        {
            return Err(ReplyError::NeedsCode);
        }
        Err(_) => return Ok(None),
    };
    if awaiting.check(&awaiting.turn_id, &reply, now_ms).is_err() {
        return Ok(None);
    }
    Ok(state.awaiting.take().map(|awaiting| (awaiting, reply)))
}

/// The waiting work `reply` resumes, taken from `state`, when this turn is the one that
/// answers it (its id derives from the waiting turn's and the interruption's) in time.
fn resumable(
    ctx: &TurnCtx,
    state: &mut baton_core::turn::EpisodeState,
    reply: &baton_core::interruption::Reply,
    now_ms: u64,
) -> Result<Box<baton_core::interruption::Awaiting>, baton_core::interruption::ReplyError> {
    use baton_core::interruption::ReplyError;
    let Some(awaiting) = state.awaiting.take() else {
        return Err(ReplyError::NotWaiting);
    };
    let ours = interruption::resume_turn_id(&awaiting.turn_id, &reply.interruption_id);
    let checked = if ours == *ctx.ids.turn_id {
        awaiting.check(&awaiting.turn_id, reply, now_ms)
    } else {
        Err(ReplyError::NotWaiting)
    };
    match checked {
        Ok(()) => Ok(awaiting),
        Err(e) => {
            state.awaiting = Some(awaiting);
            Err(e)
        }
    }
}

async fn orchestrate(ctx: &TurnCtx, previous: &[PendingCall], work: &mut Work) {
    let mut iterations = 0;
    // `routed`: whether the orchestrator made the plan (and so can be reminded).
    let (mut plan, routed) = if !previous.is_empty() && route::is_continue(&ctx.asked.user_text) {
        (route::resume(ctx, previous), true)
    } else {
        match route::route(ctx, &mut iterations).await {
            Ok(plan) => (plan, true),
            Err(e) if !obligations::due(ctx).is_empty() => {
                // D-22 holds even when the orchestrator cannot route: the specialists this
                // turn must consult are asked directly, and the answer is composed from them.
                tracing::error!(turn_id = %ctx.ids.turn_id, error = %e, "routing call failed; consulting the turn's obligations directly");
                (Plan::default(), false)
            }
            Err(_) if ctx.budget.window_spent() => {
                pause(ctx, work).await;
                return;
            }
            Err(e) => {
                tracing::error!(turn_id = %ctx.ids.turn_id, error = %e, "routing call failed");
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
        mut jobs,
        refused,
        text: preamble,
        fastpath,
        pending,
    } = plan;
    work.pending = pending;
    // What the runtime fills in on a switch (D-18) is part of what a specialist is told:
    // recorded with its call, so the record (and an eval) sees what it really received.
    for job in &mut jobs {
        job.prior_context = prior_context(&ctx.asked, &ctx.trace, job);
    }
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
    work.jobs = jobs;
    work.results = results;
    if interruption::waiting(work) {
        interruption::pause(ctx, work, &preamble, iterations).await;
        return;
    }
    let jobs = std::mem::take(&mut work.jobs);
    let results = std::mem::take(&mut work.results);
    let composes =
        matches!(mode, TextMode::Collect) || composition == Composition::DirectThenCompose;
    if composes {
        // After streamed work, the composed answer starts a paragraph of its own.
        ctx.out.paragraph().await;
        let mut messages = route::conversation(&ctx.asked);
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
        if *iterations >= ctx.budget.limits.max_iterations {
            ctx.trace(|t| {
                t.limit.get_or_insert(LimitHit::OrchestratorIterations);
            });
            compose::template(ctx, &work.jobs, &work.results).await;
            return;
        }
        *iterations += 1;
        let reply = match compose::mediated(ctx, &mut messages).await {
            Ok(reply) => reply,
            Err(e) => {
                tracing::warn!(turn_id = %ctx.ids.turn_id, error = %e, "composition call failed; composing from the answers");
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
        let room = ctx.budget.limits.max_subagents.saturating_sub(dispatched) as usize;
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
        if interruption::waiting(work) {
            interruption::pause(ctx, work, &reply.text, *iterations).await;
            return;
        }
    }
}
