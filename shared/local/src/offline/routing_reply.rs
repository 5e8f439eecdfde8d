//! Routing (purposes `Route` and `Reminder`): which sub-agents get which words.
//!
//! Each clause of the user's message is ranked against the sub-agents offered as `ask_<id>`
//! tools; adjacent clauses that land on the same agent merge, clauses that match nobody
//! join a neighbour, and each distinct agent gets one call.

use std::sync::Arc;

use baton_core::guard::fastpath;
use baton_core::ports::model::{CallPurpose, ModelRequest, ToolChoice, ToolDef};
use baton_core::registry::{Agent, PICTURES_ARG};
use serde_json::{Value, json};

use super::args::fill_object;
use super::bm25::{Bm25, terms};
use super::chunks::Reply;
use super::conversation::{
    calls_since_user_turn, join_labels, next_call_number, user_picture_count, user_pictures,
    user_turn,
};
use super::looks;
use super::segment::{self, Span};

/// Lowest BM25 score that counts as a match when there are several candidates. A term
/// shared by every card scores about 0.13, one shared by a single card of three about 1.
const MIN_SCORE: f64 = 0.2;
/// A clause stays with the previous clause's agent when that agent scores at least this
/// share of the best score: fewer spurious splits of one request into two.
const STICKINESS: f64 = 0.75;

/// The ranked sub-agents of one orchestrator.
#[derive(Debug, Clone)]
pub(crate) struct Router {
    agents: Vec<Arc<Agent>>,
    index: Bm25,
}

impl Router {
    /// Indexes each agent's label, description, examples and keywords (keywords twice:
    /// they are the card author's strongest signal).
    pub(crate) fn new(agents: Vec<Arc<Agent>>) -> Self {
        let index = Bm25::new(agents.iter().map(|a| {
            let mut doc = terms(&a.label);
            doc.extend(terms(&a.description));
            for example in &a.routing.examples {
                doc.extend(terms(example));
            }
            for _ in 0..2 {
                for keyword in &a.routing.keywords {
                    doc.extend(terms(keyword));
                }
            }
            doc
        }));
        Router { agents, index }
    }

    /// The agent that best matches some words, among all, if any scores above the
    /// threshold.
    pub(crate) fn rank(&self, words: &str) -> Option<&Arc<Agent>> {
        let all: Vec<usize> = (0..self.agents.len()).collect();
        self.best(words, &all, None)
            .and_then(|i| self.agents.get(i))
    }

    /// The best candidate for some words, if any scores above the threshold.
    fn best(&self, words: &str, candidates: &[usize], previous: Option<usize>) -> Option<usize> {
        let scores = self.index.scores(&terms(words));
        let min = if self.index.len() <= 1 {
            f64::MIN_POSITIVE
        } else {
            MIN_SCORE
        };
        let (best, score) = argmax(&scores, candidates)?;
        if score < min {
            return None;
        }
        match previous {
            Some(p) if p != best && scores.get(p).is_some_and(|s| *s >= score * STICKINESS) => {
                Some(p)
            }
            _ => Some(best),
        }
    }
}

/// The highest-scoring candidate; ties go to the earlier one (declared order).
fn argmax(scores: &[f64], candidates: &[usize]) -> Option<(usize, f64)> {
    candidates.iter().fold(None, |best, &i| {
        let s = scores.get(i).copied().unwrap_or(0.0);
        match best {
            Some((_, b)) if b >= s => best,
            _ => Some((i, s)),
        }
    })
}

/// One planned `ask_<id>` call.
#[derive(Debug, Clone, PartialEq)]
struct Call {
    agent: usize,
    query: String,
}

/// Splits the text into calls: one per distinct agent, in order of first appearance.
fn plan(router: &Router, text: &str, candidates: &[usize]) -> Vec<Call> {
    let spans = segment::split(text);
    let mut assigned: Vec<Option<usize>> = Vec::with_capacity(spans.len());
    for span in &spans {
        let previous = assigned.last().copied().flatten();
        assigned.push(router.best(span.of(text), candidates, previous));
    }
    // Clauses that match nobody join the clause before them, or else the one after.
    let mut last = None;
    for a in assigned.iter_mut() {
        match a {
            Some(x) => last = Some(*x),
            None => *a = last,
        }
    }
    let Some(first) = assigned.iter().flatten().next().copied() else {
        return Vec::new();
    };
    // Adjacent clauses of one agent become one span, cut verbatim from the text.
    let mut groups: Vec<(usize, Span)> = Vec::new();
    for (span, agent) in spans.iter().zip(assigned) {
        let agent = agent.unwrap_or(first);
        match groups.last_mut() {
            Some((a, g)) if *a == agent => g.end = span.end,
            _ => groups.push((agent, *span)),
        }
    }
    let mut calls: Vec<Call> = Vec::new();
    for (agent, span) in groups {
        let part = span.of(text);
        match calls.iter_mut().find(|c| c.agent == agent) {
            Some(call) => {
                let ends_sentence = call.query.ends_with(['.', '!', '?']);
                call.query.push_str(if ends_sentence { " " } else { "; " });
                call.query.push_str(part);
            }
            None => calls.push(Call {
                agent,
                query: part.to_owned(),
            }),
        }
    }
    if let [only] = calls.as_mut_slice() {
        only.query = text.trim().to_owned();
    }
    calls
}

