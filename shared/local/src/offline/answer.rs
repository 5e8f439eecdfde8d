//! A sub-agent's call (purpose `Agent`): pick one of its tools, then answer from the data.
//!
//! One tool round at most: once any result is in the conversation, the reply is text.

use std::sync::Arc;

use baton_core::message::ToolResultStatus;
use baton_core::ports::model::{ModelRequest, ToolChoice};
use baton_core::registry::{Agent, Registry, Tool};
use baton_core::tool_result::{DataStatus, ToolData};
use serde_json::Value;

use super::args::fill_object;
use super::bm25::{Bm25, terms};
use super::chunks::Reply;
use super::conversation::{
    ResultRef, decode, next_call_number, results_in_last_message, results_since_user_turn,
    tool_name_of, user_turn,
};
use super::render::{records, render_record};
use super::segment;

/// Records shown per result; the rest are counted.
const MAX_RECORDS: usize = 5;

/// The ranked tools of one agent.
#[derive(Debug, Clone)]
pub(crate) struct ToolIndex {
    tools: Vec<Arc<Tool>>,
    index: Bm25,
}

impl ToolIndex {
    /// Indexes each tool's id words and description.
    pub(crate) fn new(tools: &[Arc<Tool>]) -> Self {
        let index = Bm25::new(tools.iter().map(|t| {
            let mut doc = terms(&t.id.replace('_', " "));
            doc.extend(terms(&t.description));
            doc
        }));
        ToolIndex {
            tools: tools.to_vec(),
            index,
        }
    }

    /// The best-matching tool on offer, if any scores above zero.
    fn best<'a>(&self, words: &str, offered: &'a [&'a str]) -> Option<&'a str> {
        let scores = self.index.scores(&terms(words));
        let mut best: Option<(&str, f64)> = None;
        for (tool, score) in self.tools.iter().zip(scores) {
            let Some(name) = offered.iter().find(|n| **n == &*tool.id) else {
                continue;
            };
            if score > 0.0 && best.is_none_or(|(_, b)| score > b) {
                best = Some((name, score));
            }
        }
        best.map(|(n, _)| n)
    }

    /// One tool per clause that matches a different tool ("my balance and what 10,000
    /// points are worth" asks two), each with its own clause; the whole query otherwise.
    fn pick_per_clause<'a, 'q>(
        &self,
        query: &'q str,
        offered: &'a [&'a str],
    ) -> Vec<(&'a str, &'q str)> {
        let mut calls: Vec<(&str, &str)> = Vec::new();
        for span in segment::split(query) {
            let clause = span.of(query);
            if let Some(name) = self.best(clause, offered)
                && !calls.iter().any(|(n, _)| *n == name)
            {
                calls.push((name, clause));
            }
        }
        if calls.len() < 2 {
            return self
                .pick(query, offered)
                .map(|n| vec![(n, query)])
                .unwrap_or_default();
        }
        calls
    }

