//! One planned sub-agent (a node): made from the planner's worker template with its own
//! id, its granted skills' tools and a `use_skill` scoped to them. It sees its mission, the
//! planner's context and its dependencies' results, never the conversation (D-16).

use std::sync::Arc;

use baton_core::plan::tools::use_skill_tool;
use baton_core::plan::{NodeResult, NodeStatus, PlanNode};
use baton_core::registry::{Agent, AgentLimits, Planner, Skill};
use baton_core::turn::AgentStatus;

use crate::engine::brief::WorkerBrief;
use crate::engine::work::{AgentJob, AgentResult};

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
        // A planned sub-agent gets its mission in words only.
        pictures: Vec::new(),
        worker: Some(Arc::new(WorkerBrief {
            wave: node.wave,
            skills,
            context: node.context.clone(),
            inputs,
        })),
    }
}

/// What a node that ran came to, as the planner and its dependents read it.
pub(crate) fn node_result(job: &AgentJob, result: &AgentResult) -> NodeResult {
    if result.refused {
        // A limit stopped it before its first call: it did not run, also for a run that
        // resumes from this turn's checkpoint.
        return NodeResult::not_run(
            &job.agent.id,
            NodeStatus::NotRun,
            "A limit stopped it before it started.".to_owned(),
        );
    }
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

/// A node that finished in an earlier run of the turn, as the turn's record of who ran:
/// `carried` when that run committed (it waited for the user), not when it was cut short.
pub(crate) fn ran_before(r: &NodeResult, carried: bool) -> AgentResult {
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
        run: 0,
        failure_told: false,
        waiting: None,
        refused: false,
        carried,
    }
}
