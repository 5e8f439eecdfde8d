//! One sub-agent invocation: instantiated from its card with the inherited context and only
//! its own prior turns (D-17), running its own tool loop within its limits.

use std::fmt::Write as _;

use baton_core::interruption::{
    ASK_USER_TOOL, Answer, HeldAnswer, HeldCall, LinkAsk, MAX_SIGN_INS, WaitingAgent, args_sha256,
    question_of,
};
use baton_core::json_text::JsonText;
use baton_core::message::{AnsweredCall, Message, ToolResultStatus, tool_exchange};
use baton_core::picture::Picture;
use baton_core::ports::model::{CallPurpose, ModelError};
use baton_core::registry::Agent;
use baton_core::tool_result::{DataStatus, ToolData};
use baton_core::trace::GuardName;
use baton_core::turn::AgentStatus;
use futures::future::join_all;
use serde_json::Value;
use tokio::time::Instant;

use super::brief::Resolved;
use super::context::TurnCtx;
use super::held::{acting_call, as_json_text, tool_status};
use super::model_call::{self, RawCall};
use super::prior_context::prior_context;
use super::service_question;
use super::status::Board;
use super::tools::{self, ToolRun};
use super::upstream;
use super::work::{AgentJob, AgentResult, AgentSink, TextMode};
use crate::account_links::LinkError;

/// Runs the sub-agent to its answer (the caller bounds it with the card's timeout).
pub(crate) async fn run(
    ctx: &TurnCtx,
    job: &AgentJob,
    mode: &TextMode,
    status: &Board,
    result: &mut AgentResult,
) {
    let agent = &job.agent;
    let started = Instant::now();
    if let Some((tool, chat)) = upstream::served_by(ctx, agent) {
        let mut sink = AgentSink::new(ctx, agent, mode, status);
        upstream::run(ctx, job, tool, chat, &mut sink, result).await;
        result.duration_ms = started.elapsed().as_millis() as u64;
        return;
    }
    let mut request = opening_request(ctx, job);
    request.messages.push(asked(ctx, job));
    let mut data_outcomes: Vec<DataStatus> = Vec::new();
    tool_loop(
        ctx,
        job,
        mode,
        status,
        result,
        &mut request,
        &mut data_outcomes,
        started,
    )
    .await;
}

/// What the sub-agent is asked: its query, after the pictures it is passed (D-42), as the
/// orchestrator's model gets them (a model that cannot see is told of them in words, in
/// `model_call`).
fn asked(ctx: &TurnCtx, job: &AgentJob) -> Message {
    if job.pictures.is_empty() {
        return Message::user(job.query.clone());
    }
    let pictures: Vec<Picture> = job
        .pictures
        .iter()
        .filter_map(|&i| ctx.asked.pictures.get(i))
        .cloned()
        .collect();
    Message::user_with_pictures(job.query.clone(), &pictures)
}

/// The request a sub-agent starts from: its system prompt and its own history. A planned
/// sub-agent sees its mission and brief only: no summary, no history.
fn opening_request(ctx: &TurnCtx, job: &AgentJob) -> baton_core::model::ModelRequest {
    let agent = &job.agent;
    let (context, extra, history) = match &job.worker {
        Some(brief) => (ctx.dynamic_for(None), brief.text(), Vec::new()),
        None => (
            ctx.dynamic_for(Some(&agent.id)),
            inherited(ctx, job),
            own_history(ctx, agent),
        ),
    };
    let mut request = agent.request(
        CallPurpose::Agent,
        agent.prompt.system(&context, extra.as_deref()),
    );
    request.messages = history;
    request
}

