//! A step's dispatches as a graph: each `dispatch_agent` call of one planner reply is a
//! node; `depends_on` are its edges. A step is accepted whole or refused whole, before
//! anything runs, with every problem named so the planner can correct it.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::skills::SkillCatalog;

/// The longest mission or context a dispatch may carry, in characters.
pub const MAX_MISSION_CHARS: usize = 4_000;
/// The longest sub-agent id.
pub const MAX_AGENT_ID_CHARS: usize = 40;

/// One `dispatch_agent` call's arguments.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Dispatch {
    /// The id the planner gives the sub-agent (dependencies name it).
    pub agent_id: String,
    /// What it must do.
    pub mission: String,
    /// The skills it may use.
    pub skills: Vec<String>,
    /// Extra context the planner passes in.
    #[serde(default)]
    pub context: Option<String>,
    /// Sub-agents whose results it needs.
    #[serde(default)]
    pub depends_on: Vec<String>,
    /// Tool calls it may make.
    #[serde(default)]
    pub max_tool_calls: Option<u32>,
}

impl Dispatch {
    /// Reads a call's arguments; the error says what is missing or malformed.
    ///
    /// # Errors
    /// The arguments are not a dispatch.
    pub fn parse(args: &Value) -> Result<Self, String> {
        serde_json::from_value(args.clone())
            .map_err(|e| format!("the arguments do not fit dispatch_agent: {e}"))
    }
}

/// An accepted node of the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanNode {
    /// Its id.
    pub id: String,
    /// Its mission.
    pub mission: String,
    /// Its granted skills, sorted.
    pub skills: Vec<String>,
    /// The nodes it waits for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<String>,
    /// The planner's extra context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// Tool calls it may make.
    pub max_tool_calls: u32,
    /// The wave it runs in, counted from 1 across the turn.
    pub wave: u32,
    /// The planner's tool-use id of its dispatch.
    pub call_id: String,
}

/// What a step may ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepLimits {
    /// Tool calls of a dispatch that names none.
    pub default_tool_calls: u32,
    /// The most tool calls one dispatch may ask; more is lowered to this.
    pub max_tool_calls: u32,
}

/// Why a step was refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepProblem {
    /// The dispatch it is about, when it is about one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// What is wrong, in words the planner can act on.
    pub problem: String,
}

impl StepProblem {
    fn of(agent_id: &str, problem: impl Into<String>) -> Self {
        StepProblem {
            agent_id: Some(agent_id.to_owned()),
            problem: problem.into(),
        }
    }
}

