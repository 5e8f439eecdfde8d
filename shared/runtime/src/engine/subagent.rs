//! One sub-agent invocation: instantiated from its card with the inherited context and only
//! its own prior turns (D-17), running its own tool loop within its limits.

use std::fmt::Write as _;
use std::sync::Arc;

use baton_core::message::{Content, Message, Role, ToolResultStatus};
use baton_core::ports::model::CallPurpose;
use baton_core::registry::Agent;
use baton_core::tool_result::DataStatus;
use baton_core::trace::GuardName;
use baton_core::turn::AgentStatus;
use futures::future::join_all;
use serde_json::Value;
use tokio::time::Instant;

use super::context::TurnCtx;
use super::live_slot::LiveSlot;
use super::model_call::{self, RawCall, Sink};
use super::planner::worker::{self, Resolved, WorkerBrief};
use super::status::Board;
use super::tools::{self, ToolRun};
use super::upstream;

/// What the orchestrator asked one sub-agent.
#[derive(Debug, Clone)]
pub(crate) struct AgentJob {
    pub(crate) agent: Arc<Agent>,
    /// The orchestrator's tool-use id.
    pub(crate) call_id: String,
    /// The query after verbatim protection.
    pub(crate) query: String,
    pub(crate) prior_context: Option<String>,
    /// Card-declared extra arguments (e.g. a support category).
    pub(crate) extra: serde_json::Map<String, Value>,
    /// A planned sub-agent's brief (D-16); `None` for a specialist.
    pub(crate) worker: Option<Arc<WorkerBrief>>,
}

impl AgentJob {
    /// The call as it was executed, for the orchestrator's transcript: derived rather than
    /// kept, so an open turn does not hold a second copy of every call's arguments.
    pub(crate) fn executed_args(&self, calls: usize) -> Value {
        let mut args = self.extra.clone();
        args.insert("query".into(), Value::String(self.query.clone()));
        args.insert("intent_count".into(), Value::from(calls));
        if let Some(prior) = &self.prior_context {
            args.insert("prior_context".into(), Value::String(prior.clone()));
        }
        Value::Object(args)
    }
}

/// How it went.
#[derive(Debug, Clone)]
pub(crate) struct AgentResult {
    pub(crate) status: AgentStatus,
    pub(crate) text: String,
    pub(crate) tool_calls: u32,
    pub(crate) duration_ms: u64,
    /// When it started, in ms after the turn started.
    pub(crate) started_ms: u64,
}

/// Where a sub-agent's text goes while it streams (D-13).
#[derive(Clone)]
pub(crate) enum TextMode {
    /// Collected for the orchestrator's composition call.
    Collect,
    /// Streamed through the output pipeline as it comes (passthrough).
    Live,
    /// Competing for the live slot (direct).
    Slot(Arc<LiveSlot>),
    /// Streamed as the specialist's own Direct Line answer.
    Delegated,
}

pub(crate) struct AgentSink<'a> {
    pub(crate) ctx: &'a TurnCtx,
    pub(crate) agent_id: &'a str,
    pub(crate) label: &'a str,
    pub(crate) mode: &'a TextMode,
    pub(crate) status: &'a Board,
}

impl Sink for AgentSink<'_> {
    async fn text(&mut self, text: &str) {
        self.status.activity(self.agent_id);
        match self.mode {
            TextMode::Collect => {}
            TextMode::Live => self.ctx.out.text(self.agent_id, text).await,
            TextMode::Slot(slot) => slot.text(self.ctx, self.agent_id, text).await,
            TextMode::Delegated => {
                self.ctx
                    .out
                    .delegated_text(self.agent_id, self.label, text)
                    .await
            }
        }
    }

    async fn reasoning(&mut self, _: &str) {
        // A specialist's reasoning is never shown; it only proves the agent is alive.
        self.status.activity(self.agent_id);
    }
}

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
        Some(brief) => (ctx.dynamic_for(None), worker::brief_text(brief), Vec::new()),
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
        let mut uses = Vec::new();
        if !reply.text.is_empty() {
            uses.push(Content::Text {
                text: reply.text.clone(),
            });
        }
        let mut results = Vec::new();
        for (call, run) in reply
            .calls
            .iter()
            .zip(runs.iter().map(Some).chain(std::iter::repeat(None)))
        {
            uses.push(Content::ToolUse {
                id: call.id.clone(),
                name: call.name.clone(),
                input: call.parse().unwrap_or(Value::Object(Default::default())),
            });
            let (st, content) = match run {
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
            results.push(Content::ToolResult {
                id: call.id.clone(),
                status: st,
                content,
            });
        }
        request.messages.push(Message {
            role: Role::Assistant,
            content: uses,
        });
        request.messages.push(Message {
            role: Role::User,
            content: results,
        });
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
    match worker::resolve(ctx, job, brief, call) {
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

/// The job's prior context: the orchestrator's, or filled by the runtime on an intent
/// switch when the orchestrator gave none (D-18).
pub(crate) fn prior_context(ctx: &TurnCtx, job: &AgentJob) -> Option<String> {
    job.prior_context
        .clone()
        .filter(|p| !p.trim().is_empty())
        .or_else(|| fill_prior_context(ctx, &job.agent))
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

/// A document as models receive it: compact JSON text, what a language model reads anyway,
/// and a fraction of the memory of a value tree while the call is open.
pub(crate) fn as_json_text(document: &impl serde::Serialize) -> Value {
    serde_json::to_string(document)
        .map(Value::String)
        .unwrap_or(Value::Null)
}
