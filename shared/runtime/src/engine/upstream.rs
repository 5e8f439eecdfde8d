//! A specialist served by an upstream chat service (seed 000): no model
//! call, the service's streamed answer is the specialist's.
//!
//! The service keeps its own conversation. Its id is kept in the store per episode and
//! specialist with a lifetime, refreshed on each use; while it lives the conversation
//! continues. When it has expired (checked here, on read: a store's own expiry deletes
//! late), is missing, unreadable, or the service no longer knows it, a new conversation
//! starts with the specialist's last turns replayed as context, and the routing record says
//! so. A service that is down, slow or answers for another conversation gives the user a
//! plain acknowledgement, never its error text.
//!
//! A service may say it is working (the tool's status code is reported), end without an
//! answer (failed, rejected, canceled, or needing the user's authorization: each its own
//! plain acknowledgement), or ask the user something: the exchange it keeps open is saved
//! with the conversation; where the turn can wait (D-36) the question waits for the user
//! and the answer goes back on that exchange, elsewhere the question is the answer and the
//! user's next message to that specialist continues it.

use std::sync::Arc;

use baton_core::interruption::{HeldCall, WaitingAgent};
use baton_core::ports::connector::Connector;
use baton_core::ports::upstream::{
    ConversationPolicy, Exchange, UpstreamChat, UpstreamConversation, UpstreamEnd, UpstreamError,
    UpstreamEvent, UpstreamRequest,
};
use baton_core::registry::{Agent, Tool};
use baton_core::trace::GuardName;
use baton_core::turn::AgentStatus;
use futures::StreamExt;
use tracing::Instrument as _;

use super::context::TurnCtx;
use super::model_call::Sink;
use super::prior_context::prior_context;
use super::status::Fields;
use super::work::{AgentJob, AgentResult, AgentSink};

/// The tool and service that serve `agent`, when its one tool is a chat service (the
/// tool's connector kind decides; the card's role is a label).
pub(crate) fn served_by<'a>(
    ctx: &'a TurnCtx,
    agent: &'a Agent,
) -> Option<(&'a Arc<Tool>, &'a dyn UpstreamChat)> {
    let [tool] = agent.tools.as_slice() else {
        return None;
    };
    let connector: &Arc<dyn Connector> = ctx.inner.connectors.get(&*tool.connector_kind)?;
    Some((tool, connector.upstream_chat()?))
}

/// Why a new conversation starts where one existed.
enum Restart {
    Expired,
    Forgotten,
}

