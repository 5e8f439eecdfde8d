//! The checkpoint of a planned turn: saved after every wave, read when the same turn id is
//! claimed again after it was cut short (a Lambda timeout, a killed process). Nodes that
//! finished never run again; the step that was running goes on from its next wave.

use baton_core::plan::PlanCheckpoint;

use super::PlanRun;
use super::Step;
use crate::engine::context::TurnCtx;

/// Saves where the turn is. A store that cannot save only loses the ability to resume:
/// the turn goes on.
pub(super) async fn save(ctx: &TurnCtx, run: &PlanRun, step: &Step) {
    let checkpoint = build(ctx, run, step);
    let json = match checkpoint.to_json() {
        Ok(json) => json,
        Err(e) => {
            tracing::warn!(turn_id = %ctx.ids.turn_id, error = %e, "checkpoint not saved: it does not serialize");
            return;
        }
    };
    if let Err(e) = ctx
        .inner
        .store
        .save_checkpoint(&ctx.ids.episode_id, &ctx.ids.turn_id, &json)
        .await
    {
        tracing::warn!(turn_id = %ctx.ids.turn_id, error = %e, "checkpoint not saved");
    }
}

/// Where the turn is, in the middle of `step`.
pub(super) fn build(ctx: &TurnCtx, run: &PlanRun, step: &Step) -> PlanCheckpoint {
    PlanCheckpoint {
        messages: run.messages.clone(),
        reply_text: step.text.clone(),
        calls: step.calls.clone(),
        nodes: run.nodes.clone(),
        results: run.results.clone(),
        waves_done: run.waves_done,
        iterations: run.iterations,
        record: run.record.clone(),
        limit: ctx.trace(|t| t.limit).flatten(),
    }
}

/// The checkpoint this turn saved before it was cut short, if any.
pub(super) async fn load(ctx: &TurnCtx) -> Option<PlanCheckpoint> {
    let json = match ctx
        .inner
        .store
        .checkpoint(&ctx.ids.episode_id, &ctx.ids.turn_id)
        .await
    {
        Ok(json) => json?,
        Err(e) => {
            tracing::warn!(turn_id = %ctx.ids.turn_id, error = %e, "checkpoint unreadable; the turn starts over");
            return None;
        }
    };
    match PlanCheckpoint::from_json(&json) {
        Ok(checkpoint) => Some(checkpoint),
        Err(e) => {
            tracing::warn!(turn_id = %ctx.ids.turn_id, error = %e, "checkpoint is not one; the turn starts over");
            None
        }
    }
}
