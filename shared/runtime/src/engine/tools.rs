//! Running one data tool call for a sub-agent: schema check, breaker, budget, connector
//! call with the principal (D-29), timeout, and the envelope decision (D-28): status is the
//! only boundary; a foreign principal is suppressed and counted, never retried.

use std::sync::Arc;
use std::time::Duration;

use baton_core::events::{Event, ToolOutcome};
use baton_core::input::{InputAsked, InputGiven};
use baton_core::interruption::LinkAsk;
use baton_core::ports::connector::{
    AccountLinks, ConnectorError, ConnectorRequest, LinkNeeded, ProgressSink, idempotency_key,
};
use baton_core::ports::metrics::{
    ENVELOPE_TYPE_MISMATCH_TOTAL, ENVELOPE_VERSION_MISMATCH_TOTAL, FAILURES_TOTAL,
    PRINCIPAL_MISMATCH_TOTAL, TOOL_CALLS_TOTAL,
};
use baton_core::ports::store::Body;
use baton_core::registry::Agent;
use baton_core::tool_result::{
    ALREADY_DONE_NOTE, DataStatus, EnvelopeVerdict, ToolData, UNAVAILABLE_NOTE, judge_envelope,
};
use baton_core::trace::{GuardName, LimitHit, ToolCallRecord};
use serde_json::Value;
use tokio::time::Instant;
use tracing::Instrument as _;

use super::context::TurnCtx;
use super::model_call::RawCall;
use super::status::{Board, Fields};
use super::work::AgentJob;

/// A tool message as stored apart from the narration.
#[derive(serde::Serialize)]
struct ToolMessage<'a> {
    agent: &'a str,
    tool: &'a str,
    input: &'a Value,
    result: &'a ToolData,
}

/// A connector's progress reports during one call, queued for the status board (which
/// the call's task owns).
#[derive(Debug, Default)]
struct Progress {
    codes: std::sync::Mutex<Vec<String>>,
    wake: tokio::sync::Notify,
}

impl ProgressSink for Progress {
    fn progress(&self, status_code: &str) {
        if let Ok(mut codes) = self.codes.lock() {
            codes.push(status_code.to_owned());
        }
        self.wake.notify_one();
    }
}

/// Runs `call`, handing each progress report to `emit` as it arrives.
async fn relay_progress<T>(
    call: impl std::future::Future<Output = T>,
    progress: &Progress,
    mut emit: impl FnMut(&str),
) -> T {
    let mut call = std::pin::pin!(call);
    loop {
        tokio::select! {
            out = &mut call => return out,
            () = progress.wake.notified() => {
                let codes = progress.codes.lock().map(|mut c| std::mem::take(&mut *c)).unwrap_or_default();
                for code in &codes {
                    emit(code);
                }
            }
        }
    }
}

/// The end of a started call: its `tool_result` and `tool_call_end`, sent exactly once.
/// Dropped unsent (the call's future was cancelled by a sub-agent's timeout or the turn's
/// deadline), it sends them as unavailable without waiting for the reader.
pub(crate) struct CallEnd<'a> {
    ctx: &'a TurnCtx,
    call_id: String,
    agent: String,
    tool: String,
    /// What the audit trail keeps of the call: its arguments, and the execution that made it.
    params: Value,
    run: u32,
    started: Instant,
    sent: bool,
}

