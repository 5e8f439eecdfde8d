//! Prior context on a topic switch (D-18): what a specialist is told about the turn before
//! when the orchestrator gave it nothing: the user's words, the answer only when the
//! assistant composed it, and as much of the orchestrator's summary as fits.

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
    let mut text = match answer_in_the_assistants_voice(last) {
        Some(answer) => format!(
            "Last turn, the user said: {:?}. The assistant answered: {answer}",
            last.user_text
        ),
        None => {
            let who: Vec<String> = last.consulted.iter().map(|c| c.label.clone()).collect();
            format!(
                "Last turn, the user said: {:?}, and {} answered it.",
                last.user_text,
                if who.is_empty() {
                    "the assistant".to_owned()
                } else {
                    who.join(" and ")
                }
            )
        }
    };
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

/// The answer of `turn` as the user saw it, when it was the assistant's own composition;
/// `None` when it was a specialist's own words (its Direct Line answer, or its text passed
/// through as it came): those are that specialist's alone (D-17), and another specialist
/// is told only who answered.
fn answer_in_the_assistants_voice(turn: &baton_core::turn::TurnRecord) -> Option<&str> {
    if turn.direct.is_some() {
        return None;
    }
    let verbatim = turn
        .segments
        .iter()
        .map(|s| s.text.trim())
        .any(|t| !t.is_empty() && turn.narration.contains(t));
    (!verbatim).then_some(turn.narration.as_str())
}
