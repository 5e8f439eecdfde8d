//! A planner's calls, lexically (D-16): the message is cut into clauses; each clause gets
//! the skill whose name, description and domain best match its words, and becomes one
//! sub-agent with the clause as its mission. A clause that starts with a sequence word
//! ("then", "after that") or refers back to what came before ("with the list", "them")
//! waits for the clause before it; the others run in parallel. Once the results are in,
//! the answer joins them. Like the offline routing, this is word matching, not reasoning.

use std::collections::BTreeMap;
use std::sync::Arc;

use baton_core::guard::words::{contains_phrase, fold};
use baton_core::plan::{DISPATCH_AGENT, GET_SKILL};
use baton_core::ports::model::{ModelRequest, ToolChoice};
use baton_core::registry::{Planner, Registry, Skill};
use serde_json::{Value, json};

use super::answer::ToolIndex;
use super::chunks::Reply;
use super::conversation::{decode, next_call_number, results_since_user_turn, user_turn};
use super::routing_reply::Router;
use super::segment;

/// Words that start a step after the one before.
const THEN: &[&str] = &[
    "then",
    "after that",
    "afterwards",
    "and then",
    "next",
    "finally",
];
/// Words that refer to an earlier step's result.
const BACK: &[&str] = &[
    "with the list",
    "with that",
    "with those",
    "with them",
    "with the results",
    "using that",
    "using those",
    "using them",
    "from that",
    "from those",
    "them",
    "those",
];

/// The planner's skills, ranked as routing and the specialists rank: the domain whose
/// card best matches the words, then that domain's tool that best matches them.
pub(crate) struct SkillIndex {
    domains: Router,
    tools: BTreeMap<Arc<str>, (ToolIndex, Vec<Arc<Skill>>)>,
}

impl SkillIndex {
    /// Indexes the planner's domains (their cards) and each domain's tools.
    pub(crate) fn new(planner: &Planner, registry: &Registry) -> Self {
        let cards = planner
            .catalog
            .domains
            .iter()
            .filter_map(|d| registry.agent(&d.id).cloned())
            .collect();
        let tools = planner
            .catalog
            .domains
            .iter()
            .map(|d| {
                // In the card's own order, as its specialist ranks them (ties go first).
                let tools: Vec<_> = registry
                    .agent(&d.id)
                    .map(|a| a.tools.clone())
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|t| d.skills.iter().any(|s| s.tool.id == t.id))
                    .collect();
                (d.id.clone(), (ToolIndex::new(&tools), d.skills.clone()))
            })
            .collect();
        SkillIndex {
            domains: Router::new(cards),
            tools,
        }
    }

    /// The best-matching skill for some words, if a domain matches at all.
    fn best(&self, words: &str) -> Option<&Arc<Skill>> {
        let domain = self.domains.rank(words)?;
        let (index, skills) = self.tools.get(&domain.id)?;
        let offered: Vec<&str> = skills.iter().map(|s| &*s.tool.id).collect();
        let tool = index.pick(words, &offered)?;
        skills.iter().find(|s| &*s.tool.id == tool)
    }
}

/// One planned clause.
struct Clause<'a> {
    words: &'a str,
    skill: Arc<Skill>,
    after_previous: bool,
}

/// Answers a planner's call into `reply`.
pub(crate) fn respond(
    planner: &Planner,
    skills: &SkillIndex,
    request: &ModelRequest,
    reply: &mut Reply,
) {
    let results = results_since_user_turn(request);
    if results
        .iter()
        .any(|r| decode::<Value>(r.content).is_some_and(|v| carries_results(&v)))
    {
        reply.text(&compose(&results));
        return;
    }
    let text = user_turn(request).map(|(_, t)| t.trim()).unwrap_or("");
    let clauses = plan(skills, text);
    let first = next_call_number(request);
    if clauses.is_empty() {
        match request.tool_choice {
            // Told to use a tool: the planner can only look, and then say it cannot help.
            ToolChoice::Any | ToolChoice::Tool(_) if results.is_empty() => {
                if let Some(d) = planner.catalog.domains.first() {
                    reply.tool_call(
                        format!("call_{first}"),
                        GET_SKILL,
                        &json!({"domain": &*d.id}),
                    );
                    return;
                }
                reply.text(&offer(planner));
            }
            _ => reply.text(&offer(planner)),
        }
        return;
    }
    let mut ids: Vec<String> = Vec::new();
    for (i, c) in clauses.iter().enumerate() {
        let base = c.skill.tool.id.replace('-', "_");
        let mut id = base.clone();
        let mut n = 2;
        while ids.contains(&id) {
            id = format!("{base}_{n}");
            n += 1;
        }
        let mut args = json!({
            "agent_id": id,
            "mission": c.words,
            "skills": [&*c.skill.name],
        });
        if c.after_previous
            && let Some(prev) = ids.last()
        {
            args["depends_on"] = json!([prev]);
        }
        reply.tool_call(format!("call_{}", first + i), DISPATCH_AGENT, &args);
        ids.push(id);
    }
}

