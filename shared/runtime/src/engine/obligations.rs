//! Obligations (D-22): a turn that must consult a specialist never ends without it.
//!
//! When the orchestrator's plan leaves a required specialist out, it is reminded with its
//! tool choice forced to that specialist's `ask_<id>`, a bounded number of times (only if
//! its model can be forced); if it still does not call it, the runtime asks the specialist
//! with the user's text itself. Every step is recorded in the routing record.

use baton_core::obligation::{self, Obligation, ObligationRule};
use baton_core::ports::model::{CallPurpose, ToolChoice};
use baton_core::registry::Agent;
use baton_core::trace::{
    CapBehavior, DropReason, InterventionKind, LimitHit, ObligationMet, ObligationRecord,
};
use baton_core::turn::PendingCall;

use super::context::TurnCtx;
use super::model_call::{self, Quiet};
use super::route::{self, Plan};
use super::work::AgentJob;

/// Reminders with a forced tool choice per obligation before the runtime steps in.
const MAX_REMINDERS: u32 = 2;

/// The obligations of an orchestrator-routed turn known before it routes: the request's,
/// then the card's rules that fire on the user's text (category rules wait for its calls).
pub(crate) fn due(ctx: &TurnCtx) -> Vec<Obligation> {
    obligation::for_turn(rules(ctx), &ctx.asked.user_text, &ctx.asked.must_consult)
}

/// The orchestrator card's obligation rules.
fn rules(ctx: &TurnCtx) -> &[ObligationRule] {
    ctx.orchestrator
        .orchestration
        .as_ref()
        .map(|o| o.obligations.as_slice())
        .unwrap_or_default()
}

/// Makes sure every obligation is in the plan's jobs. `routed` says whether the
/// orchestrator made a plan at all; when it could not, it is not reminded either.
pub(crate) async fn enforce(ctx: &TurnCtx, plan: &mut Plan, iterations: &mut u32, routed: bool) {
    let mut obligations = due(ctx);
    // Category rules fire on how the orchestrator filed its calls.
    let calls: Vec<_> = plan.jobs.iter().map(|j| &j.extra).collect();
    let filed = obligation::for_calls(rules(ctx), &calls, &obligations);
    obligations.extend(filed);
    if obligations.is_empty() {
        return;
    }
    for ob in &obligations {
        let Some(agent) = ctx.inner.registry.agent(&ob.agent_id).cloned() else {
            // Checked when the registry and the request were read; nothing to consult.
            tracing::warn!(agent = %ob.agent_id, "obligation names no known specialist");
            continue;
        };
        if plan.jobs.iter().any(|j| j.agent.id == agent.id) {
            record(ctx, ob, ObligationMet::ByModel, 0);
            continue;
        }
        let (job, reminders) = if routed {
            remind(ctx, &agent, iterations).await
        } else {
            (None, 0)
        };
        let (job, met) = match job {
            Some(job) => (job, ObligationMet::AfterReminder),
            None => {
                let why = if routed {
                    format!(
                        "the orchestrator did not consult {} after {reminders} reminder(s)",
                        agent.id
                    )
                } else {
                    "the orchestrator could not route this turn".to_owned()
                };
                ctx.trace(|t| {
                    t.intervene(
                        InterventionKind::RuntimeConsult,
                        &agent.id,
                        format!("{why}; the runtime asked it with the user's text"),
                    )
                });
                let job = AgentJob {
                    agent: agent.clone(),
                    call_id: format!("obligation_{}", agent.id),
                    query: ctx.asked.user_text.clone(),
                    prior_context: None,
                    extra: Default::default(),
                    worker: None,
                    pictures: ctx.all_pictures_for(&agent),
                };
                (job, ObligationMet::ByRuntime)
            }
        };
        record(ctx, ob, met, reminders);
        // A text-only answer cannot end a turn that owes a consultation.
        plan.fastpath = false;
        plan.jobs.push(job);
    }
    fit(ctx, plan, &obligations);
}