/// Checks one step of dispatches (`calls`: each call's id and parsed arguments) against
/// the nodes of earlier steps and the planner's skills, and places each node in its wave
/// (the first wave of this step is `first_wave`). Accepted whole, or every problem.
///
/// # Errors
/// Malformed or duplicate ids, empty missions, unknown or ungranted skills, unknown
/// dependencies, cycles.
pub fn accept_step(
    calls: &[(String, Result<Dispatch, String>)],
    earlier: &[PlanNode],
    catalog: &SkillCatalog,
    limits: StepLimits,
    first_wave: u32,
) -> Result<Vec<PlanNode>, Vec<StepProblem>> {
    let mut problems = Vec::new();
    let earlier_ids: BTreeSet<&str> = earlier.iter().map(|n| n.id.as_str()).collect();
    let mut step: Vec<(&String, &Dispatch)> = Vec::new();
    let mut seen = BTreeSet::new();
    for (call_id, parsed) in calls {
        let d = match parsed {
            Ok(d) => d,
            Err(e) => {
                problems.push(StepProblem {
                    agent_id: None,
                    problem: e.clone(),
                });
                continue;
            }
        };
        check_dispatch(d, catalog, &mut problems);
        if earlier_ids.contains(d.agent_id.as_str()) {
            problems.push(StepProblem::of(
                &d.agent_id,
                "this id was already used in this turn; give the new sub-agent an id of its own",
            ));
        } else if !seen.insert(d.agent_id.as_str()) {
            problems.push(StepProblem::of(
                &d.agent_id,
                "two dispatches in this step use this id; each sub-agent needs its own",
            ));
        }
        step.push((call_id, d));
    }
    let in_step: BTreeSet<&str> = step.iter().map(|(_, d)| d.agent_id.as_str()).collect();
    for (_, d) in &step {
        for dep in &d.depends_on {
            if dep == &d.agent_id {
                problems.push(StepProblem::of(&d.agent_id, "it depends on itself"));
            } else if !in_step.contains(dep.as_str()) && !earlier_ids.contains(dep.as_str()) {
                problems.push(StepProblem::of(
                    &d.agent_id,
                    format!("it depends on {dep:?}, which was never dispatched"),
                ));
            }
        }
    }
    if let Some(cycle) = find_cycle(&step) {
        problems.push(StepProblem {
            agent_id: cycle.first().cloned(),
            problem: format!(
                "the dependencies form a cycle ({}), so none of them could ever start",
                cycle.join(" → ")
            ),
        });
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let depth = depths(&step);
    let nodes = step
        .iter()
        .map(|(call_id, d)| {
            let mut skills: Vec<String> = d.skills.clone();
            skills.sort();
            skills.dedup();
            let mut depends_on = d.depends_on.clone();
            depends_on.dedup();
            PlanNode {
                id: d.agent_id.clone(),
                mission: d.mission.trim().to_owned(),
                skills,
                depends_on,
                context: d
                    .context
                    .as_ref()
                    .map(|c| c.trim().to_owned())
                    .filter(|c| !c.is_empty()),
                max_tool_calls: d
                    .max_tool_calls
                    .unwrap_or(limits.default_tool_calls)
                    .clamp(1, limits.max_tool_calls.max(1)),
                wave: first_wave + depth.get(d.agent_id.as_str()).copied().unwrap_or(0),
                call_id: (*call_id).clone(),
            }
        })
        .collect();
    Ok(nodes)
}

/// The checks of one dispatch on its own.
fn check_dispatch(d: &Dispatch, catalog: &SkillCatalog, problems: &mut Vec<StepProblem>) {
    let id = &d.agent_id;
    if !valid_agent_id(id) {
        problems.push(StepProblem::of(
            id,
            format!(
                "an id is 1-{MAX_AGENT_ID_CHARS} letters, digits, '_' or '-', starting with a letter"
            ),
        ));
    }
    if d.mission.trim().is_empty() {
        problems.push(StepProblem::of(
            id,
            "the mission is empty; say what it must do",
        ));
    }
    for (what, text) in [
        ("mission", Some(&d.mission)),
        ("context", d.context.as_ref()),
    ] {
        if text.is_some_and(|t| t.chars().count() > MAX_MISSION_CHARS) {
            problems.push(StepProblem::of(
                id,
                format!("the {what} is longer than {MAX_MISSION_CHARS} characters"),
            ));
        }
    }
    if d.skills.is_empty() {
        problems.push(StepProblem::of(
            id,
            "it has no skills; grant the skills it needs",
        ));
    }
    for skill in &d.skills {
        if catalog.skill(skill).is_none() {
            problems.push(StepProblem::of(id, unknown_skill(skill, catalog)));
        }
    }
    if d.max_tool_calls == Some(0) {
        problems.push(StepProblem::of(id, "max_tool_calls must be at least 1"));
    }
}

/// Why a skill name cannot be granted, with the names that can.
fn unknown_skill(skill: &str, catalog: &SkillCatalog) -> String {
    let domain = skill.split_once('.').map(|(d, _)| d).unwrap_or(skill);
    match catalog.domain(domain) {
        Some(d) => format!(
            "there is no skill {skill:?}; the {} skills are {}",
            d.id,
            d.skills
                .iter()
                .map(|s| &*s.name)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        None => format!(
            "there is no skill {skill:?}; skills are named <domain>.<skill>, and the domains are {}",
            catalog.domain_list()
        ),
    }
}

fn valid_agent_id(id: &str) -> bool {
    let mut chars = id.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic())
        && id.len() <= MAX_AGENT_ID_CHARS
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// A cycle among the step's dependencies, as the ids along it (first repeated at the end).
fn find_cycle(step: &[(&String, &Dispatch)]) -> Option<Vec<String>> {
    let deps: BTreeMap<&str, &[String]> = step
        .iter()
        .map(|(_, d)| (d.agent_id.as_str(), d.depends_on.as_slice()))
        .collect();
    // 0 unvisited, 1 on the path, 2 done.
    let mut state: BTreeMap<&str, u8> = BTreeMap::new();
    let mut path: Vec<&str> = Vec::new();
    fn visit<'a>(
        id: &'a str,
        deps: &BTreeMap<&'a str, &'a [String]>,
        state: &mut BTreeMap<&'a str, u8>,
        path: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        match state.get(id) {
            Some(2) => return None,
            Some(1) => {
                let start = path.iter().position(|p| *p == id).unwrap_or(0);
                let mut cycle: Vec<String> =
                    path[start..].iter().map(|s| (*s).to_owned()).collect();
                cycle.push(id.to_owned());
                return Some(cycle);
            }
            _ => {}
        }
        state.insert(id, 1);
        path.push(id);
        for dep in deps.get(id).copied().unwrap_or_default() {
            // Dependencies outside the step are done already: no edge to follow; a node
            // depending on itself is reported on its own.
            if dep == id {
                continue;
            }
            if let Some((key, _)) = deps.get_key_value(dep.as_str())
                && let Some(cycle) = visit(key, deps, state, path)
            {
                return Some(cycle);
            }
        }
        path.pop();
        state.insert(id, 2);
        None
    }
    for id in deps.keys() {
        if let Some(cycle) = visit(id, &deps, &mut state, &mut path) {
            return Some(cycle);
        }
    }
    None
}

/// Each node's depth within the step: 0 without in-step dependencies, else one more than
/// its deepest in-step dependency. The step is acyclic.
fn depths<'a>(step: &[(&String, &'a Dispatch)]) -> BTreeMap<&'a str, u32> {
    let deps: BTreeMap<&str, &[String]> = step
        .iter()
        .map(|(_, d)| (d.agent_id.as_str(), d.depends_on.as_slice()))
        .collect();
    let mut depth: BTreeMap<&'a str, u32> = BTreeMap::new();
    // At most one pass per node settles every depth in an acyclic graph.
    for _ in 0..=step.len() {
        let mut changed = false;
        for (_, d) in step {
            let mine = d
                .depends_on
                .iter()
                .filter(|dep| deps.contains_key(dep.as_str()))
                .map(|dep| depth.get(dep.as_str()).copied().unwrap_or(0) + 1)
                .max()
                .unwrap_or(0);
            if depth.get(d.agent_id.as_str()) != Some(&mine) {
                depth.insert(d.agent_id.as_str(), mine);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    depth
}

/// The accepted nodes in the order they run: by wave, then as dispatched.
pub fn run_order(nodes: &[PlanNode]) -> Vec<&PlanNode> {
    let mut order: Vec<&PlanNode> = nodes.iter().collect();
    order.sort_by_key(|n| n.wave); // Stable: dispatch order within a wave.
    order
}

/// Splits a step's nodes at a budget of `room` sub-agents: the first `room` in run order
/// run; the rest, and anything depending on them, wait. A node never runs before a
/// dependency, so the part that runs is closed under dependencies.
pub fn split_at_room(nodes: Vec<PlanNode>, room: usize) -> (Vec<PlanNode>, Vec<PlanNode>) {
    let order: Vec<String> = run_order(&nodes).iter().map(|n| n.id.clone()).collect();
    let runs: BTreeSet<&str> = order.iter().take(room).map(String::as_str).collect();
    let (run, wait): (Vec<PlanNode>, Vec<PlanNode>) = nodes
        .into_iter()
        .partition(|n| runs.contains(n.id.as_str()));
    (run, wait)
}
