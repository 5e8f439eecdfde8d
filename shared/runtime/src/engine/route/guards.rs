//! The guards between the orchestrator's tool calls and their execution (design.md §3 step
//! 5): unknown tool or invalid arguments, the `intent_count` failsafe (D-7), the echo
//! guard and the overlap guard (D-8), the fan-out cap (D-9), the turn's sub-agent limit
//! (D-15), then verbatim protection (D-8).

use std::sync::Arc;

use baton_core::guard::{echo, fanout, intent, overlap, verbatim};
use baton_core::ports::model::{CallPurpose, ModelRequest};
use baton_core::registry::{Agent, Orchestration, PICTURES_ARG};
use baton_core::trace::{DropReason, GuardName, LimitHit};
use baton_core::turn::PendingCall;
use serde_json::Value;

use super::Plan;
use crate::engine::context::TurnCtx;
use crate::engine::model_call::{self, Quiet, RawCall};
use crate::engine::work::AgentJob;

/// A candidate call to a sub-agent, before the guards are done with it.
struct Candidate {
    raw: RawCall,
    agent: Arc<Agent>,
    args: Value,
    /// The message's pictures the call passes on (D-42), checked.
    pictures: Vec<usize>,
}

impl Candidate {
    fn model_query(&self) -> &str {
        self.args
            .get("query")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
}

/// The guards between the routing call's tool calls and their execution, in order:
/// screening, the `intent_count` re-ask (D-7), echo and overlap (D-8), then the fan-out
/// cap, the turn's room and verbatim protection as the calls become jobs.
pub(super) async fn apply(
    ctx: &TurnCtx,
    orch: &Arc<Agent>,
    o: &Orchestration,
    request: ModelRequest,
    calls: Vec<RawCall>,
    iterations: &mut u32,
    plan: &mut Plan,
) {
    let mut candidates = screen(ctx, orch, calls, &mut plan.refused);

    // D-7: the model said there were more requests than it made calls for.
    let reported: Vec<u32> = candidates
        .iter()
        .filter_map(|c| c.args.get("intent_count").and_then(Value::as_u64))
        .map(|n| n.min(u64::from(u32::MAX)) as u32)
        .collect();
    let largest = reported.iter().copied().max().unwrap_or(0);
    ctx.trace(|t| t.intent_count = largest.max(candidates.len() as u32));
    let missing = intent::shortfall(&reported, candidates.len());
    if missing > 0 && *iterations < ctx.budget.limits.max_iterations {
        let tools: Vec<&str> = orch.model_tools.iter().map(|t| &*t.name).collect();
        let note = intent::reminder(largest, candidates.len(), &tools);
        let mut again = request;
        again.purpose = CallPurpose::Reminder;
        again.system = orch.prompt.system(&ctx.dynamic(), Some(&note));
        *iterations += 1;
        ctx.trace(|t| t.retries += 1);
        let added = match model_call::call(ctx, orch, &again, &mut Quiet).await {
            Ok(r) => {
                let before = candidates.len();
                for c in screen(ctx, orch, r.calls, &mut plan.refused) {
                    if !candidates.iter().any(|k| k.agent.id == c.agent.id) {
                        candidates.push(c);
                    }
                }
                candidates.len() - before
            }
            Err(e) => {
                tracing::warn!(error = %e, "intent_count re-ask failed");
                0
            }
        };
        ctx.trace(|t| {
            t.guard(
                GuardName::IntentCount,
                format!(
                    "reported {largest}, called {}; re-asked once and added {added}",
                    largest as usize - missing as usize
                ),
            )
        });
    }

    // D-8 echo: a short reply to a specialist's question goes back to that specialist.
    if candidates.len() == 1
        && let Some(agent) = echo_agent(ctx, o)
        && candidates[0].agent.id != agent.id
    {
        ctx.trace(|t| {
            t.guard(
                GuardName::Echo,
                format!(
                    "short reply echoes {}'s question; rerouted from {}",
                    agent.id, candidates[0].agent.id
                ),
            )
        });
        // The pictures go where the call now goes, only if that card takes them.
        let sent = ctx.asked.pictures.len();
        candidates[0].pictures = agent
            .pictures_passed(&candidates[0].args, sent)
            .unwrap_or_default();
        candidates[0].agent = agent;
    }

    // D-8 overlap: in mixed intent a call sharing no content word with the user is dropped.
    if candidates.len() > 1 {
        let queries: Vec<&str> = candidates.iter().map(Candidate::model_query).collect();
        let keep = overlap::keep_overlapping(&ctx.asked.user_text, &queries);
        if keep.len() < candidates.len() {
            let mut i = 0;
            candidates.retain(|c| {
                let kept = keep.contains(&i);
                i += 1;
                if !kept {
                    ctx.trace(|t| {
                        t.drop_call(&c.raw.name, DropReason::NoOverlap);
                        t.guard(
                            GuardName::Overlap,
                            format!("dropped {}: no word in common with the message", c.raw.name),
                        );
                    });
                }
                kept
            });
        }
    }

    let room = ctx.budget.limits.max_subagents as usize;
    let (jobs, pending) = into_jobs(
        ctx,
        candidates,
        o.fanout_cap as usize,
        room,
        &mut plan.refused,
    );
    plan.pending = pending;
    if jobs.is_empty() && plan.pending.is_empty() {
        let fallback = fallback_agent(ctx);
        ctx.trace(|t| {
            t.guard(
                GuardName::Fallback,
                format!("no usable call; routed to {}", fallback.id),
            )
        });
        plan.jobs.push(verbatim_job(ctx, fallback, "fallback"));
        return;
    }
    plan.jobs = jobs;
}

/// The last guards, shared by routing and later rounds: the fan-out cap (D-9: over-cap
/// calls never run), the turn's sub-agent room (D-15: the rest waits for "continue"),
/// then verbatim protection (D-8) as each call becomes a job.
fn into_jobs(
    ctx: &TurnCtx,
    candidates: Vec<Candidate>,
    cap: usize,
    room: usize,
    refused: &mut Vec<(RawCall, String)>,
) -> (Vec<AgentJob>, Vec<PendingCall>) {
    let (mut kept, over, behavior) = fanout::apply_cap(candidates, cap);
    ctx.trace(|t| {
        // Across rounds the record keeps the closest the turn came to the cap.
        t.cap_behavior = t.cap_behavior.max(behavior);
        for c in &over {
            t.drop_call(&c.raw.name, DropReason::OverCap);
        }
    });
    for c in over {
        refused.push((
            c.raw,
            "Not run: more specialists were asked than this assistant consults at once.".into(),
        ));
    }
    let mut pending = Vec::new();
    if kept.len() > room {
        for c in kept.split_off(room) {
            ctx.trace(|t| {
                t.drop_call(&c.raw.name, DropReason::Limit);
                t.limit.get_or_insert(LimitHit::TurnSubagents);
            });
            pending.push(PendingCall {
                agent_id: c.agent.id.to_string(),
                query: c.model_query().to_owned(),
            });
        }
    }
    let calls = kept.len();
    let jobs = kept
        .into_iter()
        .map(|c| {
            let v = verbatim::effective_query(&ctx.asked.user_text, c.model_query(), calls);
            if v.overridden {
                ctx.trace(|t| {
                    t.guard(
                        GuardName::Verbatim,
                        format!("{}: the user's exact words were used", c.agent.id),
                    )
                });
            }
            job(c, v.query)
        })
        .collect();
    (jobs, pending)
}

/// Unknown tools, unparsable or schema-failing arguments and duplicates are refused here.
fn screen(
    ctx: &TurnCtx,
    orch: &Agent,
    calls: Vec<RawCall>,
    refused: &mut Vec<(RawCall, String)>,
) -> Vec<Candidate> {
    let subs = ctx.inner.registry.sub_agents(orch);
    let mut out: Vec<Candidate> = Vec::new();
    for raw in calls {
        let Some(agent) = subs.iter().find(|a| a.ask_tool_name() == raw.name) else {
            ctx.trace(|t| t.drop_call(&raw.name, DropReason::UnknownTool));
            tracing::warn!(tool = %raw.name, "orchestrator called an unknown tool");
            refused.push((raw, "There is no such tool.".into()));
            continue;
        };
        // A picture number that names none is refused like any invalid argument: the
        // orchestrator reads why in the call's result.
        let sent = ctx.asked.pictures.len();
        let checked = raw.parse().and_then(|a| {
            agent.check_ask_args(&a)?;
            let pictures = agent.pictures_passed(&a, sent)?;
            Ok((a, pictures))
        });
        let (args, pictures) = match checked {
            Ok(checked) => checked,
            Err(problem) => {
                ctx.trace(|t| t.drop_call(&raw.name, DropReason::InvalidArgs));
                tracing::warn!(tool = %raw.name, %problem, "orchestrator call with invalid arguments");
                refused.push((raw, format!("The arguments were invalid: {problem}")));
                continue;
            }
        };
        if out.iter().any(|c| c.agent.id == agent.id) {
            ctx.trace(|t| t.drop_call(&raw.name, DropReason::Duplicate));
            refused.push((raw, "Already asked in this turn.".into()));
            continue;
        }
        out.push(Candidate {
            raw,
            agent: agent.clone(),
            args,
            pictures,
        });
    }
    out
}

/// Calls the orchestrator makes while composing: screened, capped, and limited to `room`
/// more sub-agents; the rest becomes pending work.
pub(crate) fn follow_up(
    ctx: &TurnCtx,
    calls: Vec<RawCall>,
    room: usize,
) -> (Vec<AgentJob>, Vec<(RawCall, String)>, Vec<PendingCall>) {
    let orch = ctx.orchestrator.clone();
    let cap = orch
        .orchestration
        .as_ref()
        .map(|o| o.fanout_cap as usize)
        .unwrap_or(1);
    let mut refused = Vec::new();
    let candidates = screen(ctx, &orch, calls, &mut refused);
    let (jobs, pending) = into_jobs(ctx, candidates, cap, room, &mut refused);
    (jobs, refused, pending)
}

fn job(c: Candidate, query: String) -> AgentJob {
    let mut extra = match c.args {
        Value::Object(map) => map,
        _ => Default::default(),
    };
    let prior_context = extra
        .remove("prior_context")
        .and_then(|v| v.as_str().map(str::to_owned));
    extra.remove("query");
    extra.remove("intent_count");
    // Passed as pictures, never as words in the request's details (on any card: the name is
    // reserved).
    extra.remove(PICTURES_ARG);
    if extra.is_empty() {
        // An emptied map still holds its node (640 bytes) for as long as the turn runs.
        extra = Default::default();
    }
    AgentJob {
        agent: c.agent,
        call_id: c.raw.id,
        query,
        prior_context,
        extra,
        worker: None,
        pictures: c.pictures,
    }
}

pub(super) fn fallback_agent(ctx: &TurnCtx) -> Arc<Agent> {
    let orch = &ctx.orchestrator;
    let o = orch.orchestration.as_ref();
    let id = o
        .and_then(|o| o.fastpath.as_ref().map(|f| f.fallback.clone()))
        .or_else(|| o.and_then(|o| o.sub_agents.first().cloned()));
    id.and_then(|id| ctx.inner.registry.agent(&id).cloned())
        .unwrap_or_else(|| orch.clone())
}

/// A job that hands the user's exact text to `agent` (`why` names the call), with the
/// message's pictures when its card takes them.
pub(super) fn verbatim_job(ctx: &TurnCtx, agent: Arc<Agent>, why: &str) -> AgentJob {
    AgentJob {
        call_id: format!("{why}_0"),
        pictures: ctx.all_pictures_for(&agent),
        agent,
        query: ctx.asked.user_text.clone(),
        prior_context: None,
        extra: Default::default(),
        worker: None,
    }
}

/// The sub-agent of this orchestrator whose question the user's short reply echoes (last
/// turn only): the echo guard (D-8), on every path of the routing call.
pub(super) fn echo_agent(ctx: &TurnCtx, o: &Orchestration) -> Option<Arc<Agent>> {
    let target = echo_target(ctx)?;
    if !o.sub_agents.iter().any(|s| s.as_ref() == target) {
        return None;
    }
    ctx.inner.registry.agent(target).cloned()
}

fn echo_target(ctx: &TurnCtx) -> Option<&str> {
    let last = ctx.asked.history.last()?;
    let seg = last
        .segments
        .iter()
        .rev()
        .find(|s| echo::last_question(&s.text).is_some())?;
    let question = echo::last_question(&seg.text)?;
    let pending = echo::PendingQuestion {
        agent_id: &seg.agent_id,
        text: question,
    };
    echo::echo_target(&ctx.asked.user_text, Some(&pending))
}
