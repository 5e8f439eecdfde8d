//! Going on from a checkpoint: a planned turn claimed again after it was cut short, or
//! resumed after the user answered what one of its sub-agents stopped for (D-36), shows
//! the plan and what finished, runs the rest of the step that was running, and answers
//! its calls.

use std::sync::Arc;

use baton_core::events::Event;
use baton_core::interruption::{Awaiting, Reply};
use baton_core::plan::outcome::inputs;
use baton_core::plan::{NodeStatus, PlanCheckpoint};
use baton_core::registry::Planner;
use baton_core::turn::AgentStatus;

use super::Step;
use super::step;
use super::{PlanRun, announce, checkpoint, waves, worker};
use crate::engine::context::TurnCtx;
use crate::engine::interruption;
use crate::engine::model_call::RawCall;
use crate::engine::work::{AgentResult, TextMode, Work};

/// Goes on from `saved`: shows the plan and what finished, runs the rest of the step that
/// was running, and answers its calls.
pub(super) async fn resume(
    ctx: &TurnCtx,
    planner: &Arc<Planner>,
    saved: PlanCheckpoint,
    run: &mut PlanRun,
    work: &mut Work,
) {
    tracing::info!(turn_id = %ctx.ids.turn_id, waves_done = saved.waves_done, "resuming a planned turn from its checkpoint");
    // That run never committed: what finished in it is this turn's own.
    let step = restore(ctx, planner, saved, run, work, false).await;
    go_on(ctx, planner, run, &step, work).await;
}

/// Goes on after the user answered what a planned sub-agent stopped for (D-36): the plan
/// as `saved` left it, then the waiting sub-agents (the one that asked with the answer;
/// any other keeps waiting), then the rest of the step. Returns with `run.paused` set when
/// the turn must wait again.
pub(super) async fn after_answer(
    ctx: &TurnCtx,
    planner: &Arc<Planner>,
    awaiting: Awaiting,
    reply: &Reply,
    run: &mut PlanRun,
    work: &mut Work,
) {
    let Awaiting {
        plan: Some(saved),
        jobs,
        interruption,
        ..
    } = awaiting
    else {
        return;
    };
    // The turn that waited committed what finished before it: carried here.
    let step = restore(ctx, planner, *saved, run, work, true).await;
    let mut given = Some(reply.answer.clone());
    let mut waiting = false;
    for saved_job in jobs {
        let Some(w) = saved_job.waiting else {
            continue;
        };
        let Some(node) = run
            .nodes
            .iter()
            .find(|n| n.id == saved_job.agent_id)
            .cloned()
        else {
            tracing::error!(node = %saved_job.agent_id, "a waiting planned sub-agent is not in its plan");
            continue;
        };
        let inputs = inputs(&node, &run.results).into_iter().cloned().collect();
        let job = worker::job(planner, &node, inputs);
        let answer = given.take_if(|_| saved_job.agent_id == interruption.agent_id);
        let result = match answer {
            Some(answer) => {
                interruption::continued(ctx, &job, *w, answer, &TextMode::Collect).await
            }
            None => AgentResult {
                status: AgentStatus::Awaiting,
                text: saved_job.text,
                tool_calls: saved_job.tool_calls,
                duration_ms: saved_job.duration_ms,
                started_ms: 0,
                run: 0,
                failure_told: false,
                waiting: Some(w),
                refused: false,
                carried: true,
            },
        };
        if result.status == AgentStatus::Awaiting {
            waiting = true;
        } else {
            let ended = worker::node_result(&job, &result);
            ctx.out
                .emit(Event::NodeEnd {
                    node: ended.id.clone(),
                    wave: node.wave,
                    status: ended.status,
                    duration_ms: ended.duration_ms,
                    tool_calls: ended.tool_calls,
                    reason: None,
                })
                .await;
            run.results.push(ended);
        }
        work.jobs.push(job);
        work.results.push(result);
    }
    if waiting {
        run.paused = Some(Box::new(checkpoint::build(ctx, run, &step)));
        return;
    }
    go_on(ctx, planner, run, &step, work).await;
}

/// Restores the plan from `saved`: shows it and what finished (who ran is part of this
/// turn's record), and returns the step that was running.
async fn restore(
    ctx: &TurnCtx,
    planner: &Arc<Planner>,
    saved: PlanCheckpoint,
    run: &mut PlanRun,
    work: &mut Work,
    carried: bool,
) -> Step {
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
        // Who ran before is part of this turn's record.
        if r.status.ran()
            && let Some(node) = run.nodes.iter().find(|n| n.id == r.id)
        {
            work.jobs.push(worker::job(planner, node, Vec::new()));
            work.results.push(worker::ran_before(r, carried));
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
    Step {
        text: saved.reply_text,
        calls: saved.calls,
    }
}

/// Runs the rest of `step` (its nodes with no result yet) and answers its calls, unless a
/// sub-agent stops for the user again.
async fn go_on(
    ctx: &TurnCtx,
    planner: &Arc<Planner>,
    run: &mut PlanRun,
    step: &Step,
    work: &mut Work,
) {
    let rest: Vec<_> = run
        .nodes
        .iter()
        .filter(|n| !run.results.iter().any(|r| r.id == n.id))
        .cloned()
        .collect();
    waves::run(ctx, planner, run, &rest, step, work).await;
    if run.paused.is_some() {
        return;
    }
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
