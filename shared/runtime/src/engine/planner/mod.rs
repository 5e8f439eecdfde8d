//! Planner orchestration (D-16, seed 003): the orchestrator plans with `get_skill`,
//! `dispatch_agent` and `get_agent_results`; each reply's dispatches are one step, checked
//! whole ([`step`]) and run in dependency waves ([`waves`]) by sub-agents made from the
//! worker template ([`worker`]); each finished wave is checkpointed so that a turn cut
//! short goes on from it ([`checkpoint`]). Limits answer with what was done and "continue?".

mod checkpoint;
mod resume;
mod step;
mod waves;
pub(crate) mod worker;

use std::sync::Arc;

use baton_core::events::{Event, PlanNodeView, SOURCE_ORCHESTRATOR};
use baton_core::guard::fastpath;
use baton_core::message::Message;
use baton_core::plan::record::StepCall;
use baton_core::plan::{NodeResult, NodeStatus, PendingPlan, PlanNode, PlanRecord};
use baton_core::ports::model::{CallPurpose, ToolChoice};
use baton_core::registry::Planner;
use baton_core::trace::{GuardName, LimitHit};
use baton_core::turn::TurnOutcome;

use super::compose;
use super::context::TurnCtx;
use super::model_call;
use super::route::{self, PreambleSink};
use super::work::{TROUBLE, Work};

/// Said when the planner will not consult anyone for a request that needs it.
const CANNOT: &str =
    "I couldn't work out how to do that. Could you tell me a little more about what you need?";
/// The reminder a planner gets when it answers a real request from memory.
const REMIND: &str = "<reminder>Do not answer from memory. Use get_skill to see what the skills \
                      can do, then dispatch_agent to have sub-agents do the work, and answer from \
                      their results.</reminder>";

/// The reply a step answers, as its checkpoint keeps it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Step {
    pub(crate) text: String,
    pub(crate) calls: Vec<StepCall>,
}

/// A planned turn as it goes.
#[derive(Debug, Default)]
pub(crate) struct PlanRun {
    /// The planner's conversation so far.
    pub(crate) messages: Vec<Message>,
    /// Every accepted node.
    pub(crate) nodes: Vec<PlanNode>,
    /// What every finished (or skipped, or not run) node came to.
    pub(crate) results: Vec<NodeResult>,
    /// The plan record's own facts (refused steps, resumption, continuation); its nodes
    /// and outcomes are `nodes` and `results`, filled in at the end.
    pub(crate) record: PlanRecord,
    /// The last wave that finished.
    pub(crate) waves_done: u32,
    /// Planner model calls so far.
    pub(crate) iterations: u32,
    /// Nodes a limit stopped.
    pub(crate) pending: Vec<PlanNode>,
    /// Where the turn stopped when a sub-agent waits for the user (D-36).
    pub(crate) paused: Option<Box<baton_core::plan::PlanCheckpoint>>,
}

impl PlanRun {
    /// The first wave of the next step.
    fn next_wave(&self) -> u32 {
        self.nodes.iter().map(|n| n.wave).max().unwrap_or(0) + 1
    }

    /// Nodes that ran or are running: the sub-agents this turn used.
    fn dispatched(&self) -> usize {
        self.nodes.len() - self.pending.len()
    }
}

/// Runs a planned turn: goes on from a checkpoint when the turn was cut short, runs the
/// nodes a limit left when the user says "continue", then plans until the answer.
pub(super) async fn orchestrate(
    ctx: &TurnCtx,
    planner: &Arc<Planner>,
    previous: Option<Box<PendingPlan>>,
    work: &mut Work,
) {
    let mut run = PlanRun {
        messages: route::conversation(&ctx.asked),
        ..PlanRun::default()
    };
    if let Some(saved) = checkpoint::load(ctx).await {
        resume::resume(ctx, planner, saved, &mut run, work).await;
    } else if let Some(pending) = previous.filter(|_| route::is_continue(&ctx.asked.user_text)) {
        waves::continue_pending(ctx, planner, *pending, &mut run, work).await;
    }
    drive(ctx, planner, run, work).await;
}

