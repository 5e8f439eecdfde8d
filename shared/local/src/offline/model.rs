//! [`OfflineModel`]: the indexes built at construction and the dispatch by call purpose.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use baton_core::ports::model::{CallPurpose, Model, ModelEvent, ModelRequest, ModelStream};
use baton_core::registry::{Agent, Planner, Registry};
use futures::{StreamExt, stream};

use super::answer::{self, ToolIndex};
use super::chunks::Reply;
use super::composing_reply;
use super::planning_reply::{self, SkillIndex};
use super::remember_reply;
use super::routing_reply::{self, Router};
use super::summary_reply;
use super::worker_reply;

/// A deterministic stand-in for a language model: no network, same input, same output.
///
/// It is not a language model. Orchestrators route by ranking each clause of the user's
/// message against their sub-agents' descriptions, routing examples and keywords (BM25),
/// or, when the words match nobody, a description of the message's pictures; every
/// specialist routed to whose card takes pictures is passed all of them (D-42); sub-agents
/// call the tool whose name and description best match the query and phrase
/// its records through the tool's `result_template`; composition joins the sub-agents'
/// answers by template; a summary lists the ids, names and requests it was given. Meant for local runs, demos and tests of everything around the
/// model.
#[derive(Clone)]
pub struct OfflineModel {
    inner: Arc<Inner>,
}

struct Inner {
    registry: Arc<Registry>,
    /// Orchestrator id → its sub-agents, ranked.
    routers: BTreeMap<Arc<str>, Router>,
    /// Planner id → its skills, ranked.
    planners: BTreeMap<Arc<str>, (Arc<Planner>, SkillIndex)>,
    /// Agent id → its own tools, ranked.
    tools: BTreeMap<Arc<str>, ToolIndex>,
    /// `ask_<id>` tool name → agent.
    asks: BTreeMap<String, Arc<Agent>>,
}

impl fmt::Debug for OfflineModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OfflineModel")
            .field("orchestrators", &self.inner.routers.len())
            .field("agents", &self.inner.tools.len())
            .finish_non_exhaustive()
    }
}

impl OfflineModel {
    /// Builds the model, indexing every orchestrator's sub-agents and every agent's tools.
    pub fn new(registry: Arc<Registry>) -> OfflineModel {
        let mut routers = BTreeMap::new();
        let mut tools = BTreeMap::new();
        let mut asks = BTreeMap::new();
        let mut planners = BTreeMap::new();
        for agent in registry.agents() {
            if let Some(planner) = agent.orchestration.as_ref().and_then(|o| o.mode.planner()) {
                let index = SkillIndex::new(planner, &registry);
                planners.insert(agent.id.clone(), (planner.clone(), index));
            }
            if agent.orchestration.is_some() {
                routers.insert(agent.id.clone(), Router::new(registry.sub_agents(agent)));
            }
            tools.insert(agent.id.clone(), ToolIndex::new(&agent.tools));
            asks.insert(agent.ask_tool_name().to_owned(), agent.clone());
        }
        OfflineModel {
            inner: Arc::new(Inner {
                registry,
                routers,
                planners,
                tools,
                asks,
            }),
        }
    }
}

impl Model for OfflineModel {
    fn stream(&self, request: &ModelRequest) -> ModelStream {
        // Deterministic and cheap: the whole reply is worked out now, then streamed.
        let events = self.inner.respond(request);
        stream::iter(events.into_iter().map(Ok)).boxed()
    }

    fn serves_as(&self) -> Option<(&str, &str)> {
        Some(("offline", "offline"))
    }
}

