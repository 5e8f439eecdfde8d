//! A turn that waits for the user (D-36): pausing once every sub-agent has finished or
//! stopped at a call that needs approval, and resuming from the episode's state when the
//! user answers. Finished work is kept, never run again; the consulted record of the turn
//! that completes covers all of it.

use std::time::Duration;

use baton_core::events::{DirectLineState, Event, InterruptionView, SOURCE_ORCHESTRATOR};
use baton_core::interruption::{
    ASK_USER_TOOL, Answer, Awaiting, HeldCall, Interruption, InterruptionKind, LinkAsk, Reply,
    SavedJob, WaitingAgent, args_sha256, question_of,
};
use baton_core::message::Message;
use baton_core::trace::{DirectLineRecord, GuardName};
use baton_core::turn::DirectExchange;
use baton_core::turn::{AgentStatus, TurnOutcome};
use tracing::Instrument as _;

use super::compose;
use super::context::TurnCtx;
use super::direct_line;
use super::route;
use super::status::{self, Board};
use super::subagent;
use super::tools;
use super::work::{AgentJob, AgentResult, TROUBLE, TextMode, Work};

/// Whether any sub-agent of `work` stopped for the user.
pub(super) fn waiting(work: &Work) -> bool {
    work.results
        .iter()
        .any(|r| r.status == AgentStatus::Awaiting)
}

/// What a held call asks the user.
struct Ask {
    kind: InterruptionKind,
    /// The tool it asks about.
    tool: String,
    /// The action to approve, or the question, in plain words.
    words: String,
    /// The arguments it is asked over.
    args: serde_json::Value,
    /// The account link it asks for.
    link: Option<LinkAsk>,
}

/// What `held`, a call of `agent`'s waiting reply, asks the user: its question, or the
/// approval its tool's rule needs. `None` when nothing asks about it any more (the registry
/// changed under the waiting turn).
fn ask_about(job: &AgentJob, waiting: &WaitingAgent, held: &HeldCall) -> Option<Ask> {
    let agent = &job.agent;
    if waiting.remote || (held.name == ASK_USER_TOOL && agent.asks_user) {
        let words = question_of(&held.input)?;
        return Some(Ask {
            kind: InterruptionKind::Question,
            tool: held.name.clone(),
            words: words.to_owned(),
            args: held.input.clone(),
            link: None,
        });
    }
    let call = super::held::acting_call(job, held)?;
    if let Some(asked) = &held.asked {
        // The service's question, in words: the call is made again with the answer.
        return Some(Ask {
            kind: InterruptionKind::Question,
            words: asked.in_words(),
            args: call.parse().unwrap_or(serde_json::Value::Null),
            tool: call.name,
            link: None,
        });
    }
    if let Some(link) = &held.link {
        let args = call.parse().unwrap_or(serde_json::Value::Null);
        return Some(Ask {
            kind: InterruptionKind::AccountLink,
            words: format!("connect your account at {}", server_name(&link.server)),
            tool: call.name,
            args,
            link: Some(link.clone()),
        });
    }
    let needs = tools::needs_approval(agent, &call)?;
    Some(Ask {
        kind: InterruptionKind::Approval,
        tool: call.name,
        words: needs.action,
        args: needs.args,
        link: None,
    })
}

/// A server's name as the user knows it: its host.
fn server_name(server: &str) -> String {
    url::Url::parse(server)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_else(|| server.to_owned())
}

