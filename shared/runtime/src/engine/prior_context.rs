//! Prior context on a topic switch (D-18): what a specialist is told about the turns before
//! when the orchestrator gave it nothing: the user's words, the answer only when the
//! assistant composed it, newest turn first, and as much of the orchestrator's summary as
//! fits.

use std::sync::Mutex;

use baton_core::registry::Agent;
use baton_core::trace::{GuardName, RoutingRecord};

use super::context::{Asked, edit};
use super::work::AgentJob;

/// The job's prior context: the orchestrator's, or filled by the runtime on an intent
/// switch when the orchestrator gave none (D-18).
/// What it fills in is noted in `trace`.
pub(crate) fn prior_context(
    asked: &Asked,
    trace: &Mutex<RoutingRecord>,
    job: &AgentJob,
) -> Option<String> {
    job.prior_context
        .clone()
        .filter(|p| !p.trim().is_empty())
        .or_else(|| {
            let text = fill_prior_context(asked, &job.agent)?;
            edit(trace, |t| {
                t.guard(
                    GuardName::PriorContext,
                    format!("filled for {} from the last turn", job.agent.id),
                )
            });
            Some(text)
        })
}

const PRIOR_CONTEXT_CHARS: usize = 600;

fn fill_prior_context(asked: &Asked, agent: &Agent) -> Option<String> {
    let last = asked.history.last()?;
    if last.segments.iter().any(|s| s.agent_id == *agent.id) {
        return None; // Not a switch: it already has its own history.
    }
    // The last turn first: it is what the switch is about. Then the turns before it, newest
    // first, and the summary, each only as room is left: a reference to something said two
    // turns back ("the store from that receipt") resolves, and nothing pushes the last turn
    // out.
    let mut text = format!("Last turn, {}", turn_told(last));
    if text.chars().count() > PRIOR_CONTEXT_CHARS {
        text = text.chars().take(PRIOR_CONTEXT_CHARS).collect::<String>() + "…";
    } else {
        let earlier = asked
            .history
            .iter()
            .rev()
            .skip(1)
            .map(|t| format!("Before that, {}", turn_told(t)));
        let summary = asked
            .summary
            .as_ref()
            .filter(|s| !s.text.is_empty())
            .map(|s| format!("Earlier: {}", s.text));
        for part in earlier.chain(summary) {
            let room = PRIOR_CONTEXT_CHARS.saturating_sub(text.chars().count() + 1);
            if room < 40 {
                break;
            }
            text.push('\n');
            if part.chars().count() > room {
                text.extend(part.chars().take(room - 1));
                text.push('…');
                break;
            }
            text.push_str(&part);
        }
    }
    Some(text)
}

/// What another specialist may be told of `turn`: the user's words, and the answer when
/// the assistant composed it, or only who answered.
fn turn_told(turn: &baton_core::turn::TurnRecord) -> String {
    match answer_in_the_assistants_voice(turn) {
        Some(answer) => format!(
            "the user said: {:?}. The assistant answered: {answer}",
            turn.user_text
        ),
        None => {
            let who: Vec<String> = turn.consulted.iter().map(|c| c.label.clone()).collect();
            format!(
                "the user said: {:?}, and {} answered it.",
                turn.user_text,
                if who.is_empty() {
                    "the assistant".to_owned()
                } else {
                    who.join(" and ")
                }
            )
        }
    }
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
