//! What a turn's work is made of, shared by every part of the engine that runs it: the job
//! a sub-agent is given (with its brief when a planner made it), how it went, where its
//! text goes while it streams, and what the whole turn gathered for the record.

use std::sync::Arc;

use baton_core::interruption::{Awaiting, WaitingAgent};
use baton_core::json_text::JsonText;
use baton_core::plan::PendingPlan;
use baton_core::registry::{Agent, PICTURES_ARG};
use baton_core::turn::{AgentStatus, DirectExchange, PendingCall, TurnOutcome};
use serde_json::Value;

use super::brief::WorkerBrief;
use super::context::TurnCtx;
use super::live_slot::LiveSlot;
use super::model_call::Sink;
use super::status::Board;

/// What the user is told when the turn cannot go on, in the orchestrator's voice.
pub(crate) const TROUBLE: &str =
    "I'm having trouble answering right now. Please try again in a moment.";

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
    /// The message's pictures it is passed (D-42), as indexes into `Asked::pictures`: kept
    /// as numbers, not bytes, since the turn holds the pictures once.
    pub(crate) pictures: Vec<usize>,
}

impl AgentJob {
    /// The call as it was executed, for the orchestrator's transcript: derived rather than
    /// kept, so an open turn does not hold a second copy of every call's arguments. As text:
    /// every caller records or sends it on.
    pub(crate) fn executed_args(&self, calls: usize) -> JsonText {
        let mut args = self.extra.clone();
        args.insert("query".into(), Value::String(self.query.clone()));
        args.insert("intent_count".into(), Value::from(calls));
        if let Some(prior) = &self.prior_context {
            args.insert("prior_context".into(), Value::String(prior.clone()));
        }
        if !self.pictures.is_empty() {
            // Numbered from 1, as the orchestrator names them.
            let numbers = self.pictures.iter().map(|i| Value::from(i + 1)).collect();
            args.insert(PICTURES_ARG.into(), Value::Array(numbers));
        }
        JsonText::of(&Value::Object(args))
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
    /// Its run's number in this turn (`TurnCtx::next_run`); 0 when it did not run here.
    pub(crate) run: u32,
    /// Its text already tells the user, in plain words, that it failed (a remote agent's
    /// failure): delivered as it is, with no second statement of the failure.
    pub(crate) failure_told: bool,
    /// Where it stopped for the user, when its status is `Awaiting` (D-36).
    pub(crate) waiting: Option<Box<WaitingAgent>>,
    /// A limit refused its first call: it never ran, so it is not in the consulted
    /// record (D-20), only in the routing record's outcomes.
    pub(crate) refused: bool,
    /// It ran in the turn that waited for the user, and this turn only takes it as it was
    /// (D-36).
    pub(crate) carried: bool,
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

impl<'a> AgentSink<'a> {
    /// Where `agent`'s text goes in `mode`, its activity shown on `status`.
    pub(crate) fn new(
        ctx: &'a TurnCtx,
        agent: &'a baton_core::registry::Agent,
        mode: &'a TextMode,
        status: &'a Board,
    ) -> Self {
        AgentSink {
            ctx,
            agent_id: &agent.id,
            label: &agent.label,
            mode,
            status,
        }
    }
}

impl Sink for AgentSink<'_> {
    async fn text(&mut self, text: &str) {
        self.status.activity(self.agent_id);
        match self.mode {
            TextMode::Collect => {}
            TextMode::Live => self.ctx.out.text(self.agent_id, text).await,
            TextMode::Slot(slot) => slot.text(&self.ctx.out, self.agent_id, text).await,
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

/// What the turn did, gathered for the record.
pub(crate) struct Work {
    pub(crate) jobs: Vec<AgentJob>,
    pub(crate) direct: Option<DirectExchange>,
    pub(crate) results: Vec<AgentResult>,
    pub(crate) pending: Vec<PendingCall>,
    /// A planner's nodes a limit stopped (D-16).
    pub(crate) pending_plan: Option<Box<PendingPlan>>,
    pub(crate) outcome: TurnOutcome,
    pub(crate) error: Option<String>,
    /// What the turn keeps while it waits for the user (D-36).
    pub(crate) awaiting: Option<Box<Awaiting>>,
    /// The turn whose message started the work this turn resumes, when it resumes one.
    pub(crate) origin: Option<String>,
    /// A planned turn's progress when a sub-agent stopped for the user (D-36).
    pub(crate) plan: Option<Box<baton_core::plan::PlanCheckpoint>>,
}

impl Default for Work {
    fn default() -> Self {
        Work {
            jobs: Vec::new(),
            direct: None,
            results: Vec::new(),
            pending: Vec::new(),
            pending_plan: None,
            outcome: TurnOutcome::Answered,
            error: None,
            awaiting: None,
            origin: None,
            plan: None,
        }
    }
}