/// Answers a `Route` or `Reminder` call into `reply`.
pub(crate) fn respond(router: &Router, request: &ModelRequest, reply: &mut Reply) {
    let offered: Vec<&ToolDef> = request.tools.iter().collect();
    let candidates: Vec<usize> = (0..router.agents.len())
        .filter(|&i| {
            offered
                .iter()
                .any(|t| *t.name == *router.agents[i].ask_tool_name())
        })
        .collect();
    let labels: Vec<&str> = if candidates.is_empty() {
        router.agents.iter().map(|a| &*a.label).collect()
    } else {
        candidates
            .iter()
            .map(|&i| &*router.agents[i].label)
            .collect()
    };
    let text = user_turn(request).map(|(_, t)| t.trim()).unwrap_or("");

    match &request.tool_choice {
        ToolChoice::None => {
            reply.text(&text_only(text, &labels));
            return;
        }
        ToolChoice::Tool(name) => {
            let label = router
                .agents
                .iter()
                .find(|a| a.ask_tool_name() == name.as_str())
                .map(|a| &*a.label);
            if let Some(label) = label {
                reply.text(&format!("Let me check with {label}."));
            }
            let schema = offered.iter().find(|t| *t.name == **name);
            let mut args = ask_args(schema.map(|t| &*t.input_schema), text, 1);
            if let Some(agent) = router
                .agents
                .iter()
                .find(|a| a.ask_tool_name() == name.as_str())
            {
                pass_pictures(&mut args, agent, request);
            }
            reply.tool_call(call_id(request, 0), name, &args);
            return;
        }
        // Small talk gets a text-only answer, as the runtime's Fastpath allows: ranking
        // "good morning" or "thank you so much" against the cards would find a specialist
        // for a stray word ("good idea", "how much").
        ToolChoice::Auto if fastpath::category(text).is_some() => {
            reply.text(&text_only(text, &labels));
            return;
        }
        ToolChoice::Auto | ToolChoice::Any => {}
    }

    let mut calls = plan(router, text, &candidates);
    if calls.is_empty() {
        // The words matched nobody, or there were none: what the pictures look like says
        // who can help (see `looks`).
        let seen: Vec<&str> = user_pictures(request)
            .filter_map(|(picture, data)| looks::describe(data, picture.media_type))
            .collect();
        let described = seen.join("; ");
        if let Some(agent) = (!seen.is_empty())
            .then(|| router.best(&described, &candidates, None))
            .flatten()
        {
            calls.push(Call {
                agent,
                query: if text.is_empty() {
                    format!("The user sent {described}.")
                } else {
                    text.to_owned()
                },
            });
        }
    }
    if calls.is_empty()
        && request.tool_choice == ToolChoice::Any
        && let Some((agent, _)) = argmax(&router.index.scores(&terms(text)), &candidates)
    {
        calls.push(Call {
            agent,
            query: text.to_owned(),
        });
    }
    if calls.is_empty() {
        reply.text(&text_only(text, &labels));
        return;
    }
    let intent_count = calls.len();

    let reminder = request.purpose == CallPurpose::Reminder;
    if reminder {
        // Only the requests not handled yet; the earlier calls' results are on their way.
        let made = calls_since_user_turn(request);
        calls.retain(|c| !made.contains(&router.agents[c.agent].ask_tool_name()));
        if calls.is_empty() {
            return;
        }
    }
    let chosen: Vec<&str> = calls
        .iter()
        .map(|c| &*router.agents[c.agent].label)
        .collect();
    let also = if reminder { "also " } else { "" };
    reply.text(&format!(
        "Let me {also}check with {}.",
        join_labels(&chosen)
    ));
    for (n, call) in calls.iter().enumerate() {
        let agent = &router.agents[call.agent];
        let ask = agent.ask_tool_name();
        let schema = offered.iter().find(|t| *t.name == *ask);
        let mut args = ask_args(schema.map(|t| &*t.input_schema), &call.query, intent_count);
        pass_pictures(&mut args, agent, request);
        reply.tool_call(call_id(request, n), ask, &args);
    }
}

