//! The AG-UI face through `oneshot`: a run's events in AG-UI's order, the delegation as a
//! tool call with its result, the consulted record, a thread as an episode per caller,
//! and refusals.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use baton_http::PRINCIPAL_HEADER;
use serde_json::{Value, json};

use crate::support::*;

fn post_run(input: &Value, principal: Option<&str>) -> Request<Body> {
    let mut req = Request::post("/v1/agui")
        .header("content-type", "application/json")
        .header("accept", "text/event-stream");
    if let Some(p) = principal {
        req = req.header(PRINCIPAL_HEADER, p);
    }
    req.body(Body::from(input.to_string())).unwrap()
}

fn run_input(thread: &str, run: &str, text: &str) -> Value {
    json!({
        "threadId": thread,
        "runId": run,
        "state": {},
        "tools": [],
        "context": [],
        "forwardedProps": {},
        "messages": [{"id": format!("{run}-m"), "role": "user", "content": text}],
    })
}

fn events(stream: &str) -> Vec<Value> {
    stream
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

fn types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

#[tokio::test]
async fn a_run_streams_the_answer_the_delegation_and_the_record_in_ag_ui_order() {
    let state = Rig::default().state();
    let response = send(
        &state,
        post_run(&run_input("th-1", "run-1", "coffee deals"), None),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    assert_eq!(response.headers()["x-baton-turn-id"], "run-1");
    let events = events(&text(response).await);
    let kinds = types(&events);
    assert_eq!(kinds.first(), Some(&"RUN_STARTED"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"RUN_FINISHED"), "{kinds:?}");
    assert_eq!(events[0]["threadId"], "th-1");
    assert_eq!(events[0]["runId"], "run-1");

    // The delegation: a tool call triple, then its result from the consulted record.
    let at = |kind: &str| kinds.iter().position(|k| *k == kind).unwrap_or(usize::MAX);
    assert!(at("TOOL_CALL_START") < at("TOOL_CALL_ARGS"));
    assert!(at("TOOL_CALL_ARGS") < at("TOOL_CALL_END"));
    assert!(at("TOOL_CALL_END") < at("TOOL_CALL_RESULT"));
    let start = &events[at("TOOL_CALL_START")];
    assert_eq!(start["toolCallName"], "ask_shop");
    let result = &events[at("TOOL_CALL_RESULT")];
    assert_eq!(result["toolCallId"], start["toolCallId"]);
    let outcome: Value = serde_json::from_str(result["content"].as_str().unwrap()).unwrap();
    assert_eq!(outcome["status"], "ok");

    // The answer: one text message, opened and closed.
    assert!(at("TEXT_MESSAGE_START") < at("TEXT_MESSAGE_CONTENT"));
    assert!(at("TEXT_MESSAGE_END") < at("RUN_FINISHED"));
    let answer: String = events
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert!(answer.ends_with(ANSWER), "{answer}");

    // The record: a custom event and the state.
    let custom = &events[at("CUSTOM")];
    assert_eq!(custom["name"], "baton.consulted");
    assert_eq!(custom["value"]["agents"][0]["agent_id"], "shop");
    let snapshot = &events[at("STATE_SNAPSHOT")]["snapshot"]["baton"];
    assert_eq!(snapshot["consulted"][0]["agent_id"], "shop");
    assert_eq!(snapshot["outcome"], "answered");
    let finished = events.last().unwrap();
    assert!(finished["usage"][0]["totalTokens"].as_u64().unwrap() > 0);
}

#[tokio::test]
async fn a_thread_is_an_episode_of_its_caller_and_a_retried_run_is_replayed() {
    let state = Rig::default().state();
    let first = send(
        &state,
        post_run(&run_input("th-1", "run-1", "coffee deals"), None),
    )
    .await;
    let episode = first.headers()["x-baton-episode-id"]
        .to_str()
        .unwrap()
        .to_owned();
    text(first).await;
    let second = send(
        &state,
        post_run(&run_input("th-1", "run-2", "any more?"), None),
    )
    .await;
    assert_eq!(second.headers()["x-baton-episode-id"], episode.as_str());
    text(second).await;

    let again = send(
        &state,
        post_run(&run_input("th-1", "run-2", "any more?"), None),
    )
    .await;
    assert_eq!(again.headers()["x-baton-replay"], "true");
    let replayed = events(&text(again).await);
    assert_eq!(types(&replayed).last(), Some(&"RUN_FINISHED"));

    // Someone else's thread of the same name is their own.
    let theirs = send(
        &state,
        post_run(&run_input("th-1", "run-m", "coffee deals"), Some("mallory")),
    )
    .await;
    assert_ne!(theirs.headers()["x-baton-episode-id"], episode.as_str());
    text(theirs).await;
    let history = send(&state, get(&format!("/v1/episodes/{episode}"), None)).await;
    let history: Value = serde_json::from_str(&text(history).await).unwrap();
    assert_eq!(history["turns"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn refusals_are_a_run_error_or_the_native_error_before_any_run() {
    let state = Rig {
        max_message_chars: 10,
        ..Rig::default()
    }
    .state();
    let long = send(
        &state,
        post_run(
            &run_input("th-1", "run-1", "a message far over the limit"),
            None,
        ),
    )
    .await;
    assert_eq!(long.status(), StatusCode::OK);
    let refused = events(&text(long).await);
    assert_eq!(types(&refused), ["RUN_STARTED", "RUN_ERROR"]);
    assert!(refused[1]["message"].as_str().unwrap().contains("too long"));

    let no_thread = send(
        &state,
        post_run(&json!({"runId": "r", "messages": []}), None),
    )
    .await;
    assert_eq!(no_thread.status(), StatusCode::BAD_REQUEST);
    let (_, message) = error_of(no_thread).await;
    assert!(message.contains("`threadId`"), "{message}");

    let anonymous = Rig {
        default_principal: None,
        ..Rig::default()
    }
    .state();
    let response = send(&anonymous, post_run(&run_input("th", "r", "hi"), None)).await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_run_ends_in_an_interrupt_and_the_next_runs_resume_answers_it() {
    let state = crate::resume::asking_state();
    let first = events(
        &text(
            send(
                &state,
                post_run(&run_input("th-q", "run-1", "redeem my points"), None),
            )
            .await,
        )
        .await,
    );
    let finished = first.iter().find(|e| e["type"] == "RUN_FINISHED").unwrap();
    assert_eq!(finished["outcome"]["type"], "interrupt", "{first:?}");
    let interrupt = &finished["outcome"]["interrupts"][0];
    assert_eq!(interrupt["reason"], "question");
    assert_eq!(interrupt["message"], "Gift card or cash out?");
    assert_eq!(interrupt["responseSchema"]["required"], json!(["answer"]));

    // A payload that does not answer a question is refused, and the turn still waits.
    let mut wrong = run_input("th-q", "run-2", "");
    wrong["messages"] = json!([]);
    wrong["resume"] = json!([{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": true}}]);
    let refused = send(&state, post_run(&wrong, None)).await;
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);

    let mut answer = wrong.clone();
    answer["runId"] = json!("run-3");
    answer["resume"] = json!([{"interruptId": interrupt["id"], "status": "resolved", "payload": {"answer": "gift card"}}]);
    let second = events(&text(send(&state, post_run(&answer, None)).await).await);
    let finished = second.iter().find(|e| e["type"] == "RUN_FINISHED").unwrap();
    assert!(finished.get("outcome").is_none(), "{second:?}");
    let said: String = second
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .filter_map(|e| e["delta"].as_str())
        .collect();
    assert!(said.contains("All done."), "{said}");
}
