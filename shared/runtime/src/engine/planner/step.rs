//! One step of the planner: the tool calls of one reply. Its dispatches are checked whole
//! and run in waves before any result is written; then every call gets its result, in the
//! order the planner made them.

use std::sync::Arc;

use baton_core::json_text::JsonText;
use baton_core::message::{AnsweredCall, ToolResultStatus, tool_exchange};
use baton_core::plan::graph::{StepLimits, split_at_room};
use baton_core::plan::outcome::{dispatch_document, results_document};
use baton_core::plan::record::StepCall;
use baton_core::plan::tools::skill_document;
use baton_core::plan::{
    DISPATCH_AGENT, Dispatch, GET_AGENT_RESULTS, GET_SKILL, StepProblem, accept_step,
};
use baton_core::registry::Planner;
use baton_core::trace::{GuardName, LimitHit};
use serde_json::Value;

use super::{PlanRun, Step, announce, hold, waves};
use crate::engine::context::TurnCtx;
use crate::engine::held::as_json_text;
use crate::engine::model_call::{RawCall, Reply};
use crate::engine::work::Work;

/// Runs one reply's calls and appends the step to the planner's conversation.
pub(super) async fn run(
    ctx: &TurnCtx,
    planner: &Arc<Planner>,
    run: &mut PlanRun,
    reply: Reply,
    work: &mut Work,
) {
    let refused = dispatch(ctx, planner, run, &reply, work).await;
    if run.paused.is_some() {
        // The step's calls are answered when the turn goes on after the user's answer.
        return;
    }
    answer(run, planner, &reply.text, &reply.calls, refused.as_deref());
}

/// Accepts the step's dispatches and runs them; the problems when it was refused.
async fn dispatch(
    ctx: &TurnCtx,
    planner: &Arc<Planner>,
    run: &mut PlanRun,
    reply: &Reply,
    work: &mut Work,
) -> Option<Vec<StepProblem>> {
    let calls: Vec<(String, Result<Dispatch, String>)> = reply
        .calls
        .iter()
        .filter(|c| c.name == DISPATCH_AGENT)
        .map(|c| (c.id.clone(), c.parse().and_then(|v| Dispatch::parse(&v))))
        .collect();
    if calls.is_empty() {
        return None;
    }
    let limits = StepLimits {
        default_tool_calls: planner.agent_tool_calls,
        max_tool_calls: planner.max_agent_tool_calls,
    };
    let nodes = match accept_step(
        &calls,
        &run.nodes,
        &planner.catalog,
        limits,
        run.next_wave(),
    ) {
        Ok(nodes) => nodes,
        Err(problems) => {
            let summary: Vec<String> = problems.iter().map(|p| p.problem.clone()).collect();
            tracing::info!(turn_id = %ctx.ids.turn_id, problems = %summary.join("; "), "planner step refused");
            ctx.trace(|t| t.guard(GuardName::PlanRefused, summary.join("; ")));
            run.record.refused.push(problems.clone());
            return Some(problems);
        }
    };
    let room = (ctx.budget.limits.max_subagents as usize).saturating_sub(run.dispatched());
    let (go, wait) = split_at_room(nodes.clone(), room);
    announce(ctx, &nodes).await;
    run.nodes.extend(nodes);
    if !wait.is_empty() {
        ctx.trace(|t| {
            t.limit.get_or_insert(LimitHit::TurnSubagents);
        });
        for node in &wait {
            hold(ctx, run, node, "its limit of sub-agents").await;
        }
    }
    if ctx.inner.config.routing_only {
        // Evals of the plan only: it is recorded; nobody runs.
        return None;
    }
    let step = Step {
        text: reply.text.clone(),
        calls: reply.calls.iter().map(step_call).collect(),
    };
    waves::run(ctx, planner, run, &go, &step, work).await;
    None
}

fn step_call(c: &RawCall) -> StepCall {
    StepCall {
        id: c.id.clone(),
        name: c.name.clone(),
        args: c.args.clone(),
    }
}

/// Appends the step to the planner's conversation: its calls, then one result for each.
pub(super) fn answer(
    run: &mut PlanRun,
    planner: &Planner,
    text: &str,
    calls: &[RawCall],
    refused: Option<&[StepProblem]>,
) {
    let mut answered = Vec::with_capacity(calls.len());
    for call in calls {
        let args = call.parse();
        let (status, content) = match args
            .as_ref()
            .map_err(String::clone)
            .and_then(|args| result_of(run, planner, call, args, refused))
        {
            Ok(doc) => (ToolResultStatus::Ok, as_json_text(&doc)),
            Err(message) => (ToolResultStatus::Error, Value::String(message)),
        };
        answered.push(AnsweredCall {
            id: call.id.clone(),
            name: call.name.clone(),
            input: JsonText::of(&args.unwrap_or_else(|_| Value::Object(Default::default()))),
            status,
            content,
        });
    }
    run.messages.extend(tool_exchange(text, answered));
}

/// One call's result: a document, or what went wrong in words the planner can act on.
fn result_of(
    run: &PlanRun,
    planner: &Planner,
    call: &RawCall,
    args: &Value,
    refused: Option<&[StepProblem]>,
) -> Result<Value, String> {
    match call.name.as_str() {
        GET_SKILL => {
            let domain = args
                .get("domain")
                .and_then(Value::as_str)
                .ok_or("get_skill needs a domain")?;
            skill_document(&planner.catalog, domain)
        }
        DISPATCH_AGENT => {
            if let Some(problems) = refused {
                let lines: Vec<String> = problems
                    .iter()
                    .map(|p| match &p.agent_id {
                        Some(id) => format!("- {id}: {}", p.problem),
                        None => format!("- {}", p.problem),
                    })
                    .collect();
                return Err(format!(
                    "Nothing in this step ran. Correct these and dispatch the whole step again:\n{}",
                    lines.join("\n")
                ));
            }
            let id = args
                .get("agent_id")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let node = run
                .nodes
                .iter()
                .find(|n| n.id == id && n.call_id == call.id)
                .ok_or_else(|| "This dispatch was not accepted.".to_owned())?;
            Ok(dispatch_document(
                node,
                run.results.iter().find(|r| r.id == node.id),
            ))
        }
        GET_AGENT_RESULTS => {
            let ids: Option<Vec<String>> = match args.get("agent_ids") {
                None | Some(Value::Null) => None,
                Some(v) => Some(
                    serde_json::from_value(v.clone())
                        .map_err(|_| "agent_ids must be a list of ids".to_owned())?,
                ),
            };
            let ids = ids.filter(|v| !v.is_empty());
            results_document(&run.nodes, &run.results, ids.as_deref())
        }
        other => Err(format!(
            "There is no tool {other}. Your tools are get_skill, dispatch_agent and get_agent_results."
        )),
    }
}