/// Pauses the turn: asks about the first waiting call, in words and as an `interruption`
/// event, and keeps everything in `work.awaiting` for the commit. `preamble` is what the
/// orchestrator said before it asked the sub-agents; `iterations`, the orchestrator's model
/// calls so far, which the resumed turn goes on from.
pub(super) async fn pause(ctx: &TurnCtx, work: &mut Work, preamble: &str, iterations: u32) {
    let asked = work
        .jobs
        .iter()
        .zip(&work.results)
        .find_map(|(job, result)| {
            let waiting = result.waiting.as_ref()?;
            let held = waiting.next_held()?;
            let ask = ask_about(job, waiting, held)?;
            Some((job.agent.clone(), ask, waiting.remote))
        });
    let Some((agent, ask, remote)) = asked else {
        // A call waits that nothing asks about any more (the registry changed under it):
        // nothing can be asked, so the turn cannot go on.
        tracing::error!(turn_id = %ctx.ids.turn_id, "a waiting call has nothing to ask the user");
        work.outcome = TurnOutcome::Failed;
        work.error = Some(TROUBLE.into());
        return;
    };
    let now = ctx.inner.clock.now_ms();
    let interruption = Interruption {
        id: format!("int_{}", uuid::Uuid::new_v4().simple()),
        kind: ask.kind,
        agent_id: agent.id.to_string(),
        label: agent.label.to_string(),
        tool: ask.tool.clone(),
        action: ctx.out.mask_stored(&ask.words),
        args_sha256: args_sha256(&ask.args),
        args: ctx.out.mask_stored_value(ask.args.clone()),
        created_ms: now,
        expires_ms: now.saturating_add(ctx.inner.config.interruption_ttl_ms),
        link: ask.link.clone(),
    };
    ctx.trace(|t| {
        t.guard(
            GuardName::ApprovalNeeded,
            format!(
                "{}: asked the user ({}, {})",
                interruption.tool,
                interruption.kind.as_str(),
                interruption.id
            ),
        )
    });
    // On the Direct Line a remote agent's question was its answer, delivered word for word
    // already: it is not said again, only asked (the `interruption` event).
    let delivered = remote && work.direct.is_some();
    let said = match ask.kind {
        InterruptionKind::Approval => format!(
            "{} needs your approval to go on: {}. Approve or decline?",
            agent.label, ask.words
        ),
        InterruptionKind::Question => format!("{} asks: {}", agent.label, ask.words),
        InterruptionKind::AccountLink => format!(
            "{} needs you to {} to go on. Sign in at {}, then give the code the page shows (or say no to skip it).",
            agent.label,
            ask.words,
            ask.link.as_ref().map_or("", |l| l.url.as_str())
        ),
    };
    if !delivered {
        ctx.out.paragraph().await;
        ctx.out.text(SOURCE_ORCHESTRATOR, &said).await;
    }
    ctx.out
        .emit(Event::Interruption(Box::new(InterruptionView {
            id: interruption.id.clone(),
            kind: interruption.kind,
            agent: interruption.agent_id.clone(),
            label: interruption.label.clone(),
            tool: interruption.tool.clone(),
            action: ask.words,
            args: ask.args,
            expires_ms: interruption.expires_ms,
            url: ask.link.map(|l| l.url),
        })))
        .await;
    let jobs = work
        .jobs
        .iter()
        .zip(work.results.iter_mut())
        .map(|(job, result)| saved(job, result))
        .collect();
    work.outcome = TurnOutcome::AwaitingUser;
    let origin_turn_id = work
        .origin
        .clone()
        .unwrap_or_else(|| ctx.ids.turn_id.to_string());
    let direct = work.direct.as_ref().map(|_| direct_line::mode(ctx));
    let plan = work.plan.take();
    work.awaiting = Some(Box::new(Awaiting {
        turn_id: ctx.ids.turn_id.to_string(),
        origin_turn_id,
        direct,
        plan,
        user_text: ctx.asked.user_text.clone(),
        preamble: preamble.to_owned(),
        jobs,
        interruption,
        spent: ctx.budget.spent(iterations),
        locale: ctx.asked.locale.clone(),
        location: ctx.asked.location.clone(),
        // Read under the turn's own span (the orchestrator's `invoke_agent`).
        traceparent: ctx.inner.trace_context.and_then(|read| read()),
    }));
}

