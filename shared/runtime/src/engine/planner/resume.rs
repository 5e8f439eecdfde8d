//! Going on from a checkpoint: a planned turn claimed again after it was cut short shows the
//! plan and what finished, runs the rest of the step that was running, and answers its
//! calls.

use std::sync::Arc;

use baton_core::events::Event;
use baton_core::plan::{NodeStatus, PlanCheckpoint};
use baton_core::registry::Planner;

use super::Step;
use super::step;
use super::{PlanRun, announce, waves, worker};
use crate::engine::context::TurnCtx;
use crate::engine::model_call::RawCall;
use crate::engine::work::Work;

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