/// Runs one message through the service and streams its answer as the specialist's.
pub(crate) async fn run(
    ctx: &TurnCtx,
    job: &AgentJob,
    tool: &Arc<Tool>,
    chat: &dyn UpstreamChat,
    sink: &mut AgentSink<'_>,
    result: &mut AgentResult,
) {
    let agent = &job.agent;
    // Checked at load (the connector's own check): the defaults are the fallback.
    let policy = ConversationPolicy::from_config(&tool.connector_config).unwrap_or_default();
    let store = &ctx.inner.store;
    let now = ctx.inner.clock.now_ms();
    let stored = match store
        .upstream_conversation(&ctx.ids.principal, &ctx.ids.episode_id, &agent.id)
        .await
    {
        Ok(stored) => stored,
        Err(e) => {
            // Without the id the conversation starts afresh, with the replay: the user
            // still gets an answer.
            tracing::warn!(agent = %agent.id, error = %e, "could not read the upstream conversation");
            None
        }
    };
    let message = match prior_context(&ctx.asked, &ctx.trace, job) {
        Some(prior) => format!("{}\n\n{}", prior.trim(), job.query),
        None => job.query.clone(),
    };
    // The exchange leaves the process: a CLIENT span, under which the remote side goes on
    // (D-33).
    let client = tracing::info_span!(
        "remote_agent",
        otel.name = %format!("{} {}", tool.connector_kind, tool.id),
        otel.kind = "client",
        gen_ai.agent.name = %agent.id,
        gen_ai.tool.name = %tool.id,
        baton.protocol = %tool.connector_kind,
    );
    let mut request = UpstreamRequest {
        tool_id: tool.id.clone(),
        config: tool.connector_config.clone(),
        principal: ctx.ids.principal.clone(),
        episode_id: ctx.ids.episode_id.clone(),
        agent_id: agent.id.clone(),
        message,
        details: job.extra.clone(),
        conversation_id: None,
        pending: None,
        replay: Vec::new(),
        locale: ctx.asked.locale.clone(),
        // The remote side continues the trace under the CLIENT span.
        traceparent: ctx
            .inner
            .trace_context
            .and_then(|read| client.in_scope(read))
            .map(Arc::from),
    };
    let mut restart = None;
    match stored {
        Some(c) if c.live_at(now) => {
            request.conversation_id = Some(c.conversation_id);
            request.pending = c.pending;
        }
        Some(_) => restart = Some(Restart::Expired),
        None => {}
    }
    if request.conversation_id.is_none() {
        request.replay = replay(ctx, &agent.id, policy.replay_turns).await;
    }
    let progress = Progress {
        code: tool.status_code.as_ref(),
        fields: Arc::new(serde_json::json!({"query": job.query})),
    };
    // The exchange is the specialist's one call (D-20): announced and ended as any.
    let call = super::tools::CallEnd::begin(
        ctx,
        job,
        result.run,
        &tool.id,
        serde_json::json!({"query": job.query}),
    )
    .await;
    let mut outcome = converse(chat, &request, &progress, sink, result)
        .instrument(client.clone())
        .await;
    if matches!(outcome, Err(UpstreamError::UnknownConversation))
        && request.conversation_id.is_some()
    {
        restart = Some(Restart::Forgotten);
        request.conversation_id = None;
        request.pending = None;
        request.replay = replay(ctx, &agent.id, policy.replay_turns).await;
        outcome = converse(chat, &request, &progress, sink, result)
            .instrument(client.clone())
            .await;
    }
    if outcome.is_err() {
        client.record("otel.status_code", "ERROR");
    }
    call.send(if outcome.is_ok() {
        baton_core::trace::ToolOutcome::Ok
    } else {
        baton_core::trace::ToolOutcome::Unavailable
    })
    .await;
    if let Some(why) = restart {
        let why = match why {
            Restart::Expired => "its conversation had expired",
            Restart::Forgotten => "the service no longer knew its conversation",
        };
        let detail = format!(
            "{}: {why}; a new one started with {} earlier turn(s) replayed",
            agent.id,
            request.replay.len()
        );
        ctx.trace(|t| t.guard(GuardName::UpstreamRestart, detail));
    }
    match outcome {
        Ok(Answered {
            conversation_id,
            pending,
        }) => {
            let asked = pending.is_some();
            let kept = UpstreamConversation {
                agent_id: agent.id.to_string(),
                conversation_id,
                expires_ms: now.saturating_add(policy.lifetime_ms),
                pending,
            };
            if let Err(e) = store
                .save_upstream_conversation(&ctx.ids.principal, &ctx.ids.episode_id, &kept)
                .await
            {
                // The answer stands; the next turn starts a new conversation, with replay.
                tracing::warn!(agent = %agent.id, error = %e, "could not keep the upstream conversation");
            }
            result.status = if result.text.trim().is_empty() {
                AgentStatus::Error
            } else {
                AgentStatus::Ok
            };
            // D-36: a remote agent's question waits for the user where the turn can wait;
            // the answer goes back on the exchange kept open above.
            if asked && result.status == AgentStatus::Ok && ctx.pausable && job.worker.is_none() {
                result.status = AgentStatus::Awaiting;
                result.waiting = Some(Box::new(remote_question(tool, result)));
            }
        }
        Err(e) => {
            tracing::warn!(agent = %agent.id, tool = %tool.id, error = %e, "upstream chat failed");
            result.status = AgentStatus::Error;
            // What reached the user of a broken answer stays; the rest is a plain word.
            let note = acknowledgement(&agent.label, &e);
            let note = if result.text.is_empty() {
                note
            } else {
                format!(" {note}")
            };
            sink.text(&note).await;
            result.text.push_str(&note);
            result.failure_told = true;
        }
    }
}

/// A remote agent's question as waiting work: its one held call stands for the question
/// (its words are the answer so far), and the user's answer becomes its next message.
fn remote_question(tool: &Tool, result: &AgentResult) -> WaitingAgent {
    WaitingAgent {
        messages: Vec::new(),
        reply_text: String::new(),
        calls: vec![HeldCall {
            id: format!("{}_question", tool.id),
            name: tool.id.to_string(),
            input: serde_json::json!({ "question": result.text.trim() }),
            link: None,
            asked: None,
            answer: None,
        }],
        text: String::new(),
        tool_calls: result.tool_calls,
        data: Vec::new(),
        duration_ms: result.duration_ms,
        remote: true,
    }
}

