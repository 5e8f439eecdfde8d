//! Planner orchestration (D-16): an orchestrator that decomposes a request into sub-agents
//! it creates on the fly, each with a mission and only the skills it needs, run in
//! dependency waves.
//!
//! Everything here is pure: the meta-tools the planner and its workers see ([`tools`]),
//! the checks a step of dispatches must pass and the waves it runs in ([`graph`]), what
//! each node came to and what its dependents are told ([`outcome`]), and the record and
//! checkpoint the runtime keeps ([`record`]). The runtime runs the waves.

pub mod graph;
pub mod outcome;
pub mod record;
pub mod skills;
pub mod tools;

#[cfg(test)]
mod tests;

pub use graph::{Dispatch, PlanNode, StepProblem, accept_step};
pub use outcome::{NodeResult, NodeStatus};
pub use record::{PendingPlan, PlanCheckpoint, PlanRecord};
pub use skills::{Skill, SkillCatalog, SkillDomain};

/// The planner's tool that describes the skills of one domain.
pub const GET_SKILL: &str = "get_skill";
/// The planner's tool that creates a sub-agent.
pub const DISPATCH_AGENT: &str = "dispatch_agent";
/// The planner's tool that collects what its sub-agents came to.
pub const GET_AGENT_RESULTS: &str = "get_agent_results";
/// A worker's only tool: one of its granted skills, by name.
pub const USE_SKILL: &str = "use_skill";
