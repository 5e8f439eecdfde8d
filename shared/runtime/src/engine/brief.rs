//! A planned sub-agent's brief (D-16): what it gets besides its mission, and the fence on
//! its skill calls. The planner writes it; the sub-agent runner reads it from the job, and
//! knows nothing else of the planner.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use baton_core::plan::{NodeResult, USE_SKILL};
use baton_core::registry::Skill;
use baton_core::tool_result::ToolData;
use baton_core::trace::{GuardName, RoutingRecord};
use serde_json::Value;

use super::context::edit;
use super::model_call::RawCall;

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

impl WorkerBrief {
    /// The part of a node's system prompt after the cache point: the planner's context and
    /// its dependencies' results (the mission is its user message).
    pub(crate) fn text(&self) -> Option<String> {
        let mut out = String::new();
        if let Some(context) = &self.context {
            let _ = write!(out, "<planner_context>\n{context}\n</planner_context>");
        }
        if !self.inputs.is_empty() {
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            out.push_str("<results_from_prior_agents>");
            for r in &self.inputs {
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

    /// Resolves a node's `use_skill` call to its skill's tool. A skill outside the grant is
    /// refused here, whatever the model was shown (the enum is the first fence, this the
    /// second).
    pub(crate) fn resolve(
        &self,
        trace: &Mutex<RoutingRecord>,
        agent_id: &str,
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
                edit(trace, |t| {
                    t.guard(GuardName::InvalidArgs, format!("{}: {problem}", USE_SKILL))
                });
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
        let Some(skill) = self.skills.iter().find(|s| &*s.name == name) else {
            edit(trace, |t| {
                t.guard(
                    GuardName::SkillNotGranted,
                    format!("{} asked for {name:?}, which it was not granted", agent_id),
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
}

impl WorkerBrief {
    /// The call of a granted skill's tool that `call` (a `use_skill`) asks for, when it
    /// does; nothing is recorded ([`WorkerBrief::resolve`] records refusals).
    pub(crate) fn granted(&self, call: &RawCall) -> Option<RawCall> {
        if call.name != USE_SKILL {
            return None;
        }
        let args = call.parse().ok()?;
        let name = args.get("skill").and_then(Value::as_str)?;
        let skill = self.skills.iter().find(|s| &*s.name == name)?;
        let arguments = args
            .get("arguments")
            .cloned()
            .unwrap_or_else(|| Value::Object(Default::default()));
        Some(RawCall {
            id: call.id.clone(),
            name: skill.tool.id.to_string(),
            args: arguments.to_string(),
        })
    }
}

/// A node's call resolved: the tool call to run, or the refusal it gets instead.
pub(crate) enum Resolved {
    /// Run this call of a granted skill's tool.
    Run(RawCall),
    /// Refused: this is its result.
    Refused(ToolData),
}