/// The plain words the user gets for a service's failure (never its own error text).
fn acknowledgement(label: &str, error: &UpstreamError) -> String {
    match error {
        UpstreamError::Ended(UpstreamEnd::Rejected) => {
            format!("{label} declined this request, so this part can't be answered.")
        }
        UpstreamError::Ended(UpstreamEnd::Canceled) => {
            format!(
                "{label} stopped before answering, so this part can't be answered. Please ask again."
            )
        }
        UpstreamError::Ended(UpstreamEnd::AuthRequired) => format!(
            "{label} needs you to connect your account first, which can't be done from here yet, so this part can't be answered."
        ),
        UpstreamError::Ended(UpstreamEnd::Failed) => format!(
            "{label} couldn't finish this just now, so this part can't be answered. Please try again in a little while."
        ),
        _ => format!(
            "{label} couldn't be reached just now, so this part can't be answered. Please try again in a little while."
        ),
    }
}

/// The tool's status code, reported when the service says it is working.
struct Progress<'a> {
    code: Option<&'a Arc<str>>,
    fields: Fields,
}

/// What an exchange left: the conversation, and the exchange awaiting the user's reply.
struct Answered {
    conversation_id: String,
    pending: Option<String>,
}

/// One message through the service: streams its text into `sink` and `result`, and
/// returns the conversation's id.
async fn converse(
    chat: &dyn UpstreamChat,
    request: &UpstreamRequest,
    progress: &Progress<'_>,
    sink: &mut AgentSink<'_>,
    result: &mut AgentResult,
) -> Result<Answered, UpstreamError> {
    if let Some(fault) = crate::faults::upstream_chat() {
        return Err(fault);
    }
    let mut stream = chat.converse(request.clone()).await?;
    let mut conversation: Option<String> = None;
    let mut pending = None;
    let mut said_working = false;
    while let Some(event) = stream.next().await {
        if pending.is_some() {
            return Err(UpstreamError::Invalid(
                "it went on after asking the user".into(),
            ));
        }
        match event? {
            UpstreamEvent::Conversation(id) => {
                if let Some(expected) = &request.conversation_id
                    && *expected != id
                {
                    // Another conversation's answer may be another user's: none of it is
                    // shown, and the id is not kept.
                    return Err(UpstreamError::Invalid(
                        "it answered for another conversation".into(),
                    ));
                }
                conversation = Some(id);
            }
            UpstreamEvent::Text(text) => {
                if conversation.is_none() {
                    return Err(UpstreamError::Invalid(
                        "text came before the conversation's id".into(),
                    ));
                }
                sink.text(&text).await;
                result.text.push_str(&text);
            }
            UpstreamEvent::Working => {
                // Said once; later updates only show the specialist is alive (the idle
                // words wait longer).
                match progress.code {
                    Some(code) if !said_working => {
                        sink.status.code(&request.agent_id, code, &progress.fields);
                    }
                    _ => sink.status.activity(&request.agent_id),
                }
                said_working = true;
            }
            UpstreamEvent::AwaitingInput(id) => {
                if conversation.is_none() {
                    return Err(UpstreamError::Invalid(
                        "it asked before naming the conversation".into(),
                    ));
                }
                pending = Some(id);
            }
        }
    }
    let conversation_id =
        conversation.ok_or_else(|| UpstreamError::Invalid("no conversation id".into()))?;
    Ok(Answered {
        conversation_id,
        pending,
    })
}

/// Turns read back from the journal for a replay that the loaded history cannot fill: a
/// specialist asked now and then still finds its last exchanges in them.
const REPLAY_SCAN_TURNS: usize = 100;

/// The specialist's last `n` exchanges, oldest first: from the loaded history when it holds
/// them, else from the journal, whose turns compaction never removes (the loaded history
/// holds only the turns after the summary, and only as many as fit the prompt).
async fn replay(ctx: &TurnCtx, agent_id: &str, n: usize) -> Vec<Exchange> {
    let loaded = last_exchanges(&ctx.asked.history, agent_id, n);
    if loaded.len() >= n {
        return loaded;
    }
    match ctx
        .inner
        .store
        .turns(&ctx.ids.principal, &ctx.ids.episode_id, REPLAY_SCAN_TURNS)
        .await
    {
        Ok(turns) => {
            let read = last_exchanges(&turns, agent_id, n);
            if read.len() > loaded.len() {
                read
            } else {
                loaded
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, agent = %agent_id, "earlier turns for the replay could not be read; replaying the loaded ones");
            loaded
        }
    }
}

/// The last `n` exchanges of `agent_id` in `turns`, oldest first.
fn last_exchanges(
    turns: &[baton_core::turn::TurnRecord],
    agent_id: &str,
    n: usize,
) -> Vec<Exchange> {
    let mut all: Vec<Exchange> = turns
        .iter()
        .flat_map(|t| &t.segments)
        .filter(|s| s.agent_id == agent_id && !s.text.is_empty())
        .map(|s| Exchange {
            user: s.query.clone(),
            assistant: s.text.clone(),
        })
        .collect();
    let skip = all.len().saturating_sub(n);
    all.drain(..skip);
    all
}
