//! The tools a planner sees (`get_skill`, `dispatch_agent`, `get_agent_results`) and the
//! one tool each of its sub-agents sees (`use_skill`, scoped to the skills it was granted).
//! Every definition is built from sorted data, so the same skills always give the same
//! bytes and the prompt cache holds.

use std::fmt::Write as _;
use std::sync::Arc;

use serde_json::{Value, json};

use super::skills::{Skill, SkillCatalog};
use super::{DISPATCH_AGENT, GET_AGENT_RESULTS, GET_SKILL, USE_SKILL};
use crate::model::ToolDef;

fn tool(name: &str, description: String, schema: Value) -> ToolDef {
    ToolDef {
        name: Arc::from(name),
        description: Arc::from(description),
        input_schema: Arc::new(schema),
    }
}

/// The planner's three tools, in a fixed order.
pub fn planner_tools(catalog: &SkillCatalog, default_calls: u32, max_calls: u32) -> Vec<ToolDef> {
    let mut domains = String::new();
    for d in &catalog.domains {
        let _ = write!(domains, "\n- {}: {}", d.id, d.description);
    }
    vec![
        tool(
            GET_SKILL,
            format!(
                "Describe the skills of one domain: each skill's name, what it does and its \
                 arguments. Call it before dispatching sub-agents that need the domain. \
                 Domains:{domains}"
            ),
            json!({
                "type": "object",
                "properties": {
                    "domain": {"type": "string", "enum": catalog.domains.iter().map(|d| &*d.id).collect::<Vec<_>>()}
                },
                "required": ["domain"]
            }),
        ),
        tool(
            DISPATCH_AGENT,
            format!(
                "Create a sub-agent for one focused task. It gets its mission, the skills you \
                 grant (it can use no others) and the results of the sub-agents it depends on; \
                 it does not see the conversation, so put what it needs in the mission or \
                 context. Dispatch several in one reply: they run in parallel unless \
                 depends_on orders them. The result of each is returned once the step has run. \
                 Tool calls default to {default_calls}, at most {max_calls}."
            ),
            json!({
                "type": "object",
                "properties": {
                    "agent_id": {"type": "string", "description": "A short unique id, e.g. receipts_search; dependencies refer to it."},
                    "mission": {"type": "string", "description": "What it must do: inputs, expected output, when it is done."},
                    "skills": {"type": "array", "items": {"type": "string"}, "description": "Skill names (<domain>.<skill>) it may use."},
                    "context": {"type": "string", "description": "Anything else it needs to know, briefly."},
                    "depends_on": {"type": "array", "items": {"type": "string"}, "description": "Ids of sub-agents whose results it needs; it starts after they finish."},
                    "max_tool_calls": {"type": "integer", "minimum": 1, "description": "Tool calls it may make."}
                },
                "required": ["agent_id", "mission", "skills"]
            }),
        ),
        tool(
            GET_AGENT_RESULTS,
            "Read what dispatched sub-agents came to: status (completed, partial, failed, \
             timeout, skipped, not_run) and result. Without agent_ids, all of this turn's."
                .to_owned(),
            json!({
                "type": "object",
                "properties": {
                    "agent_ids": {"type": "array", "items": {"type": "string"}}
                }
            }),
        ),
    ]
}

/// `get_skill`'s result for `domain`.
///
/// # Errors
/// No such domain; the message lists the domains.
pub fn skill_document(catalog: &SkillCatalog, domain: &str) -> Result<Value, String> {
    let Some(d) = catalog.domain(domain.trim()) else {
        return Err(format!(
            "There is no domain {domain:?}. The domains are {}.",
            catalog.domain_list()
        ));
    };
    let skills: Vec<Value> = d
        .skills
        .iter()
        .map(|s| {
            json!({
                "name": &*s.name,
                "description": &*s.tool.description,
                "parameters": &*s.tool.schema,
            })
        })
        .collect();
    Ok(json!({"domain": &*d.id, "description": &*d.description, "skills": skills}))
}

/// A sub-agent's `use_skill`: `skill` is an enum of exactly its granted skills, sorted by
/// name, and the description lists each with its arguments.
pub fn use_skill_tool(granted: &[Arc<Skill>]) -> ToolDef {
    let mut skills: Vec<&Arc<Skill>> = granted.iter().collect();
    skills.sort_by(|a, b| a.name.cmp(&b.name));
    skills.dedup_by(|a, b| a.name == b.name);
    let mut description = String::from(
        "Run one of your skills with arguments that match its parameters. Your skills:",
    );
    for s in &skills {
        let _ = write!(
            description,
            "\n\n{}: {}\nParameters: {}",
            s.name,
            s.tool.description,
            serde_json::to_string(&*s.tool.schema).unwrap_or_default()
        );
    }
    let names: Vec<&str> = skills.iter().map(|s| &*s.name).collect();
    tool(
        USE_SKILL,
        description,
        json!({
            "type": "object",
            "properties": {
                "skill": {"type": "string", "enum": names},
                "arguments": {"type": "object"}
            },
            "required": ["skill", "arguments"]
        }),
    )
}
