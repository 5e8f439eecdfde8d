//! A service's question mid-call (an MCP server's form elicitation, D-36): the turn asks the
//! user in words and waits; the answer fills the service's form and the call is made again
//! with it, once. An answer that does not fill the form is asked again saying why; a
//! service that keeps asking is given up on; a "no" leaves the act undone.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use baton_core::events::{Event, WireEvent};
use baton_core::input::InputAsked;
use baton_core::interruption::{Answer, InterruptionKind, Reply, resume_turn_id};
use baton_core::ports::connector::{
    Connector, ConnectorError, ConnectorRequest, Envelope, EnvelopeStatus,
};
use baton_core::turn::TurnOutcome;
use futures::StreamExt;
use serde_json::{Value, json};

use crate::support::*;

/// A booking service that asks which seat before it books (when `always_asks`, after every
/// answer too), and keeps what each call carried.
#[derive(Debug, Default)]
struct SeatService {
    always_asks: bool,
    seen: Mutex<Vec<Option<Value>>>,
}

const QUESTION: &str = "Which seat would you like?";

#[async_trait]
impl Connector for SeatService {
    async fn call(&self, request: ConnectorRequest) -> Result<Envelope, ConnectorError> {
        let given = request
            .input
            .as_ref()
            .map(|g| Value::Object(g.content.clone()));
        self.seen.lock().unwrap().push(given.clone());
        let answered = request.input.as_ref().filter(|g| g.message == QUESTION);
        let Some(answer) = answered.filter(|_| !self.always_asks) else {
            return Err(ConnectorError::NeedsInput(Box::new(InputAsked {
                message: QUESTION.into(),
                schema: json!({
                    "type": "object",
                    "properties": {
                        "seat": {"type": "string"},
                        "count": {"type": "integer", "default": 1},
                        "window": {"type": "boolean", "default": true}
                    },
                    "required": ["seat"]
                }),
                asked_before: 0,
                problem: None,
            })));
        };
        Ok(Envelope {
            status: EnvelopeStatus::Ok,
            payload: json!({ "booked": answer.content }),
            partial: Vec::new(),
            principal: request.principal.to_string(),
            version: "1.0.0".into(),
            domain_type: "test".into(),
            enricher_id: request.tool_id.to_string(),
            cache_meta: Default::default(),
        })
    }
}

const BOOK_TOOL: &str = r#"
  book:
    description: Book a seat.
    connector: { kind: seats }
    schema: { type: object, properties: {} }
"#;

const SCRIPT: &str = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      tool_calls: [{ name: ask_rewards, args: { query: "book me a seat", intent_count: 1 } }]
    - when: { purpose: compose }
      text: ["Here it is."]
  rewards:
    - { when: { after_tool_results: false }, tool_calls: [{ name: book, args: {} }] }
    - { when: { after_tool_results: true }, text: ["The booking went as the tool said."] }
"#;

fn rig(service: Arc<SeatService>) -> Rig {
    let setup = TestRegistry {
        rewards_tool: "book",
        extra_tools: BOOK_TOOL.into(),
        ..TestRegistry::default()
    };
    make_rig_connected(
        &setup,
        SCRIPT,
        baton_runtime::RuntimeConfig::default(),
        &[("seats", service)],
    )
}