fn saved(job: &AgentJob, result: &mut AgentResult) -> SavedJob {
    let waiting = result.waiting.take();
    SavedJob {
        agent_id: job.agent.id.to_string(),
        call_id: job.call_id.clone(),
        query: job.query.clone(),
        prior_context: job.prior_context.clone(),
        extra: job.extra.clone(),
        status: waiting.is_none().then_some(result.status),
        text: result.text.clone(),
        tool_calls: result.tool_calls,
        duration_ms: result.duration_ms,
        waiting,
    }
}

/// Resumes the turn `awaiting` with the user's `reply` (already checked): the waiting
/// sub-agent goes on from its held call and the finished ones are taken as they were.
/// Returns the orchestrator's conversation to compose the answer from (the caller runs
/// the composition), or `None` when the turn paused again on the next call that needs the
/// user, or cannot go on.
pub(super) async fn resume(
    ctx: &TurnCtx,
    awaiting: Awaiting,
    reply: &Reply,
    work: &mut Work,
) -> Option<Vec<Message>> {
    work.origin = Some(awaiting.origin().to_owned());
    let Awaiting {
        preamble,
        jobs: saved_jobs,
        interruption,
        direct,
        spent,
        ..
    } = awaiting;
    let registry = &ctx.inner.registry;
    let mut jobs = Vec::with_capacity(saved_jobs.len());
    let mut results = Vec::with_capacity(saved_jobs.len());
    let mut held = Vec::new();
    for (i, saved) in saved_jobs.into_iter().enumerate() {
        let Some(agent) = registry.agent(&saved.agent_id).cloned() else {
            tracing::error!(agent = %saved.agent_id, "a waiting turn's specialist is no longer in the registry");
            work.outcome = TurnOutcome::Failed;
            work.error = Some(TROUBLE.into());
            return None;
        };
        jobs.push(AgentJob {
            agent,
            call_id: saved.call_id,
            query: saved.query,
            prior_context: saved.prior_context,
            extra: saved.extra,
            worker: None,
            // What it was shown is in its kept conversation; this turn's message is the
            // user's reply.
            pictures: Vec::new(),
        });
        results.push(AgentResult {
            status: saved.status.unwrap_or(AgentStatus::Awaiting),
            text: saved.text,
            tool_calls: saved.tool_calls,
            duration_ms: saved.duration_ms,
            started_ms: 0,
            run: 0,
            failure_told: false,
            waiting: None,
            refused: false,
            // What goes on with the answer gets a result of its own below.
            carried: true,
        });
        if let Some(w) = saved.waiting {
            held.push((i, w));
        }
    }
    ctx.trace(|t| {
        t.guard(
            GuardName::ApprovalNeeded,
            format!(
                "{}: the user answered {} ({}, arguments sha256 {})",
                interruption.tool,
                reply.answer.as_str(),
                interruption.id,
                interruption.args_sha256
            ),
        )
    });
    // The sub-agent that asked goes on with the answer, and only it hears it; any other
    // that waits keeps waiting for its own question.
    let mut given = Some(reply.answer.clone());
    // On the Direct Line the specialist's words stream as its own answer (D-21).
    let mode = match direct {
        Some(_) => TextMode::Delegated,
        None => TextMode::Collect,
    };
    let mut went_on = Vec::new();
    for (i, w) in held {
        let job = &jobs[i];
        if job.agent.id.as_ref() != interruption.agent_id || given.is_none() {
            results[i].waiting = Some(w);
            continue;
        }
        let Some(answer) = given.take() else {
            continue;
        };
        results[i] = continued(ctx, job, *w, answer, &mode).await;
        went_on.push(i);
    }
    work.jobs = jobs;
    work.results = results;
    if let Some(mode) = direct {
        // A Direct Line turn's answers are delivered, never composed: the ones that went
        // on now, word for word (the others were delivered by the turn that waited).
        if let Some(first) = went_on.first().map(|&i| &work.jobs[i].agent) {
            ctx.out
                .direct_line(&first.id, &first.label, mode, DirectLineState::Single)
                .await;
            ctx.trace(|t| {
                t.direct_line = Some(DirectLineRecord {
                    agent_id: first.id.to_string(),
                    mode,
                    sticky: false,
                })
            });
        }
        let mut answers = Vec::new();
        for &i in &went_on {
            if let Some(answer) = direct_line::deliver(ctx, &work.jobs[i], &work.results[i]).await {
                answers.push(answer);
            }
        }
        work.direct = Some(DirectExchange {
            answers,
            note: None,
        });
    }
    if waiting(work) {
        pause(ctx, work, &preamble, spent.iterations).await;
        return None;
    }
    if direct.is_some() {
        return None;
    }
    ctx.out.paragraph().await;
    let mut messages: Vec<Message> = route::conversation(&ctx.asked);
    messages.extend(compose::round_messages(
        &preamble,
        &work.jobs,
        &work.results,
        &[],
    ));
    Some(messages)
}