impl<'a> CallEnd<'a> {
    /// Announces `agent`'s call of `tool` (`tool_call_start`) and returns what ends it: a
    /// call the runtime makes on a specialist's behalf without a model asking (a remote
    /// agent's message) shows as one too.
    pub(crate) async fn begin(
        ctx: &'a TurnCtx,
        job: &AgentJob,
        run: u32,
        tool: &str,
        params: Value,
    ) -> CallEnd<'a> {
        let agent = &*job.agent.id;
        let call_id = format!("{agent}.{tool}");
        // Counted as started, as the stream shows it, also if the turn is cut before it ends.
        ctx.jobs.call_started(&job.agent.id);
        ctx.out
            .emit(Event::ToolCallStart {
                call_id: call_id.clone(),
                agent: agent.to_owned(),
                tool: tool.to_owned(),
            })
            .await;
        CallEnd {
            ctx,
            call_id,
            agent: agent.to_owned(),
            tool: tool.to_owned(),
            params,
            run,
            started: Instant::now(),
            sent: false,
        }
    }

    fn events(&self, status: ToolOutcome) -> [Event; 2] {
        [
            Event::ToolResult {
                call_id: self.call_id.clone(),
                agent: self.agent.clone(),
                tool: self.tool.clone(),
                status,
            },
            Event::ToolCallEnd {
                call_id: self.call_id.clone(),
                agent: self.agent.clone(),
                tool: self.tool.clone(),
                duration_ms: self.started.elapsed().as_millis() as u64,
            },
        ]
    }

    /// Keeps the call in the routing record (the audit trail's child record).
    fn record(&self, outcome: ToolOutcome) {
        let duration_ms = self.started.elapsed().as_millis() as u64;
        self.ctx.trace(|t| {
            t.tool_calls.push(ToolCallRecord {
                agent_id: self.agent.clone(),
                tool: self.tool.clone(),
                outcome,
                duration_ms,
                params: self.params.clone(),
                execution: 0,
                run: self.run,
            })
        });
    }

    pub(crate) async fn send(mut self, status: ToolOutcome) {
        self.sent = true;
        self.record(status);
        // Both are handed over before the only wait (for the reader), so a drop while
        // waiting cannot split them.
        let [result, end] = self.events(status);
        self.ctx.out.emit_now(result);
        self.ctx.out.emit(end).await;
    }
}

impl Drop for CallEnd<'_> {
    fn drop(&mut self) {
        if self.sent {
            return;
        }
        self.ctx.inner.metrics.count(
            TOOL_CALLS_TOTAL,
            1,
            &[("tool", &self.tool), ("outcome", "cancelled")],
        );
        self.ctx
            .inner
            .metrics
            .count(FAILURES_TOTAL, 1, &[("axis", "tool"), ("name", &self.tool)]);
        self.record(ToolOutcome::Unavailable);
        for event in self.events(ToolOutcome::Unavailable) {
            self.ctx.out.emit_now(event);
        }
    }
}

/// What one tool call came to.
pub(crate) struct ToolRun {
    pub(crate) data: ToolData,
    /// The account link the call waits for: its server acts with the user's own sign-in,
    /// and this principal has not connected their account (D-37).
    pub(crate) link: Option<LinkAsk>,
    /// What the service asked the user mid-call, which the call waits for the answer to
    /// (D-36).
    pub(crate) input: Option<InputAsked>,
}

/// A call that needs the user's approval before it runs (D-36).
pub(crate) struct NeedsApproval {
    /// The action in plain words.
    pub(crate) action: String,
    /// The checked arguments.
    pub(crate) args: Value,
}

/// Whether `agent`'s `call` needs the user's approval: its tool has an `approval:` rule
/// that holds for its arguments. A call with arguments that do not check is not asked
/// about: it is refused as any such call is.
pub(crate) fn needs_approval(agent: &Agent, call: &RawCall) -> Option<NeedsApproval> {
    let tool = agent.tool(&call.name)?;
    let policy = tool.approval.as_ref()?;
    let args = call.parse().ok()?;
    tool.check_args(&args).ok()?;
    policy.when.holds(&args).then(|| NeedsApproval {
        action: policy.describe(&args),
        args,
    })
}

