//! The orchestrator's routing call and the guards between its tool calls and their
//! execution (DESIGN §3 step 5): unknown tool or invalid arguments, the `intent_count`
//! failsafe (D-7), the echo guard and the overlap guard (D-8), the fan-out cap (D-9), the
//! turn's sub-agent limit (D-15), then verbatim protection (D-8). Text-only answers pass
//! only for the Fastpath allowlist (D-14).

use std::sync::Arc;

use baton_core::events::{Event, SOURCE_ORCHESTRATOR};
use baton_core::guard::{echo, fanout, fastpath, intent, overlap, verbatim};
use baton_core::message::Message;
use baton_core::ports::model::{CallPurpose, ModelError};
use baton_core::registry::Agent;
use baton_core::trace::DropReason;
use baton_core::turn::PendingCall;
use serde_json::Value;

use super::context::TurnCtx;
use super::model_call::{self, Quiet, RawCall, Sink};
use super::subagent::AgentJob;

/// What routing decided.
#[derive(Default)]
pub(crate) struct Plan {
    /// Sub-agents to run.
    pub(crate) jobs: Vec<AgentJob>,
    /// Calls that were refused, with the error result the orchestrator will see.
    pub(crate) refused: Vec<(RawCall, String)>,
    /// The orchestrator's text (preamble, or the whole answer on the Fastpath).
    pub(crate) text: String,
    /// A text-only answer was allowed (no sub-agent).
    pub(crate) fastpath: bool,
    /// Work not started because of a turn limit.
    pub(crate) pending: Vec<PendingCall>,
}

/// A candidate call to a sub-agent, before the guards are done with it.
struct Candidate {
    raw: RawCall,
    agent: Arc<Agent>,
    args: Value,
}

impl Candidate {
    fn model_query(&self) -> &str {
        self.args
            .get("query")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
}

/// Streams the preamble: live at once when the message is Fastpath-eligible; otherwise
/// held until a tool call starts, so a non-allowlisted text-only answer never shows.
struct PreambleSink<'a> {
    ctx: &'a TurnCtx,
    live: bool,
    held: String,
}

impl Sink for PreambleSink<'_> {
    async fn text(&mut self, text: &str) {
        if self.live {
            self.ctx.out.text(SOURCE_ORCHESTRATOR, text).await;
        } else {
            self.held.push_str(text);
        }
    }

    async fn reasoning(&mut self, text: &str) {
        self.ctx
            .out
            .emit(Event::Reasoning {
                source: SOURCE_ORCHESTRATOR.to_owned(),
                text: text.to_owned(),
            })
            .await;
    }

    async fn tool_start(&mut self) {
        if !self.live {
            self.live = true;
            let held = std::mem::take(&mut self.held);
            self.ctx.out.text(SOURCE_ORCHESTRATOR, &held).await;
        }
    }
}

/// The messages the orchestrator sees before this turn's calls: recent narration and the
/// user's text (tool messages never enter model context, D-19).
pub(crate) fn conversation(ctx: &TurnCtx) -> Vec<Message> {
    let mut messages = Vec::with_capacity(ctx.history.len() * 2 + 1);
    for turn in &ctx.history {
        messages.push(Message::user(turn.user_text.clone()));
        if !turn.narration.is_empty() {
            messages.push(Message::assistant(turn.narration.clone()));
        }
    }
    messages.push(Message::user(ctx.user_text.clone()));
    messages
}