    /// The offered tool that best matches the words, else the agent's first own tool on
    /// offer, else the first offered one.
    pub(crate) fn pick<'a>(&self, words: &str, offered: &'a [&'a str]) -> Option<&'a str> {
        self.best(words, offered).or_else(|| {
            // Nothing matched: the agent's first own tool on offer, else whatever is offered.
            self.tools
                .iter()
                .find_map(|t| offered.iter().copied().find(|n| *n == &*t.id))
                .or_else(|| offered.first().copied())
        })
    }
}

/// Answers an `Agent` call into `reply`.
pub(crate) fn respond(
    registry: &Registry,
    agent: &Agent,
    tools: &ToolIndex,
    request: &ModelRequest,
    reply: &mut Reply,
) {
    let mut results = results_in_last_message(request);
    if results.is_empty() {
        results = results_since_user_turn(request);
    }
    if !results.is_empty() {
        reply.text(&answer_from(registry, request, &results));
        return;
    }
    let query = user_turn(request).map(|(_, t)| t.trim()).unwrap_or("");
    let offered: Vec<&str> = request.tools.iter().map(|t| &*t.name).collect();
    let chosen: Vec<(&str, &str)> = match &request.tool_choice {
        ToolChoice::None => Vec::new(),
        ToolChoice::Tool(name) => vec![(name.as_str(), query)],
        // Nothing to look up: say what this agent is for instead of calling blind.
        _ if query.is_empty() => Vec::new(),
        ToolChoice::Auto | ToolChoice::Any => tools.pick_per_clause(query, &offered),
    };
    if chosen.is_empty() {
        reply.text(&format!("Here's how I can help: {}", agent.description));
        return;
    }
    let first = next_call_number(request);
    for (i, (name, words)) in chosen.into_iter().enumerate() {
        let schema = request
            .tools
            .iter()
            .find(|t| &*t.name == name)
            .map(|t| t.input_schema.clone())
            .or_else(|| registry.tool(name).map(|t| t.schema.clone()));
        let args = schema.map(|s| fill_object(&s, words)).unwrap_or_default();
        reply.tool_call(format!("call_{}", first + i), name, &Value::Object(args));
    }
}

/// The answer text for some tool results.
pub(crate) fn answer_from(
    registry: &Registry,
    request: &ModelRequest,
    results: &[ResultRef<'_>],
) -> String {
    let mut bullets: Vec<String> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    let mut partial = false;
    let mut empty = false;
    for r in results {
        let data = decode::<ToolData>(r.content).or_else(|| {
            // A bare payload from a successful call is still data; anything else is not.
            let tool = tool_name_of(request, r.id).unwrap_or_default().to_owned();
            match (r.status, r.content) {
                (ToolResultStatus::Ok, Value::Object(_) | Value::Array(_)) => Some(ToolData {
                    tool,
                    status: DataStatus::Ok,
                    data: r.content.clone(),
                    note: None,
                }),
                _ => None,
            }
        });
        let Some(data) = data else {
            notes.push("That information isn't available right now.".to_owned());
            continue;
        };
        match data.status {
            DataStatus::Unavailable => notes.push(
                data.note
                    .filter(|n| !n.trim().is_empty())
                    .unwrap_or_else(|| "That information isn't available right now.".to_owned()),
            ),
            DataStatus::Ok | DataStatus::Partial => {
                partial |= data.status == DataStatus::Partial;
                let template = registry
                    .tool(&data.tool)
                    .or_else(|| registry.tool(tool_name_of(request, r.id).unwrap_or_default()))
                    .and_then(|t| t.result_template.clone());
                let all = records(&data.data);
                let shown: Vec<String> = all
                    .iter()
                    .take(MAX_RECORDS)
                    .map(|rec| render_record(rec, template.as_deref()))
                    .filter(|line| !line.is_empty())
                    .collect();
                if shown.is_empty() {
                    empty = true;
                }
                bullets.extend(shown.into_iter().map(|line| format!("- {line}")));
                if all.len() > MAX_RECORDS {
                    bullets.push(format!("- …and {} more.", all.len() - MAX_RECORDS));
                }
            }
        }
    }
    let mut out = String::new();
    if !bullets.is_empty() {
        out.push_str("Here's what I found:\n");
        out.push_str(&bullets.join("\n"));
        if partial {
            out.push_str("\n\nSome of this information may be incomplete right now.");
        }
    } else if empty {
        out.push_str("I couldn't find anything matching that.");
    }
    if !notes.is_empty() {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        notes.dedup();
        out.push_str(&notes.join(" "));
    }
    if out.is_empty() {
        out.push_str("I couldn't find anything matching that.");
    }
    out
}

#[cfg(test)]
mod tests {
    use baton_core::message::{Content, Message, Role};
    use baton_core::ports::model::{CallPurpose, ModelEvent, StopReason};
    use serde_json::json;

    use super::super::OfflineModel;
    use super::super::testing::{calls_of, collect, registry, request, text_of};
    use super::*;

    fn after_call(
        query: &str,
        tool: &str,
        status: ToolResultStatus,
        content: Value,
    ) -> ModelRequest {
        let mut req = request("shop", CallPurpose::Agent, query);
        req.messages.push(Message {
            role: Role::Assistant,
            content: vec![Content::ToolUse {
                id: "call_1".into(),
                name: tool.into(),
                input: json!({"query": query}).into(),
            }],
        });
        req.messages.push(Message {
            role: Role::User,
            content: vec![Content::ToolResult {
                id: "call_1".into(),
                status,
                content,
            }],
        });
        req
    }

    #[tokio::test]
    async fn two_clauses_for_two_tools_make_two_calls_each_with_its_clause() {
        let model = OfflineModel::new(registry());
        let events = collect(
            &model,
            request(
                "shop",
                CallPurpose::Agent,
                "find me coffee deals and list the product categories",
            ),
        )
        .await;
        let calls = calls_of(&events);
        let names: Vec<&str> = calls.iter().map(|c| c.1.as_str()).collect();
        assert_eq!(names, ["search_offers", "list_categories"]);
        assert_eq!(calls[0].2, json!({"query": "find me coffee deals"}));
        assert_ne!(calls[0].0, calls[1].0, "each call has its own id");
    }

    #[tokio::test]
    async fn the_matching_tool_is_called_with_the_query() {
        let model = OfflineModel::new(registry());
        let events = collect(
            &model,
            request("shop", CallPurpose::Agent, "find me coffee deals"),
        )
        .await;
        let calls = calls_of(&events);
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].1, "search_offers");
        assert_eq!(calls[0].2, json!({"query": "find me coffee deals"}));
        assert!(events.contains(&ModelEvent::Stop(StopReason::ToolUse)));

        let events = collect(
            &model,
            request(
                "shop",
                CallPurpose::Agent,
                "which product categories are there",
            ),
        )
        .await;
        assert_eq!(calls_of(&events)[0].1, "list_categories");
    }