/// Runs one call made by `job`'s agent in its run number `run` (`TurnCtx::next_run`).
/// `approved` is the SHA-256 of the arguments the user approved for this call (D-36), if
/// they did; `given`, the user's answer to what the service asked when the call was made
/// before.
pub(crate) async fn run(
    ctx: &TurnCtx,
    job: &AgentJob,
    run: u32,
    call: &RawCall,
    status: &Board,
    approved: Option<&str>,
    given: Option<Arc<InputGiven>>,
) -> ToolRun {
    let agent = &job.agent;
    let Some(tool) = agent.tool(&call.name).cloned() else {
        ctx.trace(|t| {
            t.guard(
                GuardName::UnknownTool,
                format!("{} called unknown tool {}", agent.id, call.name),
            )
        });
        return ToolRun {
            link: None,
            input: None,
            data: ToolData::unavailable(&call.name, "There is no such tool."),
        };
    };
    let args = match call.parse().and_then(|a| tool.check_args(&a).map(|()| a)) {
        Ok(a) => a,
        Err(problem) => {
            tracing::warn!(agent = %agent.id, tool = %tool.id, %problem, "tool arguments rejected");
            ctx.trace(|t| t.guard(GuardName::InvalidArgs, format!("{}: {}", tool.id, problem)));
            return ToolRun {
                link: None,
                input: None,
                data: ToolData {
                    tool: tool.id.to_string(),
                    status: DataStatus::Unavailable,
                    data: Value::Null,
                    note: Some(format!("The arguments were invalid: {problem}")),
                },
            };
        }
    };
    // An act the user must approve is never run without that approval, for exactly these
    // arguments. Where the turn cannot wait for the user (planned work), such a call is
    // held back and the specialist told so.
    if let Some(policy) = &tool.approval
        && policy.when.holds(&args)
        && approved != Some(baton_core::interruption::args_sha256(&args).as_str())
    {
        let action = policy.describe(&args);
        tracing::info!(agent = %agent.id, tool = %tool.id, "a call that needs approval was held back");
        ctx.trace(|t| {
            t.guard(
                GuardName::ApprovalNeeded,
                format!("{}: {}", tool.id, policy.when),
            )
        });
        return ToolRun {
            link: None,
            input: None,
            data: ToolData {
                tool: tool.id.to_string(),
                status: DataStatus::Unavailable,
                data: Value::Null,
                note: Some(format!(
                    "Not done: \"{action}\" needs the user's approval first, and it cannot be asked for in this conversation. Tell the user it was not done."
                )),
            },
        };
    }
    // Looked up before anything is spent or announced: a tool whose connector is missing
    // makes no call (the runtime's build refuses such a registry; this is the backstop).
    let Some(connector) = ctx.inner.connectors.get(&*tool.connector_kind).cloned() else {
        tracing::error!(agent = %agent.id, tool = %tool.id, kind = %tool.connector_kind, "no connector for the tool's kind");
        return ToolRun {
            link: None,
            input: None,
            data: ToolData::unavailable(&tool.id, UNAVAILABLE_NOTE),
        };
    };
    if !ctx.take_window_call() {
        return ToolRun {
            link: None,
            input: None,
            data: ToolData::unavailable(
                &tool.id,
                "This conversation has used all of its calls for the last few minutes.",
            ),
        };
    }
    if !ctx.budget.take_tool_call() {
        ctx.trace(|t| {
            t.limit.get_or_insert(LimitHit::TurnToolCalls);
        });
        return ToolRun {
            link: None,
            input: None,
            data: ToolData::unavailable(&tool.id, "This turn has used all of its tool calls."),
        };
    }
    let limits = ctx.budget.limits;
    let cooldown = Duration::from_millis(limits.breaker_cooldown_ms);
    // The permit counts a call that never reports (cancelled by a timeout) as a failure.
    let Some(permit) = ctx
        .inner
        .breakers
        .allow(&tool.id, cooldown, limits.breaker_failures)
    else {
        ctx.trace(|t| t.guard(GuardName::Breaker, format!("{} is open", tool.id)));
        return ToolRun {
            link: None,
            input: None,
            data: ToolData::unavailable(&tool.id, UNAVAILABLE_NOTE),
        };
    };
    // Shared with the status board, whose `transform` words may name an argument.
    let args: Fields = Arc::new(args);
    if let Some(code) = &tool.status_code {
        status.code(&agent.id, code, &args);
    }
    let call_id = format!("{}.{}", agent.id, call.id);
    // From here the call has started: `end` sends its result and end exactly once, also
    // when this future is dropped mid-call.
    let end = CallEnd {
        ctx,
        call_id: call_id.clone(),
        agent: agent.id.to_string(),
        tool: tool.id.to_string(),
        params: Value::clone(&args),
        run,
        started: Instant::now(),
        sent: false,
    };
    ctx.jobs.call_started(&agent.id);
    ctx.out
        .emit(Event::ToolCallStart {
            call_id: call_id.clone(),
            agent: agent.id.to_string(),
            tool: tool.id.to_string(),
        })
        .await;
    let progress = Arc::new(Progress::default());
    // OpenTelemetry GenAI conventions: one `execute_tool` span per tool call.
    let span = tracing::info_span!(
        "execute_tool",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %tool.id,
        gen_ai.agent.name = %agent.id,
        baton.cache.cached = tracing::field::Empty,
        baton.cache.ttl_s = tracing::field::Empty,
    );
    // The envelope's cache metadata is observed, never acted on (002 §5.5).
    let observed = span.clone();
    // A call that leaves the process has a CLIENT span under it, and the remote side
    // continues the trace under that (D-33).
    let client = connector.protocol().map(|protocol| {
        tracing::info_span!(
            parent: &span,
            "client",
            otel.name = %format!("{protocol} {}", tool.id),
            otel.kind = "client",
            gen_ai.tool.name = %tool.id,
            baton.protocol = protocol,
        )
    });
    let traceparent = ctx
        .inner
        .trace_context
        .and_then(|read| client.as_ref().unwrap_or(&span).in_scope(read))
        .map(Arc::from);
    let request = ConnectorRequest {
        tool_id: tool.id.clone(),
        config: tool.connector_config.clone(),
        args: Value::clone(&args),
        principal: ctx.ids.principal.clone(),
        episode_id: ctx.ids.episode_id.clone(),
        agent_id: agent.id.clone(),
        now_ms: ctx.inner.clock.now_ms(),
        progress: Some(progress.clone()),
        traceparent,
        idempotency_key: Some(Arc::from(idempotency_key(
            &ctx.ids.episode_id,
            ctx.ids.acts_under(),
            &agent.id,
            &tool.id,
            &args,
        ))),
        links: ctx
            .inner
            .links
            .clone()
            .map(|keeper| keeper as Arc<dyn AccountLinks>),
        input: given,
    };
    let fault = crate::faults::connector(&tool.connector_kind);
    let call = async move {
        match fault {
            Some(fault) => Err(fault),
            None => match client {
                Some(client) => connector.call(request).instrument(client).await,
                None => connector.call(request).await,
            },
        }
    }
    .instrument(span);
    let answer = tokio::time::timeout(
        Duration::from_millis(tool.timeout_ms),
        relay_progress(call, &progress, |code| {
            status.code(&agent.id, &Arc::from(code), &args)
        }),
    )
    .await;
    let mut link = None;
    let mut input = None;
    let data = match answer {
        Ok(Err(ConnectorError::NeedsLink(needed))) => {
            // Not a fault of the tool: the user has an account to connect first.
            link = sign_in(ctx, &tool.id, &needed);
            ToolData::unavailable(
                &tool.id,
                &format!(
                    "Not done: the user must first connect their {} account.",
                    needed.label
                ),
            )
        }
        Ok(Err(ConnectorError::NeedsInput(asked))) => {
            // Not a fault either: the service has a question for the user, and did not act.
            tracing::info!(agent = %agent.id, tool = %tool.id, "the service asked the user something");
            input = Some(*asked);
            ToolData::unavailable(
                &tool.id,
                "Not done: the service asked the user a question first, and it cannot be asked in this conversation. Tell the user it was not done.",
            )
        }
        Ok(Err(ConnectorError::AlreadyActed(why))) => {
            // The service acted on an earlier attempt of this very act (a crash or a lost
            // answer came between): the act happened, and the user is told so (D-36).
            tracing::info!(agent = %agent.id, tool = %tool.id, %why, "the service had already acted on this call");
            ToolData {
                tool: tool.id.to_string(),
                status: DataStatus::Partial,
                data: serde_json::json!({ "done": true }),
                note: Some(ALREADY_DONE_NOTE.to_owned()),
            }
        }
        Err(_) => {
            tracing::warn!(agent = %agent.id, tool = %tool.id, "tool timed out");
            ToolData::unavailable(&tool.id, UNAVAILABLE_NOTE)
        }
        Ok(Err(e)) => {
            tracing::warn!(agent = %agent.id, tool = %tool.id, error = %e, "tool failed");
            ToolData::unavailable(&tool.id, UNAVAILABLE_NOTE)
        }
        Ok(Ok(envelope)) => {
            let cache = &envelope.cache_meta;
            observed.record("baton.cache.cached", cache.cached);
            if let Some(ttl_s) = cache.ttl_s {
                observed.record("baton.cache.ttl_s", ttl_s);
            }
            tracing::debug!(tool = %tool.id, enricher = %envelope.enricher_id, cached = cache.cached, ttl_s = ?cache.ttl_s, "envelope cache metadata");
            let verdict = judge_envelope(
                &tool.id,
                envelope,
                ctx.ids.principal.as_str(),
                tool.envelope_major,
                tool.payload_type.as_deref(),
            );
            match &verdict {
                EnvelopeVerdict::PrincipalMismatch { enricher } => {
                    // A security boundary, not a quality issue: suppress, count, alert; no retry.
                    ctx.inner.metrics.count_with(
                        PRINCIPAL_MISMATCH_TOTAL,
                        1,
                        &[("tool", &tool.id)],
                        &[("consumer", &agent.metrics_name), ("enricher", enricher)],
                    );
                    ctx.trace(|t| t.principal_mismatches += 1);
                    tracing::error!(
                        alert = true,
                        agent = %agent.id,
                        tool = %tool.id,
                        enricher = %enricher,
                        "envelope principal does not match the caller; payload suppressed"
                    );
                }
                EnvelopeVerdict::VersionMismatch { expected, version } => {
                    ctx.inner.metrics.count(
                        ENVELOPE_VERSION_MISMATCH_TOTAL,
                        1,
                        &[("tool", &tool.id)],
                    );
                    tracing::warn!(tool = %tool.id, version = %version, expected, "incompatible envelope version");
                }
                EnvelopeVerdict::TypeMismatch { why } => {
                    ctx.inner
                        .metrics
                        .count(ENVELOPE_TYPE_MISMATCH_TOTAL, 1, &[("tool", &tool.id)]);
                    tracing::warn!(tool = %tool.id, %why, "an envelope not of the tool's payload type");
                }
                EnvelopeVerdict::Data(_) => {}
            }
            verdict.into_data(&tool.id)
        }
    };
    // Only usable data is a success: an error envelope, another principal's envelope or
    // an incompatible one is a failure of the tool, as a timeout is.
    let waits = link.is_some() || input.is_some();
    permit.record(waits || data.status != DataStatus::Unavailable);
    if data.status == DataStatus::Unavailable && !waits {
        ctx.inner
            .metrics
            .count(FAILURES_TOTAL, 1, &[("axis", "tool"), ("name", &tool.id)]);
    }
    let outcome = match data.status {
        DataStatus::Ok => ToolOutcome::Ok,
        DataStatus::Partial => ToolOutcome::Partial,
        DataStatus::Unavailable => ToolOutcome::Unavailable,
    };
    ctx.inner.metrics.count(
        TOOL_CALLS_TOTAL,
        1,
        &[("tool", &tool.id), ("outcome", outcome.as_str())],
    );
    end.send(outcome).await;
    // The tool message is kept apart from the narration (D-19), as compact JSON text.
    let message = ToolMessage {
        agent: &agent.id,
        tool: &tool.id,
        input: &args,
        result: &data,
    };
    match serde_json::to_string(&message) {
        Ok(json) => ctx.jobs.add_body(Body {
            key: format!("{}/{}", ctx.ids.turn_id, call_id),
            json,
        }),
        Err(e) => {
            tracing::warn!(tool = %tool.id, error = %e, "tool message not kept: it does not serialize")
        }
    }
    ToolRun { data, link, input }
}

/// The account link `needed` asks for, with its sign-in page; `None` where no links are
/// kept (the call then stays not done, in words).
fn sign_in(ctx: &TurnCtx, tool_id: &str, needed: &LinkNeeded) -> Option<LinkAsk> {
    let keeper = ctx.inner.links.as_ref()?;
    match keeper.sign_in_url(&ctx.ids.principal, tool_id, needed) {
        Ok(url) => Some(LinkAsk {
            server: needed.server.clone(),
            url,
            asked_before: 0,
        }),
        Err(e) => {
            tracing::warn!(tool = %tool_id, error = %e, "a sign-in page could not be made");
            None
        }
    }
}

#[cfg(test)]
mod tests;