fn asked(events: &[WireEvent]) -> (String, InterruptionKind, String) {
    events
        .iter()
        .find_map(|e| match &e.event {
            Event::Interruption(i) => Some((i.id.clone(), i.kind, i.action.clone())),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no interruption in {events:#?}"))
}

fn outcome(events: &[WireEvent]) -> TurnOutcome {
    match events.last().map(|e| &e.event) {
        Some(Event::Completed { outcome, .. }) => *outcome,
        other => panic!("the stream ended with {other:?}"),
    }
}

async fn reply(rig: &Rig, episode: &str, turn: &str, id: &str, words: Answer) -> Vec<WireEvent> {
    let reply = Reply {
        interruption_id: id.to_owned(),
        answer: words,
    };
    rig.runtime
        .run_turn(answering(alice(), episode, turn, reply))
        .await
        .unwrap()
        .collect()
        .await
}

/// What the specialist was told the call came to, as the last tool result it read.
fn told(rig: &Rig) -> String {
    let last = rig
        .model
        .requests()
        .into_iter()
        .rfind(|r| &*r.agent_id == "rewards")
        .unwrap();
    format!("{:?}", last.messages.last().unwrap())
}

#[tokio::test(start_paused = true)]
async fn the_services_question_reaches_the_user_and_the_answer_reaches_the_service_once() {
    let service = Arc::new(SeatService::default());
    let rig = rig(service.clone());
    let (episode, paused) = run(&rig, request("book me a seat", None, "t1")).await;
    assert_eq!(outcome(&paused), TurnOutcome::AwaitingUser);
    let (id, kind, action) = asked(&paused);
    assert_eq!(kind, InterruptionKind::Question);
    assert!(action.starts_with(QUESTION), "{action}");
    assert!(answer(&paused).contains(QUESTION), "{}", answer(&paused));

    // The seat alone: the one field without a default; the rest keep theirs.
    let resumed = reply(&rig, &episode, "t1", &id, Answer::Text("12A".into())).await;
    assert_eq!(outcome(&resumed), TurnOutcome::Answered, "{resumed:#?}");
    assert_eq!(
        *service.seen.lock().unwrap(),
        [
            None,
            Some(json!({"seat": "12A", "count": 1, "window": true}))
        ]
    );
    assert!(told(&rig).contains("12A"), "{}", told(&rig));
}

#[tokio::test(start_paused = true)]
async fn an_answer_that_does_not_fill_the_form_is_asked_again_and_a_no_leaves_it_undone() {
    let service = Arc::new(SeatService::default());
    let rig = rig(service.clone());
    let (episode, paused) = run(&rig, request("book me a seat", None, "t1")).await;
    let (id, ..) = asked(&paused);
    let again = reply(
        &rig,
        &episode,
        "t1",
        &id,
        Answer::Text("count: many".into()),
    )
    .await;
    assert_eq!(outcome(&again), TurnOutcome::AwaitingUser, "{again:#?}");
    let (second, kind, action) = asked(&again);
    assert_eq!(kind, InterruptionKind::Question);
    assert!(
        action.starts_with("count must be a whole number."),
        "{action}"
    );
    // The service was not called with an answer that did not fit.
    assert_eq!(service.seen.lock().unwrap().len(), 1);

    let no = reply(
        &rig,
        &episode,
        &resume_turn_id("t1", &id),
        &second,
        Answer::Decline,
    )
    .await;
    assert_eq!(outcome(&no), TurnOutcome::Answered, "{no:#?}");
    assert_eq!(service.seen.lock().unwrap().len(), 1, "nothing was booked");
    assert!(
        told(&rig).contains("chose not to answer the service"),
        "{}",
        told(&rig)
    );
}

#[tokio::test(start_paused = true)]
async fn a_service_that_keeps_asking_is_given_up_on() {
    let service = Arc::new(SeatService {
        always_asks: true,
        ..SeatService::default()
    });
    let rig = rig(service.clone());
    let (episode, mut events) = run(&rig, request("book me a seat", None, "t1")).await;
    let mut turn = "t1".to_owned();
    let mut rounds = 0;
    while outcome(&events) == TurnOutcome::AwaitingUser {
        rounds += 1;
        assert!(rounds <= 5, "the user is asked without end");
        let (id, ..) = asked(&events);
        events = reply(&rig, &episode, &turn, &id, Answer::Text("12A".into())).await;
        turn = resume_turn_id(&turn, &id);
    }
    assert_eq!(outcome(&events), TurnOutcome::Answered, "{events:#?}");
    // The user is asked as often as the bound allows; the first call and one for each
    // answer.
    let max = baton_core::input::MAX_INPUT_ASKS;
    assert_eq!(rounds, max);
    assert_eq!(service.seen.lock().unwrap().len() as u32, max + 1);
    assert!(told(&rig).contains("kept asking"), "{}", told(&rig));
}