/// Makes the routing call and applies the guards.
pub(crate) async fn route(ctx: &TurnCtx, iterations: &mut u32) -> Result<Plan, ModelError> {
    let orch = ctx.orchestrator.clone();
    let Some(o) = orch.orchestration.as_ref() else {
        return Err(ModelError::Invalid(
            "the entry agent is not an orchestrator".into(),
        ));
    };
    let allow = o
        .fastpath
        .as_ref()
        .map(|f| f.allow.as_slice())
        .unwrap_or_default();
    let category = fastpath::allowed(&ctx.user_text, allow);

    let mut request = orch.request(CallPurpose::Route, orch.prompt.system(&ctx.dynamic(), None));
    request.messages = conversation(ctx);
    let mut sink = PreambleSink {
        ctx,
        live: category.is_some(),
        held: String::new(),
    };
    *iterations += 1;
    let reply = model_call::call(ctx, &orch, &request, &mut sink).await?;
    let mut plan = Plan {
        text: reply.text.clone(),
        ..Plan::default()
    };

    if reply.calls.is_empty() {
        if let Some(category) = category.filter(|_| !reply.text.trim().is_empty()) {
            ctx.trace(|t| t.fastpath = Some(category.to_owned()));
            plan.fastpath = true;
            return Ok(plan);
        }
        let fallback = fallback_agent(ctx);
        ctx.trace(|t| {
            t.guard(
                "fastpath",
                format!(
                    "text-only answer to a message outside the allowlist; rerouted to {}",
                    fallback.id
                ),
            )
        });
        plan.text.clear();
        plan.jobs.push(fallback_job(ctx, fallback, "fastpath"));
        return Ok(plan);
    }

    let mut candidates = screen(ctx, &orch, reply.calls, &mut plan.refused);

    // D-7: the model said there were more requests than it made calls for.
    let reported: Vec<u32> = candidates
        .iter()
        .filter_map(|c| c.args.get("intent_count").and_then(Value::as_u64))
        .map(|n| n.min(u64::from(u32::MAX)) as u32)
        .collect();
    let largest = reported.iter().copied().max().unwrap_or(0);
    ctx.trace(|t| t.intent_count = largest.max(candidates.len() as u32));
    let missing = intent::shortfall(&reported, candidates.len());
    if missing > 0 && *iterations < ctx.limits.max_iterations {
        let tools: Vec<&str> = orch.model_tools.iter().map(|t| &*t.name).collect();
        let note = intent::reminder(largest, candidates.len(), &tools);
        let mut again = request;
        again.purpose = CallPurpose::Reminder;
        again.system = orch.prompt.system(&ctx.dynamic(), Some(&note));
        *iterations += 1;
        ctx.trace(|t| t.retries += 1);
        let added = match model_call::call(ctx, &orch, &again, &mut Quiet).await {
            Ok(r) => {
                let before = candidates.len();
                for c in screen(ctx, &orch, r.calls, &mut plan.refused) {
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
                "intent_count",
                format!(
                    "reported {largest}, called {}; re-asked once and added {added}",
                    largest as usize - missing as usize
                ),
            )
        });
    }

    // D-8 echo: a short reply to a specialist's question goes back to that specialist.
    if candidates.len() == 1
        && let Some(target) = echo_target(ctx)
        && candidates[0].agent.id.as_ref() != target
        && let Some(agent) = ctx
            .inner
            .registry
            .agent(target)
            .filter(|_| o.sub_agents.iter().any(|s| s.as_ref() == target))
    {
        ctx.trace(|t| {
            t.guard(
                "echo",
                format!(
                    "short reply echoes {target}'s question; rerouted from {}",
                    candidates[0].agent.id
                ),
            )
        });
        candidates[0].agent = agent.clone();
    }

    // D-8 overlap: in mixed intent a call sharing no content word with the user is dropped.
    if candidates.len() > 1 {
        let queries: Vec<&str> = candidates.iter().map(Candidate::model_query).collect();
        let keep = overlap::keep_overlapping(&ctx.user_text, &queries);
        if keep.len() < candidates.len() {
            let mut i = 0;
            candidates.retain(|c| {
                let kept = keep.contains(&i);
                i += 1;
                if !kept {
                    ctx.trace(|t| {
                        t.drop_call(&c.raw.name, DropReason::NoOverlap);
                        t.guard(
                            "overlap",
                            format!("dropped {}: no word in common with the message", c.raw.name),
                        );
                    });
                }
                kept
            });
        }
    }

    let room = ctx.limits.max_subagents as usize;
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
                "fallback",
                format!("no usable call; routed to {}", fallback.id),
            )
        });
        plan.jobs.push(fallback_job(ctx, fallback, "fallback"));
        return Ok(plan);
    }
    plan.jobs = jobs;
    Ok(plan)
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
                t.limit.get_or_insert_with(|| "turn_subagents".to_owned());
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
            let v = verbatim::effective_query(&ctx.user_text, c.model_query(), calls);
            if v.overridden {
                ctx.trace(|t| {
                    t.guard(
                        "verbatim",
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
        let args = match raw
            .parse()
            .and_then(|a| agent.check_ask_args(&a).map(|()| a))
        {
            Ok(a) => a,
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
    AgentJob {
        agent: c.agent,
        call_id: c.raw.id,
        query,
        prior_context,
        extra,
    }
}

fn fallback_agent(ctx: &TurnCtx) -> Arc<Agent> {
    let orch = &ctx.orchestrator;
    let o = orch.orchestration.as_ref();
    let id = o
        .and_then(|o| o.fastpath.as_ref().map(|f| f.fallback.clone()))
        .or_else(|| o.and_then(|o| o.sub_agents.first().cloned()));
    id.and_then(|id| ctx.inner.registry.agent(&id).cloned())
        .unwrap_or_else(|| orch.clone())
}

fn fallback_job(ctx: &TurnCtx, agent: Arc<Agent>, why: &str) -> AgentJob {
    AgentJob {
        call_id: format!("{why}_0"),
        agent,
        query: ctx.user_text.clone(),
        prior_context: None,
        extra: Default::default(),
    }
}

/// The sub-agent whose question the user's short reply echoes (last turn only).
fn echo_target(ctx: &TurnCtx) -> Option<&str> {
    let last = ctx.history.last()?;
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
    echo::echo_target(&ctx.user_text, Some(&pending))
}

/// Jobs for work a limit stopped last turn, resumed on "continue" (D-15).
pub(crate) fn resume(ctx: &TurnCtx, pending: &[PendingCall]) -> Plan {
    let mut plan = Plan::default();
    for (i, p) in pending.iter().enumerate() {
        let Some(agent) = ctx.inner.registry.agent(&p.agent_id).cloned() else {
            continue;
        };
        plan.jobs.push(AgentJob {
            call_id: format!("continue_{i}"),
            agent,
            query: p.query.clone(),
            prior_context: None,
            extra: Default::default(),
        });
    }
    ctx.trace(|t| {
        t.guard(
            "continue",
            format!("resumed {} pending call(s)", plan.jobs.len()),
        )
    });
    plan
}

/// Whether the user's text says "go on" to an offer to continue.
pub(crate) fn is_continue(text: &str) -> bool {
    const YES: &[&str] = &[
        "yes",
        "y",
        "yeah",
        "yep",
        "sure",
        "ok",
        "okay",
        "continue",
        "go on",
        "go ahead",
        "please do",
        "yes please",
        "do it",
        "carry on",
        "keep going",
    ];
    let t: String = text.trim().trim_end_matches(['.', '!']).to_lowercase();
    YES.contains(&t.as_str())
}
