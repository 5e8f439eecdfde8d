//! A planned sub-agent's call (it is offered `use_skill` only): the granted skill whose
//! words best match its mission, with arguments read from the mission; once the result is
//! in, the answer phrases it as a specialist's would be.

use baton_core::plan::USE_SKILL;
use baton_core::ports::model::ModelRequest;
use baton_core::registry::{Registry, Tool};
use serde_json::{Value, json};

use super::answer::answer_from;
use super::args::fill_object;
use super::bm25::{Bm25, terms};
use super::chunks::Reply;
use super::conversation::{next_call_number, results_since_user_turn, user_turn};

/// Whether the request is a planned sub-agent's: `use_skill` is on offer.
pub(crate) fn is_worker(request: &ModelRequest) -> bool {
    request.tools.iter().any(|t| &*t.name == USE_SKILL)
}

/// Answers a planned sub-agent's call into `reply`.
pub(crate) fn respond(registry: &Registry, request: &ModelRequest, reply: &mut Reply) {
    let results = results_since_user_turn(request);
    if !results.is_empty() {
        reply.text(&answer_from(registry, request, &results));
        return;
    }
    let mission = user_turn(request).map(|(_, t)| t.trim()).unwrap_or("");
    // The words its arguments come from: the mission, and what its inputs found (a
    // search "for them" needs the words of what "them" were).
    let inputs: String = request
        .system
        .iter()
        .filter(|b| !b.cache_point)
        .filter_map(|b| b.text.split_once("<results_from_prior_agents>"))
        .map(|(_, rest)| rest.to_owned())
        .collect();
    let words = format!("{mission} {inputs}");
    // The granted skills are exactly the enum of `use_skill`'s `skill`.
    let granted: Vec<(String, &Tool)> = request
        .tools
        .iter()
        .filter(|t| &*t.name == USE_SKILL)
        .flat_map(|t| {
            t.input_schema["properties"]["skill"]["enum"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|v| {
            let name = v.as_str()?.to_owned();
            let tool = registry.tool(name.split_once('.')?.1)?;
            Some((name, &**tool))
        })
        .collect();
    let index = Bm25::new(granted.iter().map(|(name, tool)| {
        let mut doc = terms(&name.replace(['.', '_'], " "));
        doc.extend(terms(&tool.description));
        doc
    }));
    let scores = index.scores(&terms(mission));
    let chosen = granted
        .iter()
        .zip(scores)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(g, _)| g);
    let Some((skill, tool)) = chosen else {
        reply.text("I have no skill for this mission.");
        return;
    };
    let arguments = Value::Object(fill_object(&tool.schema, &words));
    reply.tool_call(
        format!("call_{}", next_call_number(request)),
        USE_SKILL,
        &json!({"skill": skill, "arguments": arguments}),
    );
}
