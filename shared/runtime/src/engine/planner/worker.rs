//! One planned sub-agent (a node): made from the planner's worker template with its own
//! id, its granted skills' tools and a `use_skill` scoped to them. It sees its mission, the
//! planner's context and its dependencies' results, never the conversation (D-16).

use std::fmt::Write as _;
use std::sync::Arc;

use baton_core::plan::tools::use_skill_tool;
use baton_core::plan::{NodeResult, NodeStatus, PlanNode, USE_SKILL};
use baton_core::registry::{Agent, AgentLimits, Planner, Skill};
use baton_core::tool_result::ToolData;
use baton_core::trace::GuardName;
use baton_core::turn::AgentStatus;
use serde_json::Value;

use crate::engine::context::TurnCtx;
use crate::engine::model_call::RawCall;
use crate::engine::subagent::{AgentJob, AgentResult};

/// What a node gets besides its mission.
#[derive(Debug)]
pub(crate) struct WorkerBrief {
    /// Its wave.
    pub(crate) wave: u32,
    /// Its granted skills, sorted.
    pub(crate) skills: Vec<Arc<Skill>>,
    /// The planner's extra context.
    pub(crate) context: Option<String>,
    /// What its dependencies came to, in the order it names them.
    pub(crate) inputs: Vec<NodeResult>,
}

/// The job that runs `node` with the results of its dependencies.
pub(crate) fn job(planner: &Planner, node: &PlanNode, inputs: Vec<NodeResult>) -> AgentJob {
    let skills: Vec<Arc<Skill>> = node
        .skills
        .iter()
        .filter_map(|s| planner.catalog.skill(s).cloned())
        .collect();
    let mut tools = Vec::new();
    for s in &skills {
        if !tools
            .iter()
            .any(|t: &Arc<baton_core::registry::Tool>| t.id == s.tool.id)
        {
            tools.push(s.tool.clone());
        }
    }
    let template = &planner.worker;
    let agent = Agent {
        id: Arc::from(node.id.as_str()),
        label: Arc::from(node.id.as_str()),
        tools,
        limits: AgentLimits {
            max_tool_calls: node.max_tool_calls,
            ..template.limits
        },
        model_tools: Arc::from(vec![use_skill_tool(&skills)]),
        ..Agent::clone(template)
    };
    AgentJob {
        agent: Arc::new(agent),
        call_id: node.call_id.clone(),
        query: node.mission.clone(),
        prior_context: None,
        extra: Default::default(),
        worker: Some(Arc::new(WorkerBrief {
            wave: node.wave,
            skills,
            context: node.context.clone(),
            inputs,
        })),
    }
}

/// The part of a node's system prompt after the cache point: the planner's context and
/// its dependencies' results (the mission is its user message).
pub(crate) fn brief_text(brief: &WorkerBrief) -> Option<String> {
    let mut out = String::new();
    if let Some(context) = &brief.context {
        let _ = write!(out, "<planner_context>\n{context}\n</planner_context>");
    }
    if !brief.inputs.is_empty() {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str("<results_from_prior_agents>");
        for r in &brief.inputs {
            let _ = write!(
                out,
                "\n<result agent=\"{}\" status=\"{}\">\n{}\n</result>",
                r.id,
                r.status.as_str(),
                r.result.trim()
            );
        }
        out.push_str("\n</results_from_prior_agents>");
    }
    (!out.is_empty()).then_some(out)
}

/// A node's call resolved: the tool call to run, or the refusal it gets instead.
pub(crate) enum Resolved {
    /// Run this call of a granted skill's tool.
    Run(RawCall),
    /// Refused: this is its result.
    Refused(ToolData),
}

/// Resolves a node's `use_skill` call to its skill's tool. A skill outside the grant is
/// refused here, whatever the model was shown (the enum is the first fence, this the
/// second).
pub(crate) fn resolve(
    ctx: &TurnCtx,
    job: &AgentJob,
    brief: &WorkerBrief,
    call: &RawCall,
) -> Resolved {
    if call.name != USE_SKILL {
        return Resolved::Refused(ToolData::unavailable(
            &call.name,
            "There is no such tool; use use_skill.",
        ));
    }
    let args = match call.parse() {
        Ok(a) => a,
        Err(problem) => {
            ctx.trace(|t| t.guard(GuardName::InvalidArgs, format!("{}: {problem}", USE_SKILL)));
            return Resolved::Refused(ToolData::unavailable(
                USE_SKILL,
                &format!("The arguments were invalid: {problem}"),
            ));
        }
    };
    let name = args
        .get("skill")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let Some(skill) = brief.skills.iter().find(|s| &*s.name == name) else {
        ctx.trace(|t| {
            t.guard(
                GuardName::SkillNotGranted,
                format!(
                    "{} asked for {name:?}, which it was not granted",
                    job.agent.id
                ),
            )
        });
        return Resolved::Refused(ToolData::unavailable(
            USE_SKILL,
            &format!("The skill {name:?} is not available to this agent."),
        ));
    };
    let arguments = args
        .get("arguments")
        .cloned()
        .unwrap_or_else(|| Value::Object(Default::default()));
    Resolved::Run(RawCall {
        id: call.id.clone(),
        name: skill.tool.id.to_string(),
        args: arguments.to_string(),
    })
}

/// What a node that ran came to, as the planner and its dependents read it.
pub(crate) fn node_result(job: &AgentJob, result: &AgentResult) -> NodeResult {
    let status = NodeStatus::of(result.status);
    let text = if status.usable() && !result.text.trim().is_empty() {
        result.text.trim().to_owned()
    } else {
        match result.status {
            AgentStatus::Timeout => "It ran out of time before it finished.".to_owned(),
            _ => "It could not finish its mission.".to_owned(),
        }
    };
    NodeResult {
        id: job.agent.id.to_string(),
        status,
        result: text,
        tool_calls: result.tool_calls,
        duration_ms: result.duration_ms,
    }
}

/// A node that finished before the turn was cut short, as the turn's record of who ran.
pub(crate) fn ran_before(r: &NodeResult) -> AgentResult {
    AgentResult {
        status: match r.status {
            NodeStatus::Completed => AgentStatus::Ok,
            NodeStatus::Partial => AgentStatus::Partial,
            NodeStatus::Timeout => AgentStatus::Timeout,
            _ => AgentStatus::Error,
        },
        text: if r.status.usable() {
            r.result.clone()
        } else {
            String::new()
        },
        tool_calls: r.tool_calls,
        duration_ms: r.duration_ms,
        // It ran in a run of the turn that was cut short: not on this run's clock.
        started_ms: 0,
    }
}
