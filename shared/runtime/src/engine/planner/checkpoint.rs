//! The checkpoint of a planned turn: saved after every wave, read when the same turn id is
//! claimed again after it was cut short (a Lambda timeout, a killed process). Nodes that
//! finished never run again; the step that was running goes on from its next wave.

use std::sync::Arc;

use baton_core::events::Event;
use baton_core::plan::{NodeStatus, PlanCheckpoint};
use baton_core::registry::Planner;

use super::step::{self, Step};
use super::{PlanRun, announce, waves, worker};
use crate::engine::context::TurnCtx;
use crate::engine::model_call::RawCall;
use crate::engine::turn::Work;

/// Saves where the turn is. A store that cannot save only loses the ability to resume:
/// the turn goes on.
pub(super) async fn save(ctx: &TurnCtx, run: &PlanRun, step: &Step) {
    let checkpoint = PlanCheckpoint {
        messages: run.messages.clone(),
        reply_text: step.text.clone(),
        calls: step.calls.clone(),
        nodes: run.nodes.clone(),
        results: run.results.clone(),
        waves_done: run.waves_done,
        iterations: run.iterations,
        record: run.record.clone(),
        limit: ctx.trace(|t| t.limit).flatten(),
    };
    let json = match checkpoint.to_json() {
        Ok(json) => json,
        Err(e) => {
            tracing::warn!(turn_id = %ctx.turn_id, error = %e, "checkpoint not saved: it does not serialize");
            return;
        }
    };
    if let Err(e) = ctx
        .inner
        .store
        .save_checkpoint(&ctx.episode_id, &ctx.turn_id, &json)
        .await
    {
        tracing::warn!(turn_id = %ctx.turn_id, error = %e, "checkpoint not saved");
    }
}

/// The checkpoint this turn saved before it was cut short, if any.
pub(super) async fn load(ctx: &TurnCtx) -> Option<PlanCheckpoint> {
    let json = match ctx
        .inner
        .store
        .checkpoint(&ctx.episode_id, &ctx.turn_id)
        .await
    {
        Ok(json) => json?,
        Err(e) => {
            tracing::warn!(turn_id = %ctx.turn_id, error = %e, "checkpoint unreadable; the turn starts over");
            return None;
        }
    };
    match PlanCheckpoint::from_json(&json) {
        Ok(checkpoint) => Some(checkpoint),
        Err(e) => {
            tracing::warn!(turn_id = %ctx.turn_id, error = %e, "checkpoint is not one; the turn starts over");
            None
        }
    }
}

/// Goes on from `saved`: shows the plan and what finished, runs the rest of the step that
/// was running, and answers its calls.
pub(super) async fn resume(
    ctx: &TurnCtx,
    planner: &Arc<Planner>,
    saved: PlanCheckpoint,
    run: &mut PlanRun,
    work: &mut Work,
) {
    tracing::info!(turn_id = %ctx.turn_id, waves_done = saved.waves_done, "resuming a planned turn from its checkpoint");
    run.messages = saved.messages;
    run.nodes = saved.nodes;
    run.results = saved.results;
    run.record = saved.record;
    run.record.resumed_after_wave = Some(saved.waves_done);
    run.waves_done = saved.waves_done;
    run.iterations = saved.iterations;
    if let Some(limit) = saved.limit {
        ctx.trace(|t| {
            t.limit.get_or_insert(limit);
        });
    }
    // A client that reconnects sees the whole plan and what already finished.
    announce(ctx, &run.nodes).await;
    for r in &run.results {
        let wave = run
            .nodes
            .iter()
            .find(|n| n.id == r.id)
            .map_or(0, |n| n.wave);
        ctx.out
            .emit(Event::NodeEnd {
                node: r.id.clone(),
                wave,
                status: r.status,
                duration_ms: r.duration_ms,
                tool_calls: r.tool_calls,
                reason: (!r.status.ran()).then(|| r.result.clone()),
            })
            .await;
        // Who ran before the cut is part of this turn's record.
        if r.status.ran()
            && let Some(node) = run.nodes.iter().find(|n| n.id == r.id)
        {
            work.jobs.push(worker::job(planner, node, Vec::new()));
            work.results.push(worker::ran_before(r));
        }
    }
    run.pending = run
        .nodes
        .iter()
        .filter(|n| {
            run.results
                .iter()
                .any(|r| r.id == n.id && r.status == NodeStatus::NotRun)
        })
        .cloned()
        .collect();
    let rest: Vec<_> = run
        .nodes
        .iter()
        .filter(|n| !run.results.iter().any(|r| r.id == n.id))
        .cloned()
        .collect();
    let step = Step {
        text: saved.reply_text,
        calls: saved.calls,
    };
    waves::run(ctx, planner, run, &rest, &step, work).await;
    let calls: Vec<RawCall> = step
        .calls
        .iter()
        .map(|c| RawCall {
            id: c.id.clone(),
            name: c.name.clone(),
            args: c.args.clone(),
        })
        .collect();
    step::answer(run, planner, &step.text, &calls, None);
}