/// Continues a specialist that stopped for the user (D-36): its next held call gets the
/// user's `answer` (an approved call runs once, with exactly the approved arguments; a
/// declined one never; a question gets the user's words), and its tool loop goes on from
/// there. No earlier model or tool call runs again.
pub(crate) async fn resume(
    ctx: &TurnCtx,
    job: &AgentJob,
    mode: &TextMode,
    status: &Board,
    result: &mut AgentResult,
    waiting: WaitingAgent,
    answer: Answer,
) {
    let started = Instant::now();
    if waiting.remote {
        answer_remote(ctx, job, mode, status, result, &waiting, answer).await;
        return;
    }
    let WaitingAgent {
        messages,
        reply_text,
        mut calls,
        text,
        tool_calls,
        data,
        duration_ms,
        ..
    } = waiting;
    let mut request = opening_request(ctx, job);
    request.messages = messages;
    result.text = text;
    result.tool_calls = tool_calls;
    let mut data_outcomes: Vec<DataStatus> = data.iter().filter_map(|d| data_status(d)).collect();
    if let Some(held) = calls.iter_mut().find(|c| c.answer.is_none()) {
        // An account link is the principal's only once the conversation gives the code its
        // sign-in page showed (D-37); then the call goes on as if approved.
        let mut wrong_code = false;
        let answer = match (&held.link, answer) {
            (Some(link), Answer::Text(code)) => {
                match confirm_link(ctx, &link.server, &code).await {
                    Ok(()) => Answer::Approve,
                    Err(e) => {
                        wrong_code = e == LinkError::WrongCode;
                        Answer::Decline
                    }
                }
            }
            (_, answer) => answer,
        };
        let given = if let Some(asked) = held.asked.take() {
            let run = result.run;
            service_question::answer(
                ctx,
                job,
                run,
                status,
                held,
                asked,
                answer,
                &mut data_outcomes,
            )
            .await
        } else if held.name == ASK_USER_TOOL {
            Some(answer_to_question(answer))
        } else if answer == Answer::Approve
            && let Some(call) = acting_call(job, held)
        {
            // Approved, or the account it waited for connected: it runs now. A call held
            // for an account link had passed its approval before it first ran.
            let approved = call.parse().map(|a| args_sha256(&a)).unwrap_or_default();
            let run = tools::run(ctx, job, result.run, &call, status, Some(&approved), None).await;
            let asked_before = held
                .link
                .as_ref()
                .zip(run.link.as_ref())
                .filter(|(was, now)| was.server == now.server)
                .map_or(0, |(was, _)| was.asked_before + 1);
            if let Some(link) = run.link.filter(|_| ctx.pausable)
                && asked_before < MAX_SIGN_INS
            {
                // Still not connected (or a new sign-in is needed): it waits again.
                held.link = Some(LinkAsk {
                    asked_before,
                    ..link
                });
                None
            } else if asked_before >= MAX_SIGN_INS {
                // The server asks again after every sign-in: the user is not sent round
                // once more.
                tracing::warn!(agent = %job.agent.id, tool = %held.name, asked_before, "a server kept asking for a new sign-in; the call is given up");
                data_outcomes.push(DataStatus::Unavailable);
                Some(HeldAnswer {
                    status: ToolResultStatus::Error,
                    content: as_json_text(&ToolData::unavailable(
                        &held.name,
                        "Not done: the service still refused after the user signed in several times, asking for more access each time. Tell the user it could not be done.",
                    )),
                })
            } else {
                data_outcomes.push(run.data.status);
                Some(HeldAnswer {
                    status: tool_status(run.data.status),
                    content: as_json_text(&run.data),
                })
            }
        } else {
            // Not a data outage: the specialist is told the user said no, in words it can
            // pass on plainly.
            let note = if wrong_code {
                "The code the user gave does not match their sign-in, so the account was not connected and nothing was done."
            } else if held.link.is_some() {
                "The user did not connect their account, so nothing was done."
            } else {
                "Declined by the user, so nothing was done."
            };
            Some(HeldAnswer {
                status: ToolResultStatus::Error,
                content: as_json_text(&ToolData::unavailable(&held.name, note)),
            })
        };
        if given.is_some() {
            held.link = None;
        }
        held.answer = given;
    }
    let elapsed = duration_ms + started.elapsed().as_millis() as u64;
    if calls.iter().any(|c| c.answer.is_none()) {
        // Another call of the same reply waits too: ask about it next.
        stop_for_user(
            result,
            request.messages,
            reply_text,
            calls,
            data_outcomes,
            elapsed,
        );
        return;
    }
    request
        .messages
        .extend(tool_exchange(&reply_text, answered(calls)));
    // The time it had run before it stopped counts toward its duration.
    let before = tokio::time::Duration::from_millis(duration_ms);
    let started = started.checked_sub(before).unwrap_or(started);
    tool_loop(
        ctx,
        job,
        mode,
        status,
        result,
        &mut request,
        &mut data_outcomes,
        started,
    )
    .await;
}