/// What the planner can do, when nothing in the message matched a skill.
fn offer(planner: &Planner) -> String {
    let domains: Vec<&str> = planner.catalog.domains.iter().map(|d| &*d.id).collect();
    format!(
        "I can plan work with these skills: {}. What would you like me to do?",
        domains.join(", ")
    )
}

/// The clauses of `text` that match a skill, each marked when it waits for the one before.
fn plan<'t>(skills: &SkillIndex, text: &'t str) -> Vec<Clause<'t>> {
    let mut out: Vec<Clause<'t>> = Vec::new();
    for part in split_commas(text) {
        for span in segment::split(part) {
            let raw = span.of(part);
            let (words, then) = strip_then(raw);
            let Some(skill) = skills.best(words) else {
                continue;
            };
            let folded = fold(words);
            let back = BACK.iter().any(|b| contains_phrase(&folded, b));
            out.push(Clause {
                words,
                skill: skill.clone(),
                after_previous: !out.is_empty() && (then || back),
            });
        }
    }
    out
}

/// A list of steps is often written with commas: each comma starts a clause.
fn split_commas(text: &str) -> impl Iterator<Item = &str> {
    text.split(',').map(str::trim).filter(|p| !p.is_empty())
}

/// The clause without a leading sequence word, and whether it had one.
fn strip_then(clause: &str) -> (&str, bool) {
    let trimmed = clause.trim();
    let lower = trimmed.to_lowercase();
    for word in THEN {
        if lower.starts_with(word)
            && lower[word.len()..]
                .chars()
                .next()
                .is_none_or(|c| !c.is_alphanumeric())
        {
            return (
                trimmed[word.len()..].trim_start_matches([' ', ',']).trim(),
                true,
            );
        }
    }
    (trimmed, false)
}

/// Whether a tool result carries sub-agents' results (a dispatch or a collection).
fn carries_results(v: &Value) -> bool {
    v.get("agents").is_some() || (v.get("agent_id").is_some() && v.get("status").is_some())
}

/// The answer from the sub-agents' results: each usable result in order, then a plain
/// sentence for each one that did not finish.
fn compose(results: &[super::conversation::ResultRef<'_>]) -> String {
    let mut entries: Vec<Value> = Vec::new();
    for r in results {
        let Some(v) = decode::<Value>(r.content) else {
            continue;
        };
        match v.get("agents").and_then(Value::as_array) {
            Some(list) => entries.extend(list.iter().cloned()),
            None if carries_results(&v) => entries.push(v),
            None => {}
        }
    }
    let mut seen: Vec<String> = Vec::new();
    let mut done = Vec::new();
    let mut missing = Vec::new();
    for e in entries {
        let id = e
            .get("agent_id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if seen.contains(&id) {
            continue;
        }
        seen.push(id.clone());
        let status = e.get("status").and_then(Value::as_str).unwrap_or_default();
        let result = e.get("result").and_then(Value::as_str).unwrap_or_default();
        match status {
            "completed" | "partial" if !result.trim().is_empty() => {
                done.push(result.trim().to_owned())
            }
            _ => missing.push(id.replace('_', " ")),
        }
    }
    let mut out = done.join("\n\n");
    if !missing.is_empty() {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(&format!(
            "I couldn't finish this part: {}.",
            missing.join(", ")
        ));
    }
    if out.is_empty() {
        out.push_str("I couldn't get that done right now. Please try again in a moment.");
    }
    out
}
