//! The end of a turn: the consulted record and the outcomes built from what ran, the
//! commit (retried over a concurrent one), the metrics and the closing events.

use baton_core::consulted::footer_with;
use baton_core::events::{Event, SOURCE_ORCHESTRATOR};
use baton_core::ports::metrics::{
    CALLS_DROPPED_TOTAL, DIRECT_LINE_TURNS_TOTAL, GUARD_FIRINGS_TOTAL, INTENT_COUNT,
    INTERVENTIONS_TOTAL, MODEL_RETRIES_TOTAL, MODEL_TOKENS_TOTAL, PRIVACY_MASKED_TOTAL,
    STATUS_EVENTS_PER_TURN, TURN_COST_USD, TURN_LATENCY_MS, TURNS_TOTAL,
};
use baton_core::ports::store::{Commit, EpisodeMeta, StoreError};
use baton_core::privacy::PrivacyReceipt;
use baton_core::trace::{
    AgentOutcome, DropReason, GuardName, InterventionKind, LimitHit, RoutingRecord,
};
use baton_core::turn::{
    AgentStatus, ConsultedAgent, EpisodeState, ModelUsage, Segment, TurnOutcome, TurnRecord,
};

use super::compose;
use super::context::TurnCtx;
use super::memory;
use super::span_content;
use super::work::Work;

const PAUSE: &str = "We've done a lot in the last few minutes, so I'm pausing for a moment. Ask again shortly and I'll continue.";

/// How often a commit is tried when another turn committed first.
const COMMIT_ATTEMPTS: usize = 3;

/// Ends the turn: records what ran, commits it, and sends the closing events.
pub(super) async fn finish(
    ctx: &TurnCtx,
    meta: EpisodeMeta,
    mut state: EpisodeState,
    mut work: Work,
) {
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
    let memories = ctx.trace(|t| t.memories.clone()).unwrap_or_default();
    ctx.out
        .emit(Event::AgentsConsulted {
            footer: footer_with(&consulted, &memories),
            agents: consulted.clone(),
            memories,
        })
        .await;

    let (usage, cost) = ctx.budget.usage();
    let now = ctx.inner.clock.now_ms();
    state.record_calls(
        now,
        ctx.budget.limits.episode_window_ms,
        ctx.budget.calls_made(),
    );
    state.pending = std::mem::take(&mut work.pending);
    state.pending_plan = work.pending_plan.take();
    // A turn that waits keeps its work here; any other turn sets aside what waited before
    // (a new message declines it, D-36).
    state.awaiting = work.awaiting.take();
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
    record_on_span(&routing, &consulted);
    span_content::record(
        ctx,
        &tracing::Span::current(),
        &ctx.asked.user_text,
        &narration,
        true,
    );
    tracing::info!(
        target: "baton::routing",
        turn_id = %ctx.ids.turn_id,
        episode_id = %ctx.ids.episode_id,
        routing = %serde_json::to_string(&routing).unwrap_or_default(),
        "routing record"
    );
    let bodies = ctx.jobs.take_bodies();
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
    let compaction_due = memory::due_after(ctx, meta.version + 1, &ctx.asked.user_text, &narration);
    // Boxed: the turn's future keeps room for its largest step, so the record lives on the
    // heap only while it is being saved.
    let mut commit = Box::new(Commit {
        principal: ctx.ids.principal.clone(),
        expected_version: meta.version,
        record: TurnRecord {
            episode_id: ctx.ids.episode_id.to_string(),
            seq: meta.version + 1,
            turn_id: ctx.ids.turn_id.to_string(),
            created_ms: now,
            user_text: ctx.asked.user_text.clone(),
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
            fingerprint: ctx.ids.fingerprint.clone(),
            message_id: ctx.ids.message_id.clone(),
            pictures: ctx.asked.pictures.iter().map(|p| p.reference()).collect(),
        },
        bodies,
        pictures: ctx.asked.pictures.clone(),
        state,
        compaction_due,
    });
    let saved = commit_with_retry(ctx, &mut commit).await;
    let compact = saved && commit.compaction_due && ctx.inner.config.compact_after_turn;
    // Extraction reads the record as committed; taken only when it will run.
    let remember =
        (saved && ctx.inner.config.memory.extract_after_turn && ctx.inner.memory.is_some())
            .then(|| commit.record.clone());
    drop(commit);
    // A turn that did not commit is never reported as answered. Its claim is released
    // with the turn id still bound to this episode: the client, told this episode, can
    // send the same turn again and it runs here.
    let outcome = if saved { outcome } else { TurnOutcome::Failed };
    if !saved {
        let _ = ctx
            .inner
            .store
            .release(&ctx.ids.episode_id, &ctx.ids.turn_id)
            .await;
        ctx.out
            .emit(Event::Error { message: "I couldn't save this turn of the conversation, so it is not in its history; please send it again.".into() })
            .await;
    }
    let label = outcome.as_str();
    tracing::Span::current().record("baton.outcome", label);
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
        match crate::compaction::episode(&ctx.inner, &ctx.ids.principal, &ctx.ids.episode_id, None)
            .await
        {
            Ok(r) => {
                tracing::info!(episode_id = %ctx.ids.episode_id, outcome = r.outcome.as_str(), turns = r.turns_folded, "compacted after the turn")
            }
            Err(e) => {
                tracing::warn!(episode_id = %ctx.ids.episode_id, error = %e, "compaction after the turn failed; the episode stays due")
            }
        }
    }
    if let Some(record) = remember {
        // Likewise after the stream ended (D-43): the user never waits for extraction.
        match crate::recall::extract(&ctx.inner, &ctx.ids.principal, &record).await {
            Ok(r) if r.asked => {
                tracing::info!(turn_id = %ctx.ids.turn_id, saved = r.saved, replaced = r.replaced, withheld = r.withheld, "memories extracted after the turn")
            }
            Ok(_) => {}
            Err(e) => {
                ctx.inner.metrics.count(
                    crate::recall::MEMORY_FAILURES_TOTAL,
                    1,
                    &[("stage", "extract")],
                );
                tracing::warn!(turn_id = %ctx.ids.turn_id, error = %e, "memory extraction after the turn failed")
            }
        }
    }
}

