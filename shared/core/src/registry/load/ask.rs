//! The `ask_<id>` tools (D-6): the tool other orchestrators call a card through, and the
//! tools each model sees once every card has one.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use super::Loader;
use super::card::Card;
use super::tools::tool_def;
use crate::model::ToolDef;
use crate::registry::raw::RawCard;
use crate::registry::{Agent, PICTURES_ARG};

/// The arguments the runtime gives a meaning to; a card's `ask_args` may not redefine them
/// (`pictures` is reserved even on a card that takes none, so that no card's own argument
/// is ever read as pictures to pass on).
const ASK_FIELDS: [&str; 4] = ["query", "prior_context", "intent_count", PICTURES_ARG];

impl Loader<'_> {
    /// The card's ask tool schema: the built-in arguments (with `pictures` when the card
    /// takes pictures), then its `ask_args`; with its compiled form, `None` when it does
    /// not compile (a problem then says why).
    pub(super) fn ask_schema(&mut self, card: Card<'_>) -> (Value, Option<jsonschema::Validator>) {
        let mut properties = serde_json::Map::new();
        properties.insert("query".into(), json!({"type": "string", "minLength": 1, "description": "The user's words for this specialist, verbatim: do not rephrase."}));
        properties.insert("prior_context".into(), json!({"type": "string", "description": "When the user switches topic: the entities, ids and goals from earlier turns this specialist needs."}));
        properties.insert("intent_count".into(), json!({"type": "integer", "minimum": 1, "description": "How many distinct requests the user's latest message contains, in total."}));
        if card.raw.takes_pictures {
            // Numbers rather than ids: the model sees the pictures in order, not their names.
            properties.insert(PICTURES_ARG.into(), json!({"type": "array", "items": {"type": "integer", "minimum": 1}, "uniqueItems": true, "description": "The pictures sent with the user's latest message that this specialist needs to see, by number: 1 is the first. Leave out when the message has none or this request needs none."}));
        }
        for (name, schema) in &card.raw.ask_args {
            if ASK_FIELDS.contains(&name.as_str()) {
                self.problems.add(
                    card.file,
                    format!("ask_args.{name}"),
                    name,
                    "this argument is built in",
                );
                continue;
            }
            if !schema.is_object() {
                self.problems.add(
                    card.file,
                    format!("ask_args.{name}"),
                    schema.to_string(),
                    "must be a JSON Schema object",
                );
                continue;
            }
            properties.insert(name.clone(), schema.clone());
        }
        let schema = json!({
            "type": "object",
            "properties": Value::Object(properties),
            "required": ["query", "intent_count"],
        });
        let validator = match jsonschema::validator_for(&schema) {
            Ok(v) => Some(v),
            Err(e) => {
                self.problems.add(
                    card.file,
                    "ask_args",
                    e.instance_path().to_string(),
                    format!("not a valid JSON Schema: {e}"),
                );
                None
            }
        };
        (schema, validator)
    }

    /// Two ids that differ only by '-' and '_' would give one tool name to two cards.
    pub(super) fn check_ask_names(&mut self, agents: &BTreeMap<String, Agent>) {
        let mut ask_names: BTreeMap<String, &str> = BTreeMap::new();
        for agent in agents.values() {
            let name = agent.ask_tool.name.to_string();
            match ask_names.get(&name) {
                Some(other) => self.problems.add(
                    &agent.file,
                    "id",
                    &*agent.id,
                    format!("its tool name {name} is also the tool name of card {other}"),
                ),
                None => {
                    ask_names.insert(name, &agent.id);
                }
            }
        }
    }
}

/// The card's ask tool as models see it.
pub(super) fn ask_tool(raw: &RawCard, description: &Arc<str>, schema: Value) -> ToolDef {
    ToolDef {
        name: Arc::from(super::super::ask_tool_name(&raw.id)),
        description: description.clone(),
        input_schema: Arc::new(schema),
    }
}

/// The tool a specialist with `asks_user: true` asks the user a question with.
pub(crate) fn ask_user_tool() -> ToolDef {
    ToolDef {
        name: Arc::from(crate::interruption::ASK_USER_TOOL),
        description: Arc::from(
            "Ask the user one short question when you cannot go on without their answer \
             (a choice only they can make, a detail they left out). The turn waits for the \
             answer; do not ask what a tool can look up.",
        ),
        input_schema: Arc::new(serde_json::json!({
            "type": "object",
            "properties": {
                "question": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The question, in plain words, as the user will read it."
                }
            },
            "required": ["question"],
            "additionalProperties": false
        })),
    }
}

/// Sets each card's model tools: its own tools, then for an orchestrator one ask tool per
/// sub-agent in declared order (D-6).
pub(super) fn link_model_tools(agents: &mut BTreeMap<String, Agent>) {
    let asks: BTreeMap<String, ToolDef> = agents
        .iter()
        .map(|(id, a)| (id.clone(), a.ask_tool.clone()))
        .collect();
    for agent in agents.values_mut() {
        let mut defs: Vec<ToolDef> = agent.tools.iter().map(|t| tool_def(t)).collect();
        if agent.asks_user && agent.orchestration.is_none() {
            defs.push(ask_user_tool());
        }
        if let Some(o) = &agent.orchestration {
            defs.extend(o.sub_agents.iter().filter_map(|s| asks.get(&**s).cloned()));
            if let Some(planner) = o.mode.planner() {
                defs.extend(super::planner::model_tools(planner));
            }
        }
        agent.model_tools = Arc::from(defs);
    }
}
