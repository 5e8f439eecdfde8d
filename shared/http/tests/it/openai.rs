//! The OpenAI-compatible face through `oneshot`: a turn streamed and not, the consulted
//! record in the extension field and header, usage, episodes, and refusals in OpenAI's
//! error shape.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use baton_http::PRINCIPAL_HEADER;
use serde_json::{Value, json};

use crate::support::*;

fn post_chat(body: &Value, principal: Option<&str>) -> Request<Body> {
    let mut req = Request::post("/v1/chat/completions").header("content-type", "application/json");
    if let Some(p) = principal {
        req = req.header(PRINCIPAL_HEADER, p);
    }
    req.body(Body::from(body.to_string())).unwrap()
}

fn ask(text: &str) -> Value {
    json!({"model": "baton", "messages": [{"role": "user", "content": text}]})
}

/// The `data:` payloads of a stream, in order.
fn data_lines(stream: &str) -> Vec<String> {
    stream
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(str::to_owned)
        .collect()
}

async fn openai_error(response: axum::http::Response<Body>) -> (StatusCode, Value) {
    let status = response.status();
    let body: Value = serde_json::from_str(&text(response).await).unwrap();
    (status, body["error"].clone())
}

#[tokio::test]
async fn a_turn_answers_as_one_completion_with_the_consulted_record() {
    let state = Rig::default().state();
    let response = send(&state, post_chat(&ask("coffee deals"), None)).await;
    assert_eq!(response.status(), StatusCode::OK);
    let headers = response.headers().clone();
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(headers["x-baton-consulted"], "shop");
    let episode = headers["x-baton-episode-id"].to_str().unwrap().to_owned();
    let body: Value = serde_json::from_str(&text(response).await).unwrap();
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["model"], "baton");
    let choice = &body["choices"][0];
    assert_eq!(choice["message"]["role"], "assistant");
    assert_eq!(choice["finish_reason"], "stop");
    let content = choice["message"]["content"].as_str().unwrap();
    assert!(content.ends_with(ANSWER), "{content}");
    let usage = &body["usage"];
    let (prompt, completion) = (
        usage["prompt_tokens"].as_u64().unwrap(),
        usage["completion_tokens"].as_u64().unwrap(),
    );
    assert!(prompt > 0 && completion > 0, "{usage}");
    assert_eq!(usage["total_tokens"].as_u64(), Some(prompt + completion));
    let baton = &body["baton"];
    assert_eq!(baton["episode_id"], episode.as_str());
    assert_eq!(baton["consulted"][0]["agent_id"], "shop");
    assert_eq!(baton["consulted"][0]["status"], "ok");
    assert_eq!(baton["outcome"], "answered");
    assert!(
        baton["footer"].as_str().unwrap().contains("Shop"),
        "{baton}"
    );
}

#[tokio::test]
async fn a_streamed_turn_sends_chunks_then_the_record_then_usage_then_done() {
    let state = Rig::default().state();
    let mut body = ask("coffee deals");
    body["stream"] = json!(true);
    body["stream_options"] = json!({"include_usage": true});
    let response = send(&state, post_chat(&body, None)).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let lines = data_lines(&text(response).await);
    assert_eq!(lines.last().map(String::as_str), Some("[DONE]"));
    let chunks: Vec<Value> = lines[..lines.len() - 1]
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        chunks
            .iter()
            .all(|c| c["object"] == "chat.completion.chunk")
    );
    assert!(chunks.iter().all(|c| c["id"] == chunks[0]["id"]));
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let content: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert!(content.ends_with(ANSWER), "{content}");
    // More than one content chunk: the answer streamed.
    let pieces = chunks
        .iter()
        .filter(|c| {
            c["choices"][0]["delta"]["content"]
                .as_str()
                .is_some_and(|s| !s.is_empty())
        })
        .count();
    assert!(pieces > 1, "{chunks:#?}");
    let finish = &chunks[chunks.len() - 2];
    assert_eq!(finish["choices"][0]["finish_reason"], "stop");
    assert_eq!(finish["baton"]["consulted"][0]["agent_id"], "shop");
    let usage = &chunks[chunks.len() - 1];
    assert_eq!(usage["choices"], json!([]));
    assert!(usage["usage"]["total_tokens"].as_u64().unwrap() > 0);
}

