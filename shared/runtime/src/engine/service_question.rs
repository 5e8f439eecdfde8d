//! A service's question mid-call (an MCP elicitation, D-36), answered: the user's words
//! fill the service's form and the call is made again with them; an answer that does not
//! fill it is asked again, saying why, and a service that keeps asking is given up on.

use std::sync::Arc;

use baton_core::input::{InputAsked, InputGiven, MAX_INPUT_ASKS};
use baton_core::interruption::{Answer, HeldAnswer, HeldCall, args_sha256};
use baton_core::message::ToolResultStatus;
use baton_core::tool_result::{DataStatus, ToolData};

use super::context::TurnCtx;
use super::held::{acting_call, as_json_text, tool_status};
use super::status::Board;
use super::tools;
use super::work::AgentJob;

/// What the held call the service asked `asked` about comes to, given the user's
/// `answer`: its result, or `None` with `held.asked` set when it waits for the user again.
/// `data` gets the outcome of a call made again.
#[allow(clippy::too_many_arguments)] // the turn, the call and where its outcome goes
pub(super) async fn answer(
    ctx: &TurnCtx,
    job: &AgentJob,
    run: u32,
    status: &Board,
    held: &mut HeldCall,
    asked: InputAsked,
    answer: Answer,
    data: &mut Vec<DataStatus>,
) -> Option<HeldAnswer> {
    let words = match answer {
        Answer::Text(words) => words,
        // "Approve" on a face that has only buttons: the form as it stands.
        Answer::Approve => "ok".to_owned(),
        Answer::Decline => {
            return Some(not_done(
                &held.name,
                "The user chose not to answer the service's question, so nothing was done.",
            ));
        }
    };
    let next = asked.asked_before + 1;
    let content = match asked.content_from(&words) {
        Ok(content) => content,
        Err(problem) if next < MAX_INPUT_ASKS && ctx.pausable => {
            held.asked = Some(InputAsked {
                asked_before: next,
                problem: Some(problem),
                ..asked
            });
            return None;
        }
        Err(_) => {
            return Some(not_done(
                &held.name,
                "Not done: the user's answers did not fill in what the service asked for. Tell the user it could not be done.",
            ));
        }
    };
    let Some(call) = acting_call(job, held) else {
        return Some(not_done(
            &held.name,
            "Not done: this call is no longer allowed.",
        ));
    };
    // It had passed its approval, if it needed one, before it first ran.
    let approved = call.parse().map(|a| args_sha256(&a)).unwrap_or_default();
    let given = Arc::new(InputGiven {
        message: asked.message,
        content,
    });
    let made = tools::run(ctx, job, run, &call, status, Some(&approved), Some(given)).await;
    match made.input {
        Some(again) if next < MAX_INPUT_ASKS && ctx.pausable => {
            // Another question (or the same, the answer not taken): asked in turn.
            held.asked = Some(InputAsked {
                asked_before: next,
                ..again
            });
            None
        }
        Some(_) => {
            tracing::warn!(agent = %job.agent.id, tool = %held.name, "a service kept asking the user; the call is given up");
            data.push(DataStatus::Unavailable);
            Some(not_done(
                &held.name,
                "Not done: the service kept asking the user more questions. Tell the user it could not be done.",
            ))
        }
        None => {
            data.push(made.data.status);
            Some(HeldAnswer {
                status: tool_status(made.data.status),
                content: as_json_text(&made.data),
            })
        }
    }
}

fn not_done(tool: &str, note: &str) -> HeldAnswer {
    HeldAnswer {
        status: ToolResultStatus::Error,
        content: as_json_text(&ToolData::unavailable(tool, note)),
    }
}
