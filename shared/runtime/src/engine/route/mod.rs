//! The orchestrator's routing call (design.md §3 step 5). Text-only answers pass only for the
//! Fastpath allowlist (D-14); tool calls go through the guards in [`guards`] before they
//! run. The conversation the orchestrator sees is built in [`conversation`].

mod conversation;
mod guards;

use baton_core::events::{Event, SOURCE_ORCHESTRATOR};
use baton_core::guard::fastpath;
use baton_core::ports::model::{CallPurpose, ModelError};
use baton_core::trace::GuardName;
use baton_core::turn::PendingCall;

use super::context::TurnCtx;
use super::model_call::{self, RawCall, Sink};
use super::work::AgentJob;

pub(crate) use conversation::conversation;
pub(crate) use guards::follow_up;
use guards::{echo_agent, fallback_agent, verbatim_job};

/// What routing decided.
#[derive(Default)]
pub(crate) struct Plan {
    /// Sub-agents to run.
    pub(crate) jobs: Vec<AgentJob>,
    /// Calls that were refused, with the error result the orchestrator will see.
    pub(crate) refused: Vec<(RawCall, String)>,
    /// The orchestrator's text (preamble, or the whole answer on the Fastpath).
    pub(crate) text: String,
    /// A text-only answer was allowed (no sub-agent).
    pub(crate) fastpath: bool,
    /// Work not started because of a turn limit.
    pub(crate) pending: Vec<PendingCall>,
}

/// Streams the preamble: live at once when the message is Fastpath-eligible; otherwise
/// held until a tool call starts, so a non-allowlisted text-only answer never shows.
pub(crate) struct PreambleSink<'a> {
    ctx: &'a TurnCtx,
    live: bool,
    held: String,
}

impl<'a> PreambleSink<'a> {
    /// A sink that streams at once when `live`, else holds the text.
    pub(crate) fn new(ctx: &'a TurnCtx, live: bool) -> Self {
        PreambleSink {
            ctx,
            live,
            held: String::new(),
        }
    }

    /// Whether text is streaming as it comes.
    pub(crate) fn is_live(&self) -> bool {
        self.live
    }

    /// Shows what was held, and streams from now on.
    pub(crate) async fn release(&mut self) {
        self.tool_start().await;
    }
}

impl Sink for PreambleSink<'_> {
    async fn text(&mut self, text: &str) {
        if self.live {
            self.ctx.out.text(SOURCE_ORCHESTRATOR, text).await;
        } else {
            self.held.push_str(text);
        }
    }

    async fn reasoning(&mut self, text: &str) {
        self.ctx
            .out
            .emit(Event::Reasoning {
                source: SOURCE_ORCHESTRATOR.to_owned(),
                text: text.to_owned(),
            })
            .await;
    }

    async fn tool_start(&mut self) {
        if !self.live {
            self.live = true;
            let held = std::mem::take(&mut self.held);
            self.ctx.out.text(SOURCE_ORCHESTRATOR, &held).await;
        }
    }
}

/// Makes the routing call and applies the guards.
pub(crate) async fn route(ctx: &TurnCtx, iterations: &mut u32) -> Result<Plan, ModelError> {
    let orch = ctx.orchestrator.clone();
    let Some(o) = orch.orchestration.as_ref() else {
        return Err(ModelError::Invalid(
            "the entry agent is not an orchestrator".into(),
        ));
    };
    let allow = o
        .fastpath
        .as_ref()
        .map(|f| f.allow.as_slice())
        .unwrap_or_default();
    let category = fastpath::allowed(&ctx.asked.user_text, allow);
    // A short reply to a specialist's question belongs to that specialist, whatever the
    // orchestrator does with it: its text is held until that is known.
    let echo = echo_agent(ctx, o);

    let mut request = orch.request(CallPurpose::Route, orch.prompt.system(&ctx.dynamic(), None));
    request.messages = conversation(&ctx.asked);
    let mut sink = PreambleSink::new(ctx, category.is_some() && echo.is_none());
    *iterations += 1;
    let reply = model_call::call(ctx, &orch, &request, &mut sink).await?;
    let mut plan = Plan {
        text: reply.text.clone(),
        ..Plan::default()
    };

    if reply.calls.is_empty() {
        // A text-only answer stands only on the Fastpath, and never for an echoing reply;
        // otherwise the user's words go to the specialist that asked, or the fallback.
        let (agent, guard, detail, why) = match echo {
            Some(agent) => {
                let detail = format!(
                    "short reply echoes {}'s question; the text-only answer was routed to it",
                    agent.id
                );
                (agent, GuardName::Echo, detail, "echo")
            }
            None => {
                if let Some(category) = category.filter(|_| !reply.text.trim().is_empty()) {
                    ctx.trace(|t| t.fastpath = Some(category.to_owned()));
                    plan.fastpath = true;
                    return Ok(plan);
                }
                let fallback = fallback_agent(ctx);
                let detail = format!(
                    "text-only answer to a message outside the allowlist; rerouted to {}",
                    fallback.id
                );
                (fallback, GuardName::Fastpath, detail, "fastpath")
            }
        };
        ctx.trace(|t| t.guard(guard, detail));
        plan.text.clear();
        plan.jobs.push(verbatim_job(ctx, agent, why));
        return Ok(plan);
    }

    guards::apply(ctx, &orch, o, request, reply.calls, iterations, &mut plan).await;
    Ok(plan)
}

/// Jobs for work a limit stopped last turn, resumed on "continue" (D-15).
pub(crate) fn resume(ctx: &TurnCtx, pending: &[PendingCall]) -> Plan {
    let mut plan = Plan::default();
    for (i, p) in pending.iter().enumerate() {
        let Some(agent) = ctx.inner.registry.agent(&p.agent_id).cloned() else {
            continue;
        };
        plan.jobs.push(AgentJob {
            call_id: format!("continue_{i}"),
            agent,
            query: p.query.clone(),
            prior_context: None,
            extra: Default::default(),
            worker: None,
            // The pictures were last turn's; "continue" carries none.
            pictures: Vec::new(),
        });
    }
    ctx.trace(|t| {
        t.guard(
            GuardName::Continue,
            format!("resumed {} pending call(s)", plan.jobs.len()),
        )
    });
    plan
}

/// Whether the user's text says "go on" to an offer to continue.
pub(crate) fn is_continue(text: &str) -> bool {
    const YES: &[&str] = &[
        "yes",
        "y",
        "yeah",
        "yep",
        "sure",
        "ok",
        "okay",
        "continue",
        "go on",
        "go ahead",
        "please do",
        "yes please",
        "do it",
        "carry on",
        "keep going",
    ];
    let t: String = text.trim().trim_end_matches(['.', '!']).to_lowercase();
    YES.contains(&t.as_str())
}