impl Inner {
    fn respond(&self, request: &ModelRequest) -> Vec<ModelEvent> {
        let mut reply = Reply::new();
        // A planned sub-agent's id is the planner's choice, not a card's.
        if request.purpose == CallPurpose::Agent && worker_reply::is_worker(request) {
            worker_reply::respond(&self.registry, request, &mut reply);
            return reply.finish(request);
        }
        if let Some((planner, skills)) = self.planners.get(&*request.agent_id)
            && !matches!(
                request.purpose,
                CallPurpose::Summarize | CallPurpose::Remember
            )
        {
            planning_reply::respond(planner, skills, request, &mut reply);
            return reply.finish(request);
        }
        let agent = self.registry.agent(&request.agent_id);
        match (request.purpose, agent) {
            // Not a language model: it has no judgement to add, so it never adds a note.
            (CallPurpose::Note, _) => {}
            (CallPurpose::Summarize, _) => summary_reply::respond(request, &mut reply),
            (CallPurpose::Remember, _) => remember_reply::respond(request, &mut reply),
            (CallPurpose::Compose, _) => {
                let label_of = |tool: &str| self.asks.get(tool).map(|a| a.label.to_string());
                composing_reply::respond(request, &label_of, &mut reply);
            }
            (CallPurpose::Route | CallPurpose::Reminder, Some(agent)) => {
                match self.routers.get(&agent.id) {
                    Some(router) => routing_reply::respond(router, request, &mut reply),
                    None => {
                        // Not a declared orchestrator: rank whatever agents it is offered.
                        let offered = request
                            .tools
                            .iter()
                            .filter_map(|t| self.asks.get(&*t.name).cloned())
                            .collect();
                        routing_reply::respond(&Router::new(offered), request, &mut reply);
                    }
                }
            }
            (CallPurpose::Agent, Some(agent)) => {
                let empty;
                let tools = match self.tools.get(&agent.id) {
                    Some(t) => t,
                    None => {
                        empty = ToolIndex::new(&[]);
                        &empty
                    }
                };
                answer::respond(&self.registry, agent, tools, request, &mut reply);
            }
            (_, None) => {
                tracing::warn!(agent = %request.agent_id, "offline model: unknown agent id");
                reply.text("Sorry, I can't help with that right now.");
            }
        }
        reply.finish(request)
    }
}

#[cfg(test)]
mod tests {
    use baton_core::message::{Content, Message, Role, ToolResultStatus};
    use baton_core::ports::model::{ModelEvent, StopReason};
    use serde_json::json;

    use super::super::testing::{collect, registry, request, text_of};
    use super::*;

    #[tokio::test]
    async fn the_same_request_gives_the_same_events() {
        let model = OfflineModel::new(registry());
        for (agent, purpose, text) in [
            (
                "assistant",
                CallPurpose::Route,
                "my receipt didn't scan and find me coffee deals",
            ),
            ("assistant", CallPurpose::Route, "hello"),
            ("shop", CallPurpose::Agent, "find me coffee deals"),
        ] {
            let a = collect(&model, request(agent, purpose, text)).await;
            let b = collect(
                &OfflineModel::new(registry()),
                request(agent, purpose, text),
            )
            .await;
            assert_eq!(a, b);
        }
    }

    #[tokio::test]
    async fn every_reply_ends_with_stop_then_usage() {
        let model = OfflineModel::new(registry());
        let events = collect(
            &model,
            request("assistant", CallPurpose::Route, "find me coffee deals"),
        )
        .await;
        let n = events.len();
        assert!(matches!(
            events[n - 2],
            ModelEvent::Stop(StopReason::ToolUse)
        ));
        let ModelEvent::Usage(usage) = &events[n - 1] else {
            panic!("no usage: {events:?}");
        };
        assert!(usage.input > 0 && usage.output > 0);
        assert_eq!((usage.cache_read, usage.cache_write), (0, 0));
    }

    #[tokio::test]
    async fn unknown_agents_and_empty_conversations_get_text() {
        let model = OfflineModel::new(registry());
        for purpose in [
            CallPurpose::Route,
            CallPurpose::Agent,
            CallPurpose::Reminder,
        ] {
            let events = collect(&model, request("nobody", purpose, "find deals")).await;
            assert!(!text_of(&events).is_empty());
            assert!(events.contains(&ModelEvent::Stop(StopReason::EndTurn)));
        }
        for (agent, purpose) in [
            ("assistant", CallPurpose::Route),
            ("assistant", CallPurpose::Compose),
            ("shop", CallPurpose::Agent),
        ] {
            let mut req = request(agent, purpose, "");
            req.messages.clear();
            let events = collect(&model, req).await;
            assert!(matches!(events.last(), Some(ModelEvent::Usage(_))));
        }
    }

    #[tokio::test]
    async fn a_sub_agent_never_calls_a_second_tool_round() {
        let model = OfflineModel::new(registry());
        let mut req = request("shop", CallPurpose::Agent, "coffee deals");
        req.messages.push(Message {
            role: Role::Assistant,
            content: vec![Content::ToolUse {
                id: "call_1".into(),
                name: "search_offers".into(),
                input: json!({"query": "coffee deals"}).into(),
            }],
        });
        req.messages.push(Message {
            role: Role::User,
            content: vec![Content::ToolResult {
                id: "call_1".into(),
                status: ToolResultStatus::Ok,
                content: json!({"tool": "search_offers", "status": "ok", "data": []}),
            }],
        });
        req.messages.push(Message::assistant("Let me look again."));
        let events = collect(&model, req).await;
        assert!(events.contains(&ModelEvent::Stop(StopReason::EndTurn)));
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, ModelEvent::ToolUseStart { .. }))
        );
    }
}