fn call_id(request: &ModelRequest, n: usize) -> String {
    format!("call_{}", next_call_number(request) + n)
}

/// `query` and `intent_count`, plus whatever else the ask tool's schema asks for.
fn ask_args(schema: Option<&Value>, query: &str, intent_count: usize) -> Value {
    let mut args = schema.map(|s| fill_object(s, query)).unwrap_or_default();
    args.insert("query".into(), json!(query));
    args.insert("intent_count".into(), json!(intent_count));
    Value::Object(args)
}

/// Passes every picture of the user's message to `agent` when its card takes pictures
/// (D-42): the offline model cannot tell which picture belongs to which request, so each
/// specialist it routes to that takes pictures gets all of them, numbered 1 to n in the
/// order sent; one that takes none gets no `pictures` argument, nor does a message
/// without pictures. Deterministic, like the rest of its routing.
fn pass_pictures(args: &mut Value, agent: &Agent, request: &ModelRequest) {
    let sent = user_picture_count(request);
    if !agent.takes_pictures || sent == 0 {
        return;
    }
    if let Value::Object(args) = args {
        args.insert(PICTURES_ARG.into(), json!((1..=sent).collect::<Vec<_>>()));
    }
}

/// What the orchestrator says when it calls nobody: a friendly reply to small talk, else
/// an admission that no specialist fits (the runtime reroutes such answers).
fn text_only(text: &str, labels: &[&str]) -> String {
    let help = if labels.is_empty() {
        String::new()
    } else {
        format!("I can help with {}. ", join_labels(labels))
    };
    let farewell = [
        "bye",
        "goodbye",
        "see you",
        "take care",
        "good night",
        "have a",
    ]
    .iter()
    .any(|w| text.to_lowercase().contains(w));
    match fastpath::category(text) {
        Some(_) if farewell => "Goodbye! Come back any time.".to_owned(),
        Some("greeting") => format!("Hello! {help}What can I do for you?"),
        Some("acknowledgement") => {
            format!("You're welcome! {help}Just let me know if you need anything else.")
        }
        Some(_) => format!("I'm an assistant here to help. {help}What would you like to do?"),
        None if text.is_empty() => format!("{help}What can I do for you?"),
        None => "I'm not sure which specialist can help with that.".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use baton_core::ports::model::ModelEvent;

    use super::super::OfflineModel;
    use super::super::testing::{args_of, calls_of, collect, registry, request, text_of};
    use super::*;

    async fn route(text: &str) -> Vec<ModelEvent> {
        let model = OfflineModel::new(registry());
        collect(&model, request("assistant", CallPurpose::Route, text)).await
    }

    #[tokio::test]
    async fn a_mixed_message_calls_each_agent_with_its_own_words() {
        let events = route("my receipt didn't scan and find me coffee deals").await;
        let calls = calls_of(&events);
        let names: Vec<&str> = calls.iter().map(|(_, n, _)| n.as_str()).collect();
        assert_eq!(names, vec!["ask_support", "ask_shop"]);
        assert_eq!(calls[0].2["query"], "my receipt didn't scan");
        assert_eq!(calls[1].2["query"], "find me coffee deals");
        assert!(calls.iter().all(|c| c.2["intent_count"] == 2));
        assert_eq!(calls[0].0, "call_1");
        assert_eq!(calls[1].0, "call_2");
        assert_eq!(
            events.iter().rev().nth(1),
            Some(&ModelEvent::Stop(
                baton_core::ports::model::StopReason::ToolUse
            ))
        );
        let preamble = text_of(&events);
        assert!(preamble.contains("Support") && preamble.contains("Shop"));
    }

    #[tokio::test]
    async fn a_single_intent_sends_the_whole_text() {
        let text = "I uploaded a receipt yesterday and it still has not scanned";
        let calls = calls_of(&route(text).await);
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].1, "ask_support");
        assert_eq!(calls[0].2["query"], text);
        assert_eq!(calls[0].2["intent_count"], 1);
    }

    #[tokio::test]
    async fn a_greeting_is_answered_without_calls() {
        let events = route("Hi there!").await;
        assert!(calls_of(&events).is_empty());
        let text = text_of(&events);
        assert!(text.starts_with("Hello!"), "{text}");
        assert!(text.contains("Support, Shop and Rewards"), "{text}");
    }

    #[tokio::test]
    async fn small_talk_is_answered_without_calls_in_its_own_words() {
        for (text, starts) in [
            ("good morning", "Hello!"),
            ("thank you so much", "You're welcome!"),
            ("nice to meet you", "I'm an assistant"),
            ("bye, have a nice day", "Goodbye!"),
        ] {
            let events = route(text).await;
            assert!(calls_of(&events).is_empty(), "{text}");
            let answer = text_of(&events);
            assert!(answer.starts_with(starts), "{text}: {answer}");
        }
    }

    #[tokio::test]
    async fn an_unmatched_request_admits_it_has_no_specialist() {
        let events = route("what is the weather in Paris tomorrow").await;
        assert!(calls_of(&events).is_empty());
        assert!(text_of(&events).contains("not sure which specialist"));
        assert!(events.contains(&ModelEvent::Stop(
            baton_core::ports::model::StopReason::EndTurn
        )));
    }

    #[tokio::test]
    async fn a_forced_tool_gets_the_whole_text() {
        let model = OfflineModel::new(registry());
        let mut req = request("assistant", CallPurpose::Route, "weather and deals");
        req.tool_choice = ToolChoice::Tool("ask_rewards".into());
        let calls = calls_of(&collect(&model, req).await);
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].1, "ask_rewards");
        assert_eq!(calls[0].2["query"], "weather and deals");
        assert_eq!(calls[0].2["intent_count"], 1);
    }

    #[tokio::test]
    async fn tool_choice_none_and_any_are_honoured() {
        let model = OfflineModel::new(registry());
        let mut req = request("assistant", CallPurpose::Route, "find me coffee deals");
        req.tool_choice = ToolChoice::None;
        assert!(calls_of(&collect(&model, req).await).is_empty());

        let mut req = request("assistant", CallPurpose::Route, "what about the weather");
        req.tool_choice = ToolChoice::Any;
        assert_eq!(calls_of(&collect(&model, req).await).len(), 1);
    }

    #[tokio::test]
    async fn unmatched_clauses_join_a_neighbour_verbatim() {
        let text = "find me salt and pepper deals";
        let calls = calls_of(&route(text).await);
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].1, "ask_shop");
        assert_eq!(calls[0].2["query"], text);
    }

    #[tokio::test]
    async fn three_intents_come_in_order_of_first_mention() {
        let text =
            "what's my points balance? Also find me coffee deals, and my receipt won't upload";
        let calls = calls_of(&route(text).await);
        let names: Vec<&str> = calls.iter().map(|(_, n, _)| n.as_str()).collect();
        assert_eq!(names, vec!["ask_rewards", "ask_shop", "ask_support"]);
        assert_eq!(calls[1].2["query"], "find me coffee deals");
        assert!(calls.iter().all(|c| c.2["intent_count"] == 3));
    }

    #[tokio::test]
    async fn ask_args_fill_card_declared_enums() {
        let calls = calls_of(&route("my receipt didn't scan").await);
        assert_eq!(args_of(&calls, "ask_support")["topic"], "receipts");
    }

    #[tokio::test]
    async fn only_offered_agents_are_candidates() {
        let model = OfflineModel::new(registry());
        let mut req = request(
            "assistant",
            CallPurpose::Route,
            "my receipt didn't scan and find me coffee deals",
        );
        req.tools = req
            .tools
            .iter()
            .filter(|t| &*t.name != "ask_support")
            .cloned()
            .collect();
        let calls = calls_of(&collect(&model, req).await);
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].1, "ask_shop");
    }

    #[tokio::test]
    async fn a_reminder_calls_only_the_agents_not_yet_asked() {
        use baton_core::message::{Content, Message, Role};
        let model = OfflineModel::new(registry());
        let mut req = request(
            "assistant",
            CallPurpose::Reminder,
            "my receipt didn't scan and find me coffee deals",
        );
        req.messages.push(Message {
            role: Role::Assistant,
            content: vec![Content::ToolUse {
                id: "call_1".into(),
                name: "ask_support".into(),
                input: json!({"query": "my receipt didn't scan", "intent_count": 2}).into(),
            }],
        });
        req.messages.push(Message::user(
            "<reminder>You reported 2 distinct requests</reminder>",
        ));
        let events = collect(&model, req).await;
        let calls = calls_of(&events);
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].0, "call_2");
        assert_eq!(calls[0].1, "ask_shop");
        assert_eq!(calls[0].2["query"], "find me coffee deals");
        assert_eq!(calls[0].2["intent_count"], 2);
        assert!(text_of(&events).contains("also"));
    }
}