/// Goes on with a planned turn after the user answered what one of its sub-agents stopped
/// for (D-36): from the plan as it was, with the answer, to the answer of the turn.
pub(super) async fn orchestrate_resumed(
    ctx: &TurnCtx,
    planner: &Arc<Planner>,
    awaiting: baton_core::interruption::Awaiting,
    reply: &baton_core::interruption::Reply,
    work: &mut Work,
) {
    work.origin = Some(awaiting.origin().to_owned());
    let mut run = PlanRun::default();
    resume::after_answer(ctx, planner, awaiting, reply, &mut run, work).await;
    drive(ctx, planner, run, work).await;
}

/// Plans until the answer (unless a limit tripped or a sub-agent waits for the user), then
/// keeps what a limit left for "continue", or pauses the turn for the user, and records
/// the plan.
async fn drive(ctx: &TurnCtx, planner: &Arc<Planner>, mut run: PlanRun, work: &mut Work) {
    if run.paused.is_none() && !over_limit(ctx) {
        plan(ctx, planner, &mut run, work).await;
    }
    if let Some(saved) = run.paused.take() {
        // D-36: the turn waits, its plan kept with the waiting work.
        work.plan = Some(saved);
        super::interruption::pause(ctx, work, "", 0).await;
        ctx.trace(|t| t.plan = Some(record(ctx, run)));
        return;
    }
    if over_limit(ctx) && work.outcome == TurnOutcome::Answered {
        // The runtime's own words for what was done; `finish` adds what was not, and the
        // offer to continue.
        compose::template(ctx, &work.jobs, &work.results).await;
    }
    if !run.pending.is_empty() {
        let inputs: Vec<NodeResult> = run
            .results
            .iter()
            .filter(|r| r.status.usable())
            .filter(|r| run.pending.iter().any(|n| n.depends_on.contains(&r.id)))
            .map(|r| NodeResult {
                result: ctx.out.mask_stored(&r.result),
                ..r.clone()
            })
            .collect();
        work.pending_plan = Some(Box::new(PendingPlan {
            nodes: std::mem::take(&mut run.pending),
            inputs,
        }));
    }
    ctx.trace(|t| t.plan = Some(record(ctx, run)));
}

/// The plan as the routing record keeps it: the nodes with their missions as the plan
/// event showed them (D-23: the journal keeps what may be shown), and how each ended
/// (results carried from a previous turn's plan are not this turn's).
fn record(ctx: &TurnCtx, run: PlanRun) -> PlanRecord {
    let outcomes = run
        .results
        .iter()
        .filter(|r| run.nodes.iter().any(|n| n.id == r.id))
        .map(Into::into)
        .collect();
    let nodes = run
        .nodes
        .into_iter()
        .map(|n| PlanNode {
            mission: ctx.out.mask_stored(&n.mission),
            context: n.context.as_deref().map(|c| ctx.out.mask_stored(c)),
            ..n
        })
        .collect();
    PlanRecord {
        nodes,
        outcomes,
        ..run.record
    }
}

/// Whether a turn limit has tripped.
fn over_limit(ctx: &TurnCtx) -> bool {
    ctx.trace(|t| t.limit.is_some()).unwrap_or(false)
}