/// The fan-out cap (D-9) and the turn's room (D-15) hold with obligations in the plan:
/// the owed specialists go first, then the orchestrator's own calls, and whatever does
/// not fit does not run. The orchestrator's calls over it are dropped as over the cap;
/// owed specialists over it (more obligations than the cap) wait for "continue", and the
/// turn says so.
fn fit(ctx: &TurnCtx, plan: &mut Plan, obligations: &[Obligation]) {
    let cap = ctx
        .orchestrator
        .orchestration
        .as_ref()
        .map_or(usize::MAX, |o| o.fanout_cap as usize);
    let fits = cap.min(ctx.budget.limits.max_subagents as usize);
    if plan.jobs.len() <= fits {
        return;
    }
    let owed = |id: &str| obligations.iter().any(|o| o.agent_id == id);
    let (mut jobs, others): (Vec<_>, Vec<_>) = std::mem::take(&mut plan.jobs)
        .into_iter()
        .partition(|j| owed(&j.agent.id));
    let requested = jobs.len() + others.len();
    let deferred = if jobs.len() > fits {
        jobs.split_off(fits)
    } else {
        Vec::new()
    };
    let room = fits - jobs.len();
    let mut others = others.into_iter();
    jobs.extend(others.by_ref().take(room));
    ctx.trace(|t| {
        t.cap_behavior = t.cap_behavior.max(CapBehavior::of(requested, cap));
        for j in others.as_slice() {
            t.drop_call(j.agent.ask_tool_name(), DropReason::OverCap);
        }
        for j in &deferred {
            t.drop_call(j.agent.ask_tool_name(), DropReason::OverCap);
            t.limit.get_or_insert(LimitHit::FanoutCap);
            for r in t
                .obligations
                .iter_mut()
                .filter(|r| r.agent_id == *j.agent.id)
            {
                r.met = ObligationMet::Deferred;
            }
        }
    });
    for j in others {
        let args = j.executed_args(requested).to_string();
        plan.refused.push((
            super::model_call::RawCall {
                id: j.call_id,
                name: j.agent.ask_tool_name().to_owned(),
                args,
            },
            "Not run: this turn had to consult other specialists first, and no more fit at once."
                .into(),
        ));
    }
    plan.pending
        .extend(deferred.into_iter().map(|j| PendingCall {
            agent_id: j.agent.id.to_string(),
            query: j.query,
        }));
    plan.jobs = jobs;
}

/// Reminds the orchestrator, its tool choice forced to the specialist, until it calls it
/// or the reminders (or the turn's iterations) run out. The call it makes goes through
/// the same guards as any other.
async fn remind(ctx: &TurnCtx, agent: &Agent, iterations: &mut u32) -> (Option<AgentJob>, u32) {
    let orch = ctx.orchestrator.clone();
    let mut reminders = 0;
    if !orch.model.capabilities.tool_choice {
        return (None, 0);
    }
    let tool = agent.ask_tool_name().to_owned();
    let note = format!(
        "This turn must consult {label}. Call {tool} with the user's request before you answer.",
        label = agent.label
    );
    while reminders < MAX_REMINDERS && *iterations < ctx.budget.limits.max_iterations {
        reminders += 1;
        *iterations += 1;
        ctx.trace(|t| {
            t.retries += 1;
            t.intervene(
                InterventionKind::ForcedToolChoice,
                &agent.id,
                format!("reminder {reminders}: tool choice forced to {tool}"),
            );
        });
        let mut request = orch.request(
            CallPurpose::Reminder,
            orch.prompt.system(&ctx.dynamic(), Some(&note)),
        );
        request.messages = route::conversation(&ctx.asked);
        request.tool_choice = ToolChoice::Tool(tool.clone());
        let reply = match model_call::call(ctx, &orch, &request, &mut Quiet).await {
            Ok(reply) => reply,
            Err(e) => {
                tracing::warn!(turn_id = %ctx.ids.turn_id, error = %e, "obligation reminder failed");
                break;
            }
        };
        let calls: Vec<_> = reply.calls.into_iter().filter(|c| c.name == tool).collect();
        if calls.is_empty() {
            continue;
        }
        let (mut jobs, _, _) = route::follow_up(ctx, calls, 1);
        if let Some(job) = jobs.pop() {
            return (Some(job), reminders);
        }
    }
    (None, reminders)
}

fn record(ctx: &TurnCtx, ob: &Obligation, met: ObligationMet, reminders: u32) {
    ctx.trace(|t| {
        t.obligations.push(ObligationRecord {
            agent_id: ob.agent_id.clone(),
            source: ob.source,
            met,
            reminders,
        })
    });
}