/// A remote agent that asked the user something goes on with the answer as its next
/// message on the same exchange; a declined question is left unanswered, in plain words.
async fn answer_remote(
    ctx: &TurnCtx,
    job: &AgentJob,
    mode: &TextMode,
    status: &Board,
    result: &mut AgentResult,
    waiting: &WaitingAgent,
    answer: Answer,
) {
    let agent = &job.agent;
    result.tool_calls = waiting.tool_calls;
    result.duration_ms = waiting.duration_ms;
    let words = match answer {
        Answer::Text(words) => words,
        Answer::Approve | Answer::Decline => {
            result.status = AgentStatus::Partial;
            result.text = format!(
                "You chose not to answer {}'s question, so this part can't be answered.",
                agent.label
            );
            return;
        }
    };
    let Some((tool, chat)) = upstream::served_by(ctx, agent) else {
        // The registry changed under the waiting turn.
        tracing::error!(agent = %agent.id, "a remote specialist that asked is no longer served by a remote agent");
        result.status = AgentStatus::Error;
        return;
    };
    let job = AgentJob {
        query: words,
        prior_context: None,
        ..job.clone()
    };
    let mut sink = AgentSink::new(ctx, agent, mode, status);
    let started = Instant::now();
    upstream::run(ctx, &job, tool, chat, &mut sink, result).await;
    result.duration_ms = waiting.duration_ms + started.elapsed().as_millis() as u64;
}

/// What `ask_user` answers with: the user's words, or that they would not say.
fn answer_to_question(answer: Answer) -> HeldAnswer {
    match answer {
        Answer::Text(words) => HeldAnswer {
            status: ToolResultStatus::Ok,
            content: as_json_text(&ToolData {
                tool: ASK_USER_TOOL.to_owned(),
                status: DataStatus::Ok,
                data: serde_json::json!({ "answer": words }),
                note: None,
            }),
        },
        Answer::Approve | Answer::Decline => HeldAnswer {
            status: ToolResultStatus::Error,
            content: as_json_text(&ToolData::unavailable(
                ASK_USER_TOOL,
                "The user chose not to answer; go on without it and say what is missing.",
            )),
        },
    }
}

/// Whether `call` waits for the user, in a turn that can wait (D-36): a question, or an
/// act that needs approval (a planned sub-agent's, the skill's tool call it names).
fn waits_for_user(ctx: &TurnCtx, job: &AgentJob, call: &RawCall) -> bool {
    if !ctx.pausable {
        return false;
    }
    match &job.worker {
        Some(brief) => brief
            .granted(call)
            .is_some_and(|c| tools::needs_approval(&job.agent, &c).is_some()),
        // A question waits only when it asks something: a malformed one is answered so.
        None if call.name == ASK_USER_TOOL && job.agent.asks_user => {
            call.parse().is_ok_and(|args| question_of(&args).is_some())
        }
        None => tools::needs_approval(&job.agent, call).is_some(),
    }
}

/// Stops the sub-agent for the user (D-36), keeping all it did: its conversation, the reply
/// whose calls wait, what it said and how its data calls went.
fn stop_for_user(
    result: &mut AgentResult,
    messages: Vec<Message>,
    reply_text: String,
    calls: Vec<HeldCall>,
    data: Vec<DataStatus>,
    elapsed: u64,
) {
    result.status = AgentStatus::Awaiting;
    result.duration_ms = elapsed;
    result.waiting = Some(Box::new(WaitingAgent {
        messages,
        reply_text,
        calls,
        text: result.text.clone(),
        tool_calls: result.tool_calls,
        data: data.iter().map(|d| data_name(*d).to_owned()).collect(),
        duration_ms: elapsed,
        remote: false,
    }));
}

fn data_name(status: DataStatus) -> &'static str {
    match status {
        DataStatus::Ok => "ok",
        DataStatus::Partial => "partial",
        DataStatus::Unavailable => "unavailable",
    }
}

