//! One sub-agent invocation: instantiated from its card with the inherited context and only
//! its own prior turns (D-17), running its own tool loop within its limits.

use std::fmt::Write as _;

use baton_core::message::{AnsweredCall, Message, ToolResultStatus, tool_exchange};
use baton_core::ports::model::CallPurpose;
use baton_core::registry::Agent;
use baton_core::tool_result::DataStatus;
use baton_core::trace::GuardName;
use baton_core::turn::AgentStatus;
use futures::future::join_all;
use serde_json::Value;
use tokio::time::Instant;

use super::brief::Resolved;
use super::context::TurnCtx;
use super::model_call::{self, RawCall};
use super::prior_context::prior_context;
use super::status::Board;
use super::tools::{self, ToolRun};
use super::upstream;
use super::work::{AgentJob, AgentResult, AgentSink, TextMode};

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
        let mut sink = AgentSink {
            ctx,
            agent_id: &agent.id,
            label: &agent.label,
            mode,
            status,
        };
        upstream::run(ctx, job, tool, chat, &mut sink, result).await;
        result.duration_ms = started.elapsed().as_millis() as u64;
        return;
    }
    // A planned sub-agent sees its mission and brief only: no summary, no history.
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
    request.messages.push(Message::user(job.query.clone()));
    let mut sink = AgentSink {
        ctx,
        agent_id: &agent.id,
        label: &agent.label,
        mode,
        status,
    };
    let mut data_outcomes: Vec<DataStatus> = Vec::new();
    let max_calls = agent.limits.max_tool_calls;
    loop {
        let reply = match model_call::call(ctx, agent, &request, &mut sink).await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(agent = %agent.id, error = %e, "sub-agent model call failed");
                result.status = AgentStatus::Error;
                result.duration_ms = started.elapsed().as_millis() as u64;
                return;
            }
        };
        result.text.push_str(&reply.text);
        if reply.calls.is_empty() {
            break;
        }
        let room = max_calls.saturating_sub(result.tool_calls) as usize;
        if room == 0 {
            ctx.trace(|t| {
                t.guard(
                    GuardName::SubagentToolLimit,
                    format!("{} reached {} tool calls", agent.id, max_calls),
                )
            });
            break;
        }
        let runs = join_all(
            reply
                .calls
                .iter()
                .take(room)
                .map(|c| run_call(ctx, job, c, status)),
        )
        .await;
        result.tool_calls += runs.len() as u32;
        let mut answered = Vec::with_capacity(reply.calls.len());
        for (call, run) in reply
            .calls
            .iter()
            .zip(runs.iter().map(Some).chain(std::iter::repeat(None)))
        {
            let (status, content) = match run {
                Some(run) => {
                    data_outcomes.push(run.data.status);
                    let st = if run.data.status == DataStatus::Unavailable {
                        ToolResultStatus::Error
                    } else {
                        ToolResultStatus::Ok
                    };
                    (st, as_json_text(&run.data))
                }
                None => (
                    ToolResultStatus::Error,
                    Value::String(format!(
                        "Not run: the limit of {max_calls} tool calls was reached."
                    )),
                ),
            };
            answered.push(AnsweredCall {
                id: call.id.clone(),
                name: call.name.clone(),
                input: call.parse().unwrap_or(Value::Object(Default::default())),
                status,
                content,
            });
        }
        request
            .messages
            .extend(tool_exchange(&reply.text, answered));
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

/// Runs one of the sub-agent's calls; a planned sub-agent's `use_skill` runs its skill's
/// tool, or is refused.
async fn run_call(ctx: &TurnCtx, job: &AgentJob, call: &RawCall, status: &Board) -> ToolRun {
    let Some(brief) = &job.worker else {
        return tools::run(ctx, &job.agent, call, status).await;
    };
    match brief.resolve(ctx, &job.agent.id, call) {
        Resolved::Run(call) => tools::run(ctx, &job.agent, &call, status).await,
        Resolved::Refused(data) => ToolRun { data },
    }
}

/// The sub-agent's own prior turns only (D-17).
fn own_history(ctx: &TurnCtx, agent: &Agent) -> Vec<Message> {
    let mut messages = Vec::new();
    for turn in &ctx.history {
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
    let prior = prior_context(ctx, job);
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

/// A document as models receive it: compact JSON text, what a language model reads anyway,
/// and a fraction of the memory of a value tree while the call is open.
pub(crate) fn as_json_text(document: &impl serde::Serialize) -> Value {
    serde_json::to_string(document)
        .map(Value::String)
        .unwrap_or(Value::Null)
}