    #[tokio::test]
    async fn an_agent_without_a_match_uses_its_first_tool_and_one_without_tools_talks() {
        let model = OfflineModel::new(registry());
        let calls = calls_of(&collect(&model, request("shop", CallPurpose::Agent, "hello")).await);
        assert_eq!(calls[0].1, "search_offers");

        let events = collect(&model, request("rewards", CallPurpose::Agent, "my balance")).await;
        assert!(calls_of(&events).is_empty());
        assert!(text_of(&events).contains("points balance"));
    }

    #[tokio::test]
    async fn records_render_with_the_tool_template() {
        let model = OfflineModel::new(registry());
        let items: Vec<Value> = (1..=7)
            .map(|i| json!({"title": format!("Coffee {i}"), "price": i, "store": {"name": "Mart"}}))
            .collect();
        let data =
            json!({"tool": "search_offers", "status": "ok", "data": {"count": 7, "items": items}});
        let req = after_call("coffee deals", "search_offers", ToolResultStatus::Ok, data);
        let events = collect(&model, req).await;
        let text = text_of(&events);
        assert!(
            text.starts_with("Here's what I found:\n- Coffee 1 for $1 at Mart\n"),
            "{text}"
        );
        assert!(
            text.contains("- Coffee 5 for $5 at Mart\n- …and 2 more."),
            "{text}"
        );
        assert!(!text.contains("Coffee 6"));
        assert!(events.contains(&ModelEvent::Stop(StopReason::EndTurn)));
        assert!(calls_of(&events).is_empty());
    }

    #[tokio::test]
    async fn untemplated_records_are_key_value_lines_and_partial_data_is_flagged() {
        let model = OfflineModel::new(registry());
        let data = json!({"tool": "list_categories", "status": "partial",
            "data": [{"name": "Dairy", "item_count": 12, "tags": ["cold"]}]});
        let req = after_call("categories", "list_categories", ToolResultStatus::Ok, data);
        let text = text_of(&collect(&model, req).await);
        assert!(
            text.contains("item count: 12") && text.contains("name: Dairy"),
            "{text}"
        );
        assert!(!text.contains("cold"), "{text}");
        assert!(text.contains("may be incomplete"), "{text}");
    }

    #[tokio::test]
    async fn unavailable_data_is_said_in_plain_words() {
        let model = OfflineModel::new(registry());
        let data = json!({"tool": "search_offers", "status": "unavailable",
            "note": "Offers can't be loaded at the moment."});
        let req = after_call("coffee", "search_offers", ToolResultStatus::Error, data);
        assert_eq!(
            text_of(&collect(&model, req).await),
            "Offers can't be loaded at the moment."
        );
    }

    #[tokio::test]
    async fn malformed_results_do_not_panic_or_loop() {
        let model = OfflineModel::new(registry());
        for content in [
            json!("{\"tool\": \"search_offers\", \"status\": "),
            json!(null),
            json!(42),
            json!({"tool": 3}),
            json!({"tool": "search_offers", "status": "ok", "data": "plain"}),
            json!({"tool": "search_offers", "status": "ok", "data": []}),
        ] {
            let req = after_call(
                "coffee",
                "search_offers",
                ToolResultStatus::Ok,
                content.clone(),
            );
            let events = collect(&model, req).await;
            assert!(calls_of(&events).is_empty(), "{content}");
            assert!(!text_of(&events).is_empty(), "{content}");
        }
    }
}