fn data_status(name: &str) -> Option<DataStatus> {
    match name {
        "ok" => Some(DataStatus::Ok),
        "partial" => Some(DataStatus::Partial),
        "unavailable" => Some(DataStatus::Unavailable),
        _ => None,
    }
}

/// A reply's calls, every one answered, as the tool exchange takes them.
fn answered(calls: Vec<HeldCall>) -> Vec<AnsweredCall> {
    calls
        .into_iter()
        .filter_map(|c| {
            c.answer.map(|a| AnsweredCall {
                id: c.id,
                name: c.name,
                input: JsonText::of(&c.input),
                status: a.status,
                content: a.content,
            })
        })
        .collect()
}

/// The sub-agent's tool loop from `request`, to its answer, its tool-call limit, or a
/// call that needs the user (a routed specialist then stops, keeping all it did, D-36).
#[allow(clippy::too_many_arguments)]
async fn tool_loop(
    ctx: &TurnCtx,
    job: &AgentJob,
    mode: &TextMode,
    status: &Board,
    result: &mut AgentResult,
    request: &mut baton_core::model::ModelRequest,
    data_outcomes: &mut Vec<DataStatus>,
    started: Instant,
) {
    let agent = &job.agent;
    let mut sink = AgentSink::new(ctx, agent, mode, status);
    let max_calls = agent.limits.max_tool_calls;
    // Calls asked for, refused ones too, against the limit. The record counts the calls
    // that started (the dispatch reads them from the turn).
    let mut asked = result.tool_calls;
    let mut first = true;
    loop {
        let reply = match model_call::call(ctx, agent, request, &mut sink).await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(agent = %agent.id, error = %e, "sub-agent model call failed");
                // Refused before its first call: it never ran.
                result.refused = first
                    && result.tool_calls == 0
                    && result.text.is_empty()
                    && matches!(&e, ModelError::Invalid(why) if why == model_call::WINDOW_SPENT);
                result.status = AgentStatus::Error;
                result.duration_ms = started.elapsed().as_millis() as u64;
                return;
            }
        };
        first = false;
        result.text.push_str(&reply.text);
        if reply.calls.is_empty() {
            break;
        }
        let room = max_calls.saturating_sub(asked) as usize;
        if room == 0 {
            ctx.trace(|t| {
                t.guard(
                    GuardName::SubagentToolLimit,
                    format!("{} reached {} tool calls", agent.id, max_calls),
                )
            });
            break;
        }
        let taken = &reply.calls[..reply.calls.len().min(room)];
        // A routed specialist stops at a call that needs the user; what does not depend on
        // the answer (the reply's other calls) runs now.
        let held: Vec<bool> = taken.iter().map(|c| waits_for_user(ctx, job, c)).collect();
        let runs = join_all(
            taken
                .iter()
                .zip(&held)
                .filter(|(_, h)| !**h)
                .map(|(c, _)| run_call(ctx, job, result.run, c, status)),
        )
        .await;
        asked += runs.len() as u32;
        let mut runs = runs.into_iter();
        let mut answers: Vec<Option<HeldAnswer>> = Vec::with_capacity(reply.calls.len());
        let mut links = Vec::with_capacity(reply.calls.len());
        let mut inputs = Vec::with_capacity(reply.calls.len());
        for (i, _) in reply.calls.iter().enumerate() {
            let mut link = None;
            let mut input = None;
            let answer = if i >= taken.len() {
                Some(HeldAnswer {
                    status: ToolResultStatus::Error,
                    content: Value::String(format!(
                        "Not run: the limit of {max_calls} tool calls was reached."
                    )),
                })
            } else if held[i] {
                None
            } else {
                runs.next().and_then(|run| {
                    // A call whose server needs the user's account waits for the link
                    // where the turn can wait; elsewhere it is not done, in words.
                    if ctx.pausable && run.link.is_some() {
                        link = run.link;
                        return None;
                    }
                    // A service's question waits for the user the same way (D-36).
                    if ctx.pausable && run.input.is_some() {
                        input = run.input;
                        return None;
                    }
                    data_outcomes.push(run.data.status);
                    Some(HeldAnswer {
                        status: tool_status(run.data.status),
                        content: as_json_text(&run.data),
                    })
                })
            };
            answers.push(answer);
            links.push(link);
            inputs.push(input);
        }
        let calls: Vec<HeldCall> = reply
            .calls
            .iter()
            .zip(answers)
            .zip(links)
            .zip(inputs)
            .map(|(((call, answer), link), asked)| HeldCall {
                id: call.id.clone(),
                name: call.name.clone(),
                input: call.parse().unwrap_or(Value::Object(Default::default())),
                answer,
                link,
                asked,
            })
            .collect();
        if calls.iter().any(|c| c.answer.is_none()) {
            let elapsed = started.elapsed().as_millis() as u64;
            let messages = std::mem::take(&mut request.messages);
            let data = std::mem::take(data_outcomes);
            stop_for_user(result, messages, reply.text, calls, data, elapsed);
            return;
        }
        request
            .messages
            .extend(tool_exchange(&reply.text, answered(calls)));
    }
    result.duration_ms = started.elapsed().as_millis() as u64;
    let unavailable = data_outcomes
        .iter()
        .filter(|s| **s == DataStatus::Unavailable)
        .count();
    let partial = data_outcomes.contains(&DataStatus::Partial);
    result.status = if result.text.trim().is_empty()
        || (!data_outcomes.is_empty() && unavailable == data_outcomes.len())
    {
        AgentStatus::Error
    } else if partial || unavailable > 0 {
        AgentStatus::Partial
    } else {
        AgentStatus::Ok
    };
}

