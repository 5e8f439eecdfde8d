//! Running a step's nodes in waves: each wave at once, in topological order; a node whose
//! dependency did not finish is skipped with the reason; results reach dependents as data.
//! After each wave the turn is checkpointed; a turn limit that trips stops the waves and
//! leaves the rest for "continue".

use std::collections::BTreeSet;
use std::sync::Arc;

use tracing::Instrument as _;

use baton_core::json_text::JsonText;
use baton_core::message::{AnsweredCall, ToolResultStatus, tool_exchange};
use baton_core::plan::outcome::{blocked, inputs, results_document};
use baton_core::plan::{GET_AGENT_RESULTS, NodeResult, NodeStatus, PendingPlan, PlanNode};
use baton_core::registry::Planner;
use baton_core::trace::{GuardName, LimitHit};
use baton_core::turn::AgentStatus;
use serde_json::Value;

use super::Step;
use super::{PlanRun, announce, checkpoint, hold, not_run, over_limit, worker};
use crate::engine::context::TurnCtx;
use crate::engine::dispatch::dispatch;
use crate::engine::held::as_json_text;
use crate::engine::work::{TextMode, Work};

/// Runs `nodes` (accepted, within the budget) wave by wave, skipping waves already done.
pub(super) async fn run(
    ctx: &TurnCtx,
    planner: &Arc<Planner>,
    run: &mut PlanRun,
    nodes: &[PlanNode],
    step: &Step,
    work: &mut Work,
) {
    // Only a limit that trips while these waves run stops them; one that stopped part of
    // the step already left that part out of `nodes`.
    let limited_before = over_limit(ctx);
    let waves: BTreeSet<u32> = nodes.iter().map(|n| n.wave).collect();
    for wave in waves {
        let todo: Vec<&PlanNode> = nodes
            .iter()
            .filter(|n| n.wave == wave && !run.results.iter().any(|r| r.id == n.id))
            .collect();
        if todo.is_empty() {
            continue;
        }
        if ctx.budget.tool_calls_spent() {
            // Sub-agents that could call no tool would only fail: they wait instead.
            ctx.trace(|t| {
                t.limit.get_or_insert(LimitHit::TurnToolCalls);
            });
        }
        let held = !limited_before && over_limit(ctx);
        let mut jobs = Vec::new();
        for node in todo {
            // Waiting on a node a limit held: it waits too, for "continue".
            let after_held = node.depends_on.iter().any(|d| {
                run.results
                    .iter()
                    .any(|r| &r.id == d && r.status == NodeStatus::NotRun)
            });
            match blocked(node, &run.results) {
                // A dependency failed: skipped, limit or not ("continue" could not give
                // it its input either).
                Some(why) if !after_held => {
                    not_run(
                        ctx,
                        run,
                        node,
                        NodeResult::not_run(&node.id, NodeStatus::Skipped, why),
                    )
                    .await;
                    continue;
                }
                _ if held || after_held => {
                    // A limit tripped in an earlier wave: the rest waits for "continue".
                    hold(ctx, run, node, "one of its limits").await;
                    continue;
                }
                _ => {}
            }
            let given = inputs(node, &run.results).into_iter().cloned().collect();
            jobs.push(worker::job(planner, node, given));
        }
        // Every node of the wave may have been skipped.
        let results = if jobs.is_empty() {
            Vec::new()
        } else {
            // One span a wave, over its sub-agents' `invoke_agent` spans (D-33).
            let span = tracing::info_span!(
                "plan_wave",
                baton.plan.wave = wave,
                baton.plan.nodes = jobs.len()
            );
            dispatch(ctx, &jobs, &TextMode::Collect)
                .instrument(span)
                .await
        };
        let mut waiting = false;
        for (job, result) in jobs.into_iter().zip(results) {
            // A sub-agent that stopped for the user has no result yet (D-36).
            if result.status == AgentStatus::Awaiting {
                waiting = true;
            } else {
                run.results.push(worker::node_result(&job, &result));
            }
            work.jobs.push(job);
            work.results.push(result);
        }
        if waiting {
            // The turn waits with the wave's finished nodes kept; the rest of the step goes
            // on when the user answers.
            run.paused = Some(Box::new(checkpoint::build(ctx, run, step)));
            return;
        }
        run.waves_done = run.waves_done.max(wave);
        checkpoint::save(ctx, run, step).await;
    }
}

/// "Continue": runs the nodes a limit left last turn (their waves renumbered from 1), with
/// what their finished dependencies came to, then hands the planner all the results as if
/// it had asked for them.
pub(super) async fn continue_pending(
    ctx: &TurnCtx,
    planner: &Arc<Planner>,
    pending: PendingPlan,
    run: &mut PlanRun,
    work: &mut Work,
) {
    let first = pending.nodes.iter().map(|n| n.wave).min().unwrap_or(1);
    let nodes: Vec<PlanNode> = pending
        .nodes
        .into_iter()
        .map(|n| PlanNode {
            wave: n.wave - first + 1,
            ..n
        })
        .collect();
    ctx.trace(|t| {
        t.guard(
            GuardName::Continue,
            format!("resumed {} planned sub-agent(s)", nodes.len()),
        )
    });
    run.record.continued = nodes.iter().map(|n| n.id.clone()).collect();
    run.results = pending.inputs;
    let room = (ctx.budget.limits.max_subagents as usize).min(nodes.len());
    let (go, wait) = baton_core::plan::graph::split_at_room(nodes.clone(), room);
    announce(ctx, &nodes).await;
    run.nodes.extend(nodes);
    run.pending.extend(wait);
    let call_id = "continue".to_owned();
    let step = Step {
        text: String::new(),
        calls: vec![baton_core::plan::record::StepCall {
            id: call_id.clone(),
            name: GET_AGENT_RESULTS.to_owned(),
            args: "{}".to_owned(),
        }],
    };
    self::run(ctx, planner, run, &go, &step, work).await;
    if run.paused.is_some() {
        return;
    }
    let document = results_document(&run.nodes, &run.results, None).unwrap_or(Value::Null);
    run.messages.extend(tool_exchange(
        "",
        vec![AnsweredCall {
            id: call_id,
            name: GET_AGENT_RESULTS.to_owned(),
            input: JsonText::of(&Value::Object(Default::default())),
            status: ToolResultStatus::Ok,
            content: as_json_text(&document),
        }],
    ));
}
