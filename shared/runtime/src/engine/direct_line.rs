//! The Direct Line (D-21): a directive in the user's own text makes the runtime — not the
//! model — ask a specialist with the verbatim payload and deliver its verbatim answer.
//!
//! Only the text the user typed is ever parsed here; tool output, specialist answers,
//! history and notes never are. The orchestrator makes no call in `strict` mode; in
//! `additive` mode it may add one attributed note after the delivered answer, which can
//! neither remove nor change it. A lasting direct conversation lives in the episode state.

use std::sync::Arc;

use baton_core::directive::{self, Addressable, DirectMode, Directive};
use baton_core::events::{DirectLineState, SOURCE_NOTE, SOURCE_ORCHESTRATOR};
use baton_core::message::Message;
use baton_core::obligation::ObligationSource;
use baton_core::ports::model::{CallPurpose, ToolChoice};
use baton_core::registry::Agent;
use baton_core::trace::{DirectLineRecord, InterventionKind, ObligationMet, ObligationRecord};
use baton_core::turn::{AgentStatus, Delegated, DirectExchange, EpisodeState};

use super::context::TurnCtx;
use super::dispatch::dispatch;
use super::model_call::{self, Quiet};
use super::route;
use super::work::{AgentJob, AgentResult, TextMode};

/// What the user's text asks of this turn.
pub(crate) enum Decision {
    /// No directive: the orchestrator routes the user's text (`unescaped`: the text
    /// without its leading escape, when it had one).
    Route { unescaped: Option<String> },
    /// The runtime asks a specialist directly.
    Direct(DirectTurn),
    /// The runtime answers itself (no such specialist, a lasting conversation opened or
    /// left), optionally with the Direct Line indicator.
    Reply {
        text: String,
        indicator: Option<(Arc<Agent>, DirectLineState)>,
    },
}

/// A turn on the Direct Line.
pub(crate) struct DirectTurn {
    pub(crate) agent: Arc<Agent>,
    pub(crate) payload: String,
    pub(crate) state: DirectLineState,
}

/// Reads the directive, if any, in the user's text and updates the lasting conversation.
pub(crate) fn decide(ctx: &TurnCtx, state: &mut EpisodeState) -> Decision {
    let Some(o) = ctx.orchestrator.orchestration.as_ref() else {
        return Decision::Route { unescaped: None };
    };
    let policy = &o.direct_line;
    // A lasting conversation whose specialist left the card, or whose card turned the
    // Direct Line off, ends quietly.
    let sticky = state
        .direct_line
        .as_deref()
        .filter(|id| policy.enabled && o.sub_agents.iter().any(|s| &**s == *id))
        .and_then(|id| ctx.inner.registry.agent(id).cloned());
    if sticky.is_none() {
        state.direct_line = None;
        // Most messages hold no prefix at all: nothing to parse, nothing to allocate. An
        // orchestrator without fixed specialists (a planner) has nobody to address.
        if !policy.enabled
            || o.sub_agents.is_empty()
            || !ctx.asked.user_text.contains(policy.prefix.as_str())
        {
            return Decision::Route { unescaped: None };
        }
    }
    let subs = ctx.inner.registry.sub_agents(&ctx.orchestrator);
    let find = |id: &str| subs.iter().find(|a| &*a.id == id).cloned();
    let addressable: Vec<Addressable<'_>> = subs.iter().map(|a| a.addressable()).collect();
    let prefix = &policy.prefix;
    let exit = format!("{prefix}{}", policy.exit);
    match directive::parse(&ctx.asked.user_text, policy, &addressable) {
        Directive::None { text } => match sticky {
            Some(agent) => Decision::Direct(DirectTurn {
                agent,
                payload: text,
                state: DirectLineState::Sticky,
            }),
            None => Decision::Route {
                unescaped: (text != ctx.asked.user_text).then_some(text),
            },
        },
        Directive::Ask { agent_id, payload } => match find(&agent_id) {
            Some(agent) => {
                let in_sticky = sticky.as_ref().is_some_and(|s| s.id == agent.id);
                Decision::Direct(DirectTurn {
                    agent,
                    payload,
                    state: if in_sticky {
                        DirectLineState::Sticky
                    } else {
                        DirectLineState::Single
                    },
                })
            }
            None => no_such(prefix, &agent_id, &subs),
        },
        Directive::Open { agent_id } => match find(&agent_id) {
            Some(agent) if policy.sticky => {
                state.direct_line = Some(agent.id.to_string());
                Decision::Reply {
                    text: format!(
                        "You're now talking directly with {}: everything you write goes to them, word for word, until you type {exit}.",
                        agent.label
                    ),
                    indicator: Some((agent, DirectLineState::Sticky)),
                }
            }
            Some(agent) => Decision::Reply {
                text: format!(
                    "To ask {} directly, write your message after {prefix}{}.",
                    agent.label, agent.id
                ),
                indicator: None,
            },
            None => no_such(prefix, &agent_id, &subs),
        },
        Directive::Exit => {
            // The exit directive stands alone; anything after it is not sent anywhere, and
            // the user is told so rather than losing it silently.
            let unsent = if words_after(&ctx.asked.user_text, &exit) {
                format!(" What you wrote after {exit} was not sent; please send it again.")
            } else {
                String::new()
            };
            match sticky {
                Some(agent) => {
                    state.direct_line = None;
                    Decision::Reply {
                        text: format!(
                            "You've left the direct conversation with {}; I'm back to answering myself.{unsent}",
                            agent.label
                        ),
                        indicator: Some((agent, DirectLineState::Exited)),
                    }
                }
                None => Decision::Reply {
                    text: format!("There's no direct conversation to leave.{unsent}"),
                    indicator: None,
                },
            }
        }
        Directive::Unknown { token } => no_such(prefix, &token, &subs),
        Directive::Ambiguous { token, candidates } => {
            let names: Vec<String> = candidates
                .iter()
                .filter_map(|id| find(id))
                .map(|a| format!("{prefix}{} ({})", a.id, a.label))
                .collect();
            Decision::Reply {
                text: format!(
                    "\u{201c}{prefix}{token}\u{201d} could mean {}. Which one do you mean?",
                    join_or(&names)
                ),
                indicator: None,
            }
        }
    }
}