/// The planner's loop: one model call per step until it answers in text.
async fn plan(ctx: &TurnCtx, planner: &Arc<Planner>, run: &mut PlanRun, work: &mut Work) {
    let orch = ctx.orchestrator.clone();
    let small_talk = fastpath::category(&ctx.asked.user_text).is_some();
    let mut reminded = false;
    let mut choice = ToolChoice::Auto;
    loop {
        if run.iterations >= ctx.budget.limits.max_iterations {
            ctx.trace(|t| {
                t.limit.get_or_insert(LimitHit::OrchestratorIterations);
            });
            return;
        }
        run.iterations += 1;
        let purpose = if run.nodes.is_empty() {
            CallPurpose::Route
        } else {
            CallPurpose::Compose
        };
        let mut request = orch.request(purpose, orch.prompt.system(&ctx.dynamic(), None));
        request.messages = run.messages.clone();
        request.tool_choice = std::mem::take(&mut choice);
        // Text is shown as it streams once the answer can rest on results (or is small
        // talk); before that it is held until a tool call shows it was a preamble.
        let mut sink = PreambleSink::new(ctx, small_talk || !run.nodes.is_empty());
        let reply = match model_call::call(ctx, &orch, &request, &mut sink).await {
            Ok(reply) => reply,
            Err(e) if run.nodes.is_empty() => {
                tracing::error!(turn_id = %ctx.ids.turn_id, error = %e, "planner call failed");
                work.outcome = TurnOutcome::Failed;
                work.error = Some(TROUBLE.into());
                return;
            }
            Err(e) => {
                tracing::warn!(turn_id = %ctx.ids.turn_id, error = %e, "planner call failed; answering from the results");
                compose::template(ctx, &work.jobs, &work.results).await;
                return;
            }
        };
        if reply.calls.is_empty() {
            if run.nodes.is_empty() && !small_talk {
                if !reminded {
                    // An answer from memory to a real request: remind once, forcing a tool.
                    reminded = true;
                    ctx.trace(|t| {
                        t.guard(
                            GuardName::UngroundedAnswer,
                            "answered without dispatching; reminded to plan",
                        )
                    });
                    if !reply.text.trim().is_empty() {
                        run.messages.push(Message::assistant(reply.text));
                    }
                    run.messages.push(Message::user(REMIND));
                    if orch.model.capabilities.tool_choice {
                        choice = ToolChoice::Any;
                    }
                    continue;
                }
                ctx.out.text(SOURCE_ORCHESTRATOR, CANNOT).await;
                return;
            }
            if !sink.is_live() {
                sink.release().await;
            }
            if reply.text.trim().is_empty() {
                compose::template(ctx, &work.jobs, &work.results).await;
            }
            return;
        }
        sink.release().await;
        step::run(ctx, planner, run, reply, work).await;
        if run.paused.is_some()
            || over_limit(ctx)
            || (ctx.inner.config.routing_only && !run.nodes.is_empty())
        {
            return;
        }
    }
}

/// The plan event for `nodes`, their missions as the privacy guard lets them out.
async fn announce(ctx: &TurnCtx, nodes: &[PlanNode]) {
    if nodes.is_empty() {
        return;
    }
    let nodes = nodes
        .iter()
        .map(|n| PlanNodeView {
            id: n.id.clone(),
            mission: ctx.out.mask_stored(&n.mission),
            skills: n.skills.clone(),
            depends_on: n.depends_on.clone(),
            wave: n.wave,
        })
        .collect();
    ctx.out.emit(Event::Plan { nodes }).await;
}

/// Records a node that did not run, and tells the client.
async fn not_run(ctx: &TurnCtx, run: &mut PlanRun, node: &PlanNode, result: NodeResult) {
    ctx.out
        .emit(Event::NodeEnd {
            node: node.id.clone(),
            wave: node.wave,
            status: result.status,
            duration_ms: 0,
            tool_calls: 0,
            reason: Some(result.result.clone()),
        })
        .await;
    run.results.push(result);
}

/// Records a node a turn limit stopped: not run, kept for "continue".
async fn hold(ctx: &TurnCtx, run: &mut PlanRun, node: &PlanNode, limit: &str) {
    let why = format!("Not run: this turn reached {limit}; it runs if the user says to continue.");
    not_run(
        ctx,
        run,
        node,
        NodeResult::not_run(&node.id, NodeStatus::NotRun, why),
    )
    .await;
    run.pending.push(node.clone());
}