#[tokio::test]
async fn a_conversation_continues_its_episode_and_no_one_else_can() {
    let state = Rig::default().state();
    let first = send(&state, post_chat(&ask("coffee deals"), None)).await;
    let episode = first.headers()["x-baton-episode-id"]
        .to_str()
        .unwrap()
        .to_owned();
    text(first).await;

    let mut next = ask("any more?");
    next["metadata"] = json!({"episode_id": episode});
    let second = send(&state, post_chat(&next, None)).await;
    assert_eq!(second.status(), StatusCode::OK);
    assert_eq!(second.headers()["x-baton-episode-id"], episode.as_str());
    text(second).await;

    // The header names it too.
    let mut by_header = post_chat(&ask("and now?"), None);
    by_header
        .headers_mut()
        .insert("x-baton-episode-id", episode.parse().unwrap());
    let third = send(&state, by_header).await;
    assert_eq!(third.headers()["x-baton-episode-id"], episode.as_str());
    text(third).await;

    // Someone else's episode does not exist for them.
    let (status, error) = openai_error(send(&state, post_chat(&next, Some("mallory"))).await).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(error["type"], "not_found_error");
    assert!(!error["message"].as_str().unwrap().is_empty());
}

#[tokio::test]
async fn bad_requests_are_refused_in_openais_shape() {
    let state = Rig::default().state();
    let malformed = Request::post("/v1/chat/completions")
        .header("content-type", "application/json")
        .body(Body::from("{\"messages\": ["))
        .unwrap();
    let (status, error) = openai_error(send(&state, malformed).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error["type"], "invalid_request_error");
    assert_eq!(error["message"], "the request body is not valid JSON");
    assert!(error.get("param").is_some() && error.get("code").is_some());

    let no_user = json!({"messages": [{"role": "system", "content": "hi"}]});
    let (status, error) = openai_error(send(&state, post_chat(&no_user, None)).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(error["message"].as_str().unwrap().contains("role `user`"));

    let plain = Request::post("/v1/chat/completions")
        .header("content-type", "text/plain")
        .body(Body::from(ask("hi").to_string()))
        .unwrap();
    let (status, _) = openai_error(send(&state, plain).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    let anonymous = Rig {
        default_principal: None,
        ..Rig::default()
    }
    .state();
    let (status, error) = openai_error(send(&anonymous, post_chat(&ask("hi"), None)).await).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(error["type"], "authentication_error");
    let (status, error) = openai_error(send(&anonymous, get("/v1/models", None)).await).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(error["type"], "authentication_error");
}

#[tokio::test]
async fn the_assistant_is_the_model_to_pick() {
    let state = Rig::default().state();
    let response = send(&state, get("/v1/models", None)).await;
    assert_eq!(response.status(), StatusCode::OK);
    let body: Value = serde_json::from_str(&text(response).await).unwrap();
    assert_eq!(body["object"], "list");
    assert_eq!(body["data"][0]["object"], "model");
    assert_eq!(body["data"][0]["id"], "orchestrator");
}

#[tokio::test]
async fn a_waiting_turn_asks_in_the_answer_and_the_next_message_is_the_reply() {
    let state = crate::resume::state();
    let first = send(&state, post_chat(&ask("redeem my points"), None)).await;
    let episode = first.headers()["x-baton-episode-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let body: Value = serde_json::from_str(&text(first).await).unwrap();
    let said = body["choices"][0]["message"]["content"].as_str().unwrap();
    assert!(said.contains("Approve or decline?"), "{said}");

    let mut yes = ask("yes");
    yes["metadata"] = json!({"episode_id": episode});
    let second = send(&state, post_chat(&yes, None)).await;
    assert_eq!(second.status(), StatusCode::OK);
    let body: Value = serde_json::from_str(&text(second).await).unwrap();
    let said = body["choices"][0]["message"]["content"].as_str().unwrap();
    assert!(said.contains("All done."), "{said}");
    let history = send(&state, get(&format!("/v1/episodes/{episode}"), None)).await;
    let history: Value = serde_json::from_str(&text(history).await).unwrap();
    let last = history["turns"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["answered"]["face"], "openai", "{last}");
    assert_eq!(last["answered"]["answer"], "approve", "{last}");
}

#[tokio::test]
async fn a_question_is_asked_in_the_answer_and_the_next_message_answers_it() {
    let state = crate::resume::asking_state();
    let first = send(&state, post_chat(&ask("redeem my points"), None)).await;
    let episode = first.headers()["x-baton-episode-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let body: Value = serde_json::from_str(&text(first).await).unwrap();
    let said = body["choices"][0]["message"]["content"].as_str().unwrap();
    assert!(
        said.contains("Rewards asks: Gift card or cash out?"),
        "{said}"
    );
    let mut reply = ask("cash out, please");
    reply["metadata"] = json!({"episode_id": episode});
    let second = send(&state, post_chat(&reply, None)).await;
    let body: Value = serde_json::from_str(&text(second).await).unwrap();
    let said = body["choices"][0]["message"]["content"].as_str().unwrap();
    assert!(said.contains("All done."), "{said}");
    let history = send(&state, get(&format!("/v1/episodes/{episode}"), None)).await;
    let history: Value = serde_json::from_str(&text(history).await).unwrap();
    let last = history["turns"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["answered"]["kind"], "question", "{last}");
    assert_eq!(last["answered"]["face"], "openai", "{last}");
}