/// One waiting sub-agent going on with the user's answer, bounded by its card's timeout
/// and with its progress lines, as a dispatched one is.
pub(super) async fn continued(
    ctx: &TurnCtx,
    job: &AgentJob,
    waiting: WaitingAgent,
    answer: Answer,
    mode: &TextMode,
) -> AgentResult {
    let agent = &job.agent;
    let mut result = AgentResult {
        status: AgentStatus::Error,
        text: String::new(),
        tool_calls: 0,
        duration_ms: waiting.duration_ms,
        started_ms: 0,
        run: ctx.jobs.next_run(),
        failure_told: false,
        waiting: None,
        refused: false,
        carried: false,
    };
    let board = Board::new(std::iter::once(agent.id.clone()));
    let limit = Duration::from_millis(agent.limits.timeout_ms);
    let calls_before = ctx.jobs.calls_started(&agent.id);
    // Its own `invoke_agent` span, as a dispatched sub-agent has (D-33).
    let span = tracing::info_span!(
        "invoke_agent",
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = %agent.id,
        turn_id = %ctx.ids.turn_id,
        baton.resumed = true,
        otel.status_code = tracing::field::Empty,
        error.type = tracing::field::Empty,
    );
    let run = async {
        let ran = tokio::time::timeout(
            limit,
            subagent::resume(ctx, job, mode, &board, &mut result, waiting, answer)
                .instrument(span.clone()),
        )
        .await;
        board.close();
        ran
    };
    let (ran, ()) = tokio::join!(run, status::render(ctx, &board));
    if ran.is_err() {
        tracing::warn!(agent = %agent.id, "sub-agent timed out after the user's answer");
        result.status = AgentStatus::Timeout;
    }
    if matches!(result.status, AgentStatus::Error | AgentStatus::Timeout) {
        span.record("otel.status_code", "ERROR");
        span.record("error.type", result.status.as_str());
    }
    // The approved call and every call after it count in the consulted record (D-20), as
    // a dispatched sub-agent's do.
    result.tool_calls += ctx
        .jobs
        .calls_started(&agent.id)
        .saturating_sub(calls_before);
    if let Some(waiting) = result.waiting.as_mut() {
        waiting.tool_calls = result.tool_calls;
    }
    result
}

/// The id of the turn that resumes `turn_id` with an answer to `interruption_id`.
pub(crate) use baton_core::interruption::resume_turn_id;

/// The words a reply is recorded as, in the user's place: the decision on the action, or
/// the answer itself.
pub(crate) fn reply_text(awaiting: &Awaiting, answer: &Answer) -> String {
    match answer {
        // The code that confirms an account link is never journalled.
        Answer::Approve | Answer::Text(_)
            if awaiting.interruption.kind == InterruptionKind::AccountLink =>
        {
            format!("Connected: {}", awaiting.interruption.action)
        }
        Answer::Approve => format!("Approved: {}", awaiting.interruption.action),
        Answer::Decline => format!("Declined: {}", awaiting.interruption.action),
        Answer::Text(words) => words.clone(),
    }
}