/// What the turn came to, on the turn's `invoke_agent` span (D-33): who was consulted
/// (from the runtime's record, as the footer is), how their answers were composed, which
/// guards fired and how many intents the router saw.
fn record_on_span(routing: &RoutingRecord, consulted: &[ConsultedAgent]) {
    let span = tracing::Span::current();
    if span.is_disabled() {
        return;
    }
    let ids: Vec<&str> = consulted.iter().map(|c| c.agent_id.as_str()).collect();
    span.record("baton.consulted", ids.join(","));
    if let Some(composition) = routing.composition {
        span.record("baton.composition", tracing::field::display(composition));
    }
    let guards: Vec<&str> = routing.guards.iter().map(|g| g.guard.as_str()).collect();
    span.record("baton.guards", guards.join(","));
    // Signed: the OpenTelemetry layer exports an unsigned integer as text.
    span.record("baton.intent_count", i64::from(routing.intent_count));
}

/// Who was consulted and how it went (D-24), from the runtime's own jobs, never the model's
/// words.
fn consulted_record(work: &Work) -> Vec<ConsultedAgent> {
    work.jobs
        .iter()
        .zip(&work.results)
        .filter(|(_, r)| !r.refused)
        .map(|(j, r)| ConsultedAgent {
            agent_id: j.agent.id.to_string(),
            label: j.agent.label.to_string(),
            status: r.status,
            duration_ms: r.duration_ms,
            tool_calls: r.tool_calls,
            carried: r.carried,
        })
        .collect()
}

/// The routing record's part that is known only at the end: who ran, how each did and
/// when. (A call a limit left pending was recorded as dropped where it was held; work
/// carried over from an earlier turn is not this turn's.)
fn record_outcomes(ctx: &TurnCtx, work: &Work) {
    // The nth execution of each agent among those this turn ran, as the consulted record
    // and the audit trail number them.
    let mut nth: Vec<(&str, u32)> = Vec::new();
    let executions: Vec<(u32, u32)> = work
        .jobs
        .iter()
        .zip(&work.results)
        .filter(|(_, r)| !r.refused && !r.carried)
        .map(|(j, r)| {
            let n = match nth.iter_mut().find(|(a, _)| *a == &*j.agent.id) {
                Some((_, n)) => {
                    *n += 1;
                    *n
                }
                None => {
                    nth.push((&j.agent.id, 1));
                    1
                }
            };
            (r.run, n)
        })
        .collect();
    ctx.trace(|t| {
        for call in &mut t.tool_calls {
            call.execution = executions
                .iter()
                .find(|(run, _)| *run == call.run)
                .map_or(1, |(_, n)| *n);
        }
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
            Err(StoreError::Conflict) => {
                match store.episode(&ctx.ids.principal, &ctx.ids.episode_id).await {
                    Ok(m) => {
                        commit.expected_version = m.version;
                        commit.record.seq = m.version + 1;
                    }
                    Err(e) => {
                        tracing::error!(turn_id = %ctx.ids.turn_id, error = %e, "could not reload the episode after a conflict");
                        return false;
                    }
                }
            }
            Err(e) => {
                tracing::error!(turn_id = %ctx.ids.turn_id, error = %e, "could not commit the turn");
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

/// The episode's window of calls is spent (D-15): the turn says so in plain words and
/// ends as limited; nothing it held is lost.
pub(super) async fn pause(ctx: &TurnCtx, work: &mut Work) {
    ctx.out.paragraph().await;
    ctx.out.text(SOURCE_ORCHESTRATOR, PAUSE).await;
    work.outcome = TurnOutcome::Limited;
}
