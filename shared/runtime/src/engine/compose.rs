//! Composition (D-13): the orchestrator owns the final response. `mediated` makes one more
//! orchestrator call from the tool results; `passthrough` and `direct` have already
//! streamed the sub-agents' text and only add what the runtime must say (failures,
//! limits). Failures are acknowledged in plain words, never with error text (D-11).

use baton_core::events::SOURCE_ORCHESTRATOR;
use baton_core::json_text::JsonText;
use baton_core::message::{AnsweredCall, Message, ToolResultStatus, tool_exchange};
use baton_core::ports::model::{CallPurpose, ModelError};
use baton_core::tool_result::AgentAnswer;
use baton_core::turn::AgentStatus;
use serde_json::Value;

use super::context::TurnCtx;
use super::held::as_json_text;
use super::model_call::{self, RawCall, Reply, Sink};
use super::work::{AgentJob, AgentResult};

/// Streams the composed answer as the orchestrator.
struct Live<'a>(&'a TurnCtx);

impl Sink for Live<'_> {
    async fn text(&mut self, text: &str) {
        self.0.out.text(SOURCE_ORCHESTRATOR, text).await;
    }
    async fn reasoning(&mut self, _: &str) {}
    /// The answer is kept once, in the narration.
    fn keeps_text(&self) -> bool {
        false
    }
}

/// The plain words for a sub-agent that gave no usable answer.
pub(crate) fn unavailable_sentence(label: &str, status: AgentStatus) -> String {
    match status {
        AgentStatus::Timeout => {
            format!("{label} took too long to answer, so I couldn't include that part right now.")
        }
        _ => format!("I couldn't get an answer from {label} right now."),
    }
}

/// The tool-result document for one job.
pub(crate) fn answer(job: &AgentJob, result: &AgentResult) -> AgentAnswer {
    let label = job.agent.label.to_string();
    let usable = result.status.answered() && !result.text.trim().is_empty();
    AgentAnswer {
        agent: job.agent.id.to_string(),
        unavailable: (!usable).then(|| unavailable_sentence(&label, result.status)),
        label,
        status: result.status,
        answer: if usable {
            result.text.clone()
        } else {
            String::new()
        },
    }
}

/// The orchestrator's transcript of a round: its calls, then their results.
pub(crate) fn round_messages(
    preamble: &str,
    jobs: &[AgentJob],
    results: &[AgentResult],
    refused: &[(RawCall, String)],
) -> [Message; 2] {
    let mut calls = Vec::with_capacity(jobs.len() + refused.len());
    for (job, result) in jobs.iter().zip(results) {
        let a = answer(job, result);
        calls.push(AnsweredCall {
            id: job.call_id.clone(),
            name: job.agent.ask_tool_name().to_owned(),
            input: job.executed_args(jobs.len()),
            status: if a.unavailable.is_some() {
                ToolResultStatus::Error
            } else {
                ToolResultStatus::Ok
            },
            content: as_json_text(&a),
        });
    }
    for (raw, why) in refused {
        calls.push(AnsweredCall {
            id: raw.id.clone(),
            name: raw.name.clone(),
            input: JsonText::of(&raw.parse().unwrap_or(Value::Object(Default::default()))),
            status: ToolResultStatus::Error,
            content: Value::String(why.clone()),
        });
    }
    tool_exchange(preamble, calls)
}

/// One composition call of the orchestrator, streamed live. `messages` are lent to the
/// call, not copied (a further round extends them).
pub(crate) async fn mediated(
    ctx: &TurnCtx,
    messages: &mut Vec<Message>,
) -> Result<Reply, ModelError> {
    let orch = ctx.orchestrator.clone();
    let mut request = orch.request(
        CallPurpose::Compose,
        orch.prompt.system(&ctx.dynamic(), None),
    );
    request.messages = std::mem::take(messages);
    let mark = ctx.out.narration_len();
    let called = model_call::call(ctx, &orch, &request, &mut Live(ctx)).await;
    *messages = std::mem::take(&mut request.messages);
    let mut reply = called?;
    if !reply.calls.is_empty() {
        // Another round follows: its transcript needs the text this call showed.
        ctx.out.flush_all().await;
        reply.text = ctx.out.narration_from(mark).trim().to_owned();
    }
    Ok(reply)
}

/// The runtime's own composition when the orchestrator's composition call fails: each
/// answer in turn, then plain acknowledgements. Shown as the orchestrator.
pub(crate) async fn template(ctx: &TurnCtx, jobs: &[AgentJob], results: &[AgentResult]) {
    let answers: Vec<AgentAnswer> = jobs
        .iter()
        .zip(results)
        .map(|(j, r)| answer(j, r))
        .collect();
    let usable: Vec<&AgentAnswer> = answers.iter().filter(|a| a.unavailable.is_none()).collect();
    let mut text = String::new();
    for a in &usable {
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        if usable.len() > 1 {
            text.push_str(&format!("{}: ", a.label));
        }
        text.push_str(a.answer.trim());
    }
    for a in answers.iter().filter(|a| a.unavailable.is_some()) {
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(a.unavailable.as_deref().unwrap_or_default());
    }
    if text.is_empty() {
        text.push_str(
            "I'm sorry, I couldn't get an answer for that right now. Please try again in a moment.",
        );
    }
    ctx.out.text(SOURCE_ORCHESTRATOR, &text).await;
}

/// After live streaming (passthrough, direct): acknowledge the sub-agents that failed.
pub(crate) async fn acknowledge_failures(
    ctx: &TurnCtx,
    jobs: &[AgentJob],
    results: &[AgentResult],
) {
    for (job, result) in jobs.iter().zip(results) {
        if result.status.answered() && !result.text.trim().is_empty() {
            continue;
        }
        ctx.out.paragraph().await;
        let line = unavailable_sentence(&job.agent.label, result.status);
        ctx.out.text(SOURCE_ORCHESTRATOR, &line).await;
    }
}

/// The "continue?" offer after a limit (D-15): what was done and what was not.
pub(crate) async fn limit_note(
    ctx: &TurnCtx,
    done: &[(String, AgentStatus)],
    not_started: &[String],
    why: &str,
) {
    ctx.out.paragraph().await;
    let mut text = String::from("I stopped before finishing everything: ");
    text.push_str(why);
    text.push('.');
    let answered: Vec<&str> = done
        .iter()
        .filter(|(_, s)| s.answered())
        .map(|(l, _)| l.as_str())
        .collect();
    if !answered.is_empty() {
        text.push_str(&format!(" Done: {}.", answered.join(", ")));
    }
    if !not_started.is_empty() {
        text.push_str(&format!(" Not started yet: {}.", not_started.join(", ")));
    }
    text.push_str(" Would you like me to continue?");
    ctx.out.text(SOURCE_ORCHESTRATOR, &text).await;
}
