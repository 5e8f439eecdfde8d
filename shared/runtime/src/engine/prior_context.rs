//! Prior context on a topic switch (D-18): what a specialist is told about the turn before
//! when the orchestrator gave it nothing.

use baton_core::registry::Agent;
use baton_core::trace::GuardName;

use super::context::TurnCtx;
use super::work::AgentJob;

/// The job's prior context: the orchestrator's, or filled by the runtime on an intent
/// switch when the orchestrator gave none (D-18).
pub(crate) fn prior_context(ctx: &TurnCtx, job: &AgentJob) -> Option<String> {
    job.prior_context
        .clone()
        .filter(|p| !p.trim().is_empty())
        .or_else(|| fill_prior_context(ctx, &job.agent))
}

const PRIOR_CONTEXT_CHARS: usize = 600;

fn fill_prior_context(ctx: &TurnCtx, agent: &Agent) -> Option<String> {
    let last = ctx.history.last()?;
    if last.segments.iter().any(|s| s.agent_id == *agent.id) {
        return None; // Not a switch: it already has its own history.
    }
    // The last turn first: it is what the switch is about, and the summary only gets what
    // room is left, so a long summary never pushes it out.
    let mut text = format!(
        "Last turn, the user said: {:?}. The assistant answered: {}",
        last.user_text, last.narration
    );
    if text.chars().count() > PRIOR_CONTEXT_CHARS {
        text = text.chars().take(PRIOR_CONTEXT_CHARS).collect::<String>() + "…";
    } else if let Some(summary) = ctx.summary.as_ref().filter(|s| !s.text.is_empty()) {
        let room = PRIOR_CONTEXT_CHARS - text.chars().count();
        let label = "\nEarlier: ";
        if room > label.len() + 40 {
            let budget = room - label.len();
            let earlier: String = if summary.text.chars().count() > budget {
                summary.text.chars().take(budget - 1).collect::<String>() + "…"
            } else {
                summary.text.clone()
            };
            text.push_str(label);
            text.push_str(&earlier);
        }
    }
    ctx.trace(|t| {
        t.guard(
            GuardName::PriorContext,
            format!("filled for {} from the last turn", agent.id),
        )
    });
    Some(text)
}