/// Whether anything but whitespace follows the exit directive in the user's text.
fn words_after(text: &str, exit: &str) -> bool {
    let lower = text.to_lowercase();
    lower
        .find(&exit.to_lowercase())
        .and_then(|at| lower.get(at + exit.len()..))
        .is_some_and(|rest| !rest.trim().is_empty())
}

fn no_such(prefix: &str, token: &str, subs: &[Arc<Agent>]) -> Decision {
    let names: Vec<String> = subs
        .iter()
        .map(|a| format!("{prefix}{} ({})", a.id, a.label))
        .collect();
    Decision::Reply {
        text: format!(
            "There's no specialist called \u{201c}{prefix}{token}\u{201d} here. These exist: {}. To write a literal {prefix} at the start, type \\{prefix}.",
            names.join(", ")
        ),
        indicator: None,
    }
}

fn join_or(names: &[String]) -> String {
    match names {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// The Direct Line mode of this turn: the request's, else the card's.
pub(crate) fn mode(ctx: &TurnCtx) -> DirectMode {
    ctx.asked.direct_mode.unwrap_or_else(|| {
        ctx.orchestrator
            .orchestration
            .as_ref()
            .map(|o| o.direct_line.mode)
            .unwrap_or_default()
    })
}

/// What a Direct Line turn did.
pub(crate) struct Outcome {
    pub(crate) jobs: Vec<AgentJob>,
    pub(crate) results: Vec<AgentResult>,
    pub(crate) exchange: DirectExchange,
}

/// Asks the addressed specialist — and any the request obliges this turn to consult —
/// with the verbatim payload, and delivers each answer as it was given.
pub(crate) async fn run(ctx: &TurnCtx, turn: DirectTurn) -> Outcome {
    let mode = mode(ctx);
    let sticky = turn.state == DirectLineState::Sticky;
    ctx.out
        .direct_line(&turn.agent.id, &turn.agent.label, mode, turn.state)
        .await;
    ctx.trace(|t| {
        t.direct_line = Some(DirectLineRecord {
            agent_id: turn.agent.id.to_string(),
            mode,
            sticky,
        })
    });
    let mut agents = vec![turn.agent.clone()];
    // D-22 holds on the Direct Line too: a specialist the request requires is asked the
    // same verbatim payload and delivered the same way.
    for id in &ctx.asked.must_consult {
        if agents.iter().any(|a| &*a.id == id.as_str()) {
            continue;
        }
        if let Some(agent) = ctx.inner.registry.agent(id) {
            agents.push(agent.clone());
        }
    }
    ctx.trace(|t| {
        for id in &ctx.asked.must_consult {
            t.obligations.push(ObligationRecord {
                agent_id: id.clone(),
                source: ObligationSource::Request,
                met: ObligationMet::DirectLine,
                reminders: 0,
            });
        }
    });
    let jobs: Vec<AgentJob> = agents
        .into_iter()
        .enumerate()
        .map(|(i, agent)| AgentJob {
            // The user's message goes as it was sent: its pictures too, to a card that
            // takes them (D-42).
            pictures: ctx.all_pictures_for(&agent),
            agent,
            call_id: format!("direct_{i}"),
            query: turn.payload.clone(),
            prior_context: None,
            extra: Default::default(),
            worker: None,
        })
        .collect();
    let results = dispatch(ctx, &jobs, &TextMode::Delegated).await;
    let mut answers = Vec::with_capacity(jobs.len());
    for (job, result) in jobs.iter().zip(&results) {
        // One that stopped for the user is delivered when the turn resumes.
        if let Some(answer) = deliver(ctx, job, result).await {
            answers.push(answer);
        }
    }
    let mut exchange = DirectExchange {
        answers,
        note: None,
    };
    if mode == DirectMode::Additive {
        exchange.note = note(ctx, &turn, &exchange).await;
    }
    Outcome {
        jobs,
        results,
        exchange,
    }
}

/// Delivers `job`'s answer word for word (D-21), unless it waits for the user; what was
/// delivered, after the privacy guard.
pub(super) async fn deliver(
    ctx: &TurnCtx,
    job: &AgentJob,
    result: &AgentResult,
) -> Option<Delegated> {
    if result.status == AgentStatus::Awaiting {
        return None;
    }
    let text = deliverable(&job.agent.label, result);
    let shown = ctx
        .out
        .delegated(&job.agent.id, &job.agent.label, result.status, &text)
        .await;
    Some(Delegated {
        agent_id: job.agent.id.to_string(),
        label: job.agent.label.to_string(),
        status: result.status,
        text: shown,
    })
}

/// The specialist's answer as it is delivered: its own words when it answered; when it
/// failed, a plain statement of that — never a stand-in answer. What it said before it
/// failed stays, and a failure its words already told is not told again in other words:
/// the delivered answer replaces what was streamed, so the two must agree.
fn deliverable(label: &str, result: &AgentResult) -> String {
    let said = result.text.trim();
    match result.status {
        AgentStatus::Ok | AgentStatus::Partial if !said.is_empty() => result.text.clone(),
        AgentStatus::Ok | AgentStatus::Partial => format!("{label} returned an empty answer."),
        AgentStatus::Awaiting => format!("{label} is waiting for your answer before it goes on."),
        AgentStatus::Error | AgentStatus::Timeout if result.failure_told => said.to_owned(),
        failed => {
            let told = failure(label, failed);
            if said.is_empty() {
                told
            } else {
                format!("{said} {told}")
            }
        }
    }
}

/// A plain statement that the specialist failed or timed out.
fn failure(label: &str, status: AgentStatus) -> String {
    if status == AgentStatus::Timeout {
        format!(
            "{label} did not answer in time. Nothing else answered in its place; you can ask again."
        )
    } else {
        format!(
            "{label} could not answer this time: it ran into a problem. Nothing else answered in its place; you can ask again."
        )
    }
}

/// What the orchestrator answers when it has nothing to add.
const NO_NOTE: &str = "NO_NOTE";

/// Additive mode: one orchestrator call that may add a note. The note is streamed as its
/// own attributed text after the delivered answers and recorded as an intervention.
async fn note(ctx: &TurnCtx, turn: &DirectTurn, exchange: &DirectExchange) -> Option<String> {
    let orch = ctx.orchestrator.clone();
    let instruction = format!(
        "The user addressed {label} directly and {label}'s answer was delivered to them word for word; you cannot change or withdraw it. \
         If, and only if, you see something important {label} could not know (a risk, a policy, something from earlier in the conversation), \
         write one short note to the user. Otherwise reply with exactly {NO_NOTE}.",
        label = turn.agent.label
    );
    let mut request = orch.request(
        CallPurpose::Note,
        orch.prompt.system(&ctx.dynamic(), Some(&instruction)),
    );
    request.tools = Arc::from([]);
    request.tool_choice = ToolChoice::None;
    let mut messages = route::conversation(&ctx.asked);
    let delivered: Vec<String> = exchange
        .answers
        .iter()
        .map(|a| format!("{} (direct): {}", a.label, a.text))
        .collect();
    messages.push(Message::assistant(delivered.join("\n\n")));
    messages.push(Message::user(format!(
        "(A note from the assistant to the user, or {NO_NOTE}.)"
    )));
    request.messages = messages;
    let reply = match model_call::call(ctx, &orch, &request, &mut Quiet).await {
        Ok(reply) => reply,
        Err(e) => {
            tracing::warn!(turn_id = %ctx.ids.turn_id, error = %e, "note call failed; the delivered answer stands alone");
            return None;
        }
    };
    let text = reply.text.trim();
    if text.is_empty() || text == NO_NOTE {
        return None;
    }
    ctx.out.paragraph().await;
    ctx.out.text(SOURCE_NOTE, text).await;
    ctx.trace(|t| {
        t.intervene(
            InterventionKind::Note,
            &turn.agent.id,
            format!(
                "the orchestrator added a note of {} characters",
                text.chars().count()
            ),
        )
    });
    Some(ctx.out.mask_stored(text))
}

/// A runtime reply (no specialist asked), with the Direct Line indicator when it has one.
pub(crate) async fn reply(
    ctx: &TurnCtx,
    text: &str,
    indicator: Option<(Arc<Agent>, DirectLineState)>,
) {
    if let Some((agent, state)) = indicator {
        ctx.out
            .direct_line(&agent.id, &agent.label, mode(ctx), state)
            .await;
    }
    ctx.out.text(SOURCE_ORCHESTRATOR, text).await;
}