/// Confirms the principal's pending link to `server` with `code` (D-37).
async fn confirm_link(ctx: &TurnCtx, server: &str, code: &str) -> Result<(), LinkError> {
    let keeper = ctx.inner.links.as_ref().ok_or(LinkError::NotOffered)?;
    keeper.confirm(&ctx.ids.principal, server, code).await
}

/// Runs one of the sub-agent's calls; a planned sub-agent's `use_skill` runs its skill's
/// tool, or is refused.
async fn run_call(
    ctx: &TurnCtx,
    job: &AgentJob,
    run: u32,
    call: &RawCall,
    status: &Board,
) -> ToolRun {
    if call.name == ASK_USER_TOOL && job.agent.asks_user {
        let asks = call.parse().is_ok_and(|args| question_of(&args).is_some());
        let note = if asks {
            // A question in a turn that cannot wait for the answer.
            "The user can't be asked during this request: answer with what you have, and say what you would need to know."
        } else {
            "Nothing was asked: give the question, in plain words, as `question`."
        };
        return ToolRun {
            link: None,
            input: None,
            data: ToolData::unavailable(ASK_USER_TOOL, note),
        };
    }
    let Some(brief) = &job.worker else {
        return tools::run(ctx, job, run, call, status, None, None).await;
    };
    match brief.resolve(&ctx.trace, &job.agent.id, call) {
        Resolved::Run(call) => tools::run(ctx, job, run, &call, status, None, None).await,
        Resolved::Refused(data) => ToolRun {
            data,
            link: None,
            input: None,
        },
    }
}

/// The sub-agent's own prior turns only (D-17).
fn own_history(ctx: &TurnCtx, agent: &Agent) -> Vec<Message> {
    let mut messages = Vec::new();
    for turn in &ctx.asked.history {
        for seg in turn
            .segments
            .iter()
            .filter(|s| s.agent_id == *agent.id && !s.text.is_empty())
        {
            messages.push(Message::user(seg.query.clone()));
            messages.push(Message::assistant(seg.text.clone()));
        }
    }
    messages
}

/// The inherited context that goes after the cache point: prior context and extra
/// arguments.
fn inherited(ctx: &TurnCtx, job: &AgentJob) -> Option<String> {
    let mut out = String::new();
    let prior = prior_context(&ctx.asked, &ctx.trace, job);
    if let Some(prior) = prior {
        let _ = write!(out, "<prior_context>\n{}\n</prior_context>", prior.trim());
    }
    if !job.extra.is_empty() {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str("<request_details>\n");
        for (k, v) in &job.extra {
            let v = v
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| v.to_string());
            let _ = writeln!(out, "{k}: {v}");
        }
        out.push_str("</request_details>");
    }
    (!out.is_empty()).then_some(out)
}
