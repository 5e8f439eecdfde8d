//! `POST /v1/turns/{turn_id}/resume` (D-36): a turn that waits for the user's approval
//! streams its question and completes as `awaiting_user`; the reply resumes it, and every
//! reply that does not fit is refused in plain words.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use baton_http::PRINCIPAL_HEADER;
use serde_json::{Value, json};

use crate::support::*;

const REDEEM_TOOL: &str = r#"
  redeem:
    description: Redeem points for a reward.
    connector: { kind: test, payload: { redeemed: true } }
    schema: { type: object, properties: { points: { type: integer } }, required: [points], additionalProperties: false }
    approval: { when: "points > 500", action: "Redeem {points} points" }
"#;

const SCRIPT: &str = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      tool_calls: [{ name: ask_rewards, args: { query: "redeem", intent_count: 1 } }]
    - when: { purpose: compose }
      text: ["All done."]
  rewards:
    - { when: { after_tool_results: false }, tool_calls: [{ name: redeem, args: { points: 800 } }] }
    - { when: { after_tool_results: true }, text: ["Redeemed."] }
"#;

/// Rewards asks the user which reward type, then answers.
const ASKING: &str = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      tool_calls: [{ name: ask_rewards, args: { query: "redeem", intent_count: 1 } }]
    - when: { purpose: compose }
      text: ["All done."]
  rewards:
    - { when: { after_tool_results: false }, tool_calls: [{ name: ask_user, args: { question: "Gift card or cash out?" } }] }
    - { when: { after_tool_results: true }, text: ["Noted."] }
"#;

/// A server whose rewards specialist may ask the user, and does.
pub(crate) fn asking_state() -> baton_http::AppState {
    Rig {
        registry: TestRegistry::default().file(
            "agents/rewards.yaml",
            "id: rewards\nlabel: Rewards\ndescription: Points balance and redemptions.\nrole: native\nmodel: m1\ntools: [points_balance]\nprompt_blocks: [rewards-instructions]\nasks_user: true\n",
        ),
        script: ASKING.into(),
        ..Rig::default()
    }
    .state()
}

pub(crate) fn state() -> baton_http::AppState {
    Rig {
        registry: TestRegistry {
            rewards_tool: "redeem",
            extra_tools: REDEEM_TOOL.into(),
            ..TestRegistry::default()
        },
        script: SCRIPT.into(),
        ..Rig::default()
    }
    .state()
}

fn events(stream: &str) -> Vec<Value> {
    stream
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

fn resume(turn: &str, body: &Value, principal: Option<&str>) -> Request<Body> {
    let mut req = Request::post(format!("/v1/turns/{turn}/resume"))
        .header("content-type", "application/json");
    if let Some(p) = principal {
        req = req.header(PRINCIPAL_HEADER, p);
    }
    req.body(Body::from(body.to_string())).unwrap()
}

/// Turn `t1`, which stops for approval: its episode and its events.
async fn pause(state: &baton_http::AppState) -> (String, Vec<Value>) {
    let paused = send(
        state,
        post_turn(r#"{"message":"redeem my points","turn_id":"t1"}"#, None),
    )
    .await;
    let episode = paused.headers()["x-baton-episode-id"]
        .to_str()
        .unwrap()
        .to_owned();
    (episode, events(&text(paused).await))
}

#[tokio::test]
async fn a_waiting_turn_resumes_with_the_users_approval() {
    let state = state();
    let (episode, paused) = pause(&state).await;
    let asked = paused.iter().find(|e| e["type"] == "interruption").unwrap();
    assert_eq!(asked["kind"], "approval");
    assert_eq!(asked["action"], "Redeem 800 points");
    assert_eq!(paused.last().unwrap()["outcome"], "awaiting_user");
    let id = asked["id"].as_str().unwrap();

    let body = json!({ "episode_id": episode, "interruption_id": id, "decision": "approve" });
    let response = send(&state, resume("t1", &body, None)).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["x-baton-episode-id"], episode.as_str());
    let resumed = events(&text(response).await);
    assert!(
        resumed
            .iter()
            .any(|e| e["type"] == "tool_call_start" && e["tool"] == "redeem")
    );
    assert_eq!(resumed.last().unwrap()["outcome"], "answered");

    // Sent again, the resumed turn is replayed: nothing runs twice.
    let again = send(&state, resume("t1", &body, None)).await;
    assert_eq!(again.status(), StatusCode::OK);
    let replayed = events(&text(again).await);
    assert!(!replayed.iter().any(|e| e["type"] == "tool_call_start"));
    assert_eq!(replayed.last().unwrap()["outcome"], "answered");
    // Another answer to it is refused.
    let declined = json!({ "episode_id": episode, "interruption_id": id, "decision": "decline" });
    let other = send(&state, resume("t1", &declined, None)).await;
    assert_eq!(other.status(), StatusCode::UNPROCESSABLE_ENTITY);
    // A turn that never waited has nothing to answer.
    let never = send(&state, resume("t9", &body, None)).await;
    assert_eq!(never.status(), StatusCode::BAD_REQUEST);
    let (_, message) = error_of(never).await;
    assert!(message.contains("not waiting"), "{message}");
}

#[tokio::test]
async fn replies_that_do_not_fit_are_refused() {
    let state = state();
    let (episode, paused) = pause(&state).await;
    let id = paused.iter().find(|e| e["type"] == "interruption").unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let cases = [
        (
            json!({ "episode_id": episode, "interruption_id": id, "decision": "maybe" }),
            None,
            StatusCode::BAD_REQUEST,
        ),
        (
            json!({ "episode_id": episode, "interruption_id": "int_forged", "decision": "approve" }),
            None,
            StatusCode::BAD_REQUEST,
        ),
        (
            json!({ "episode_id": episode, "interruption_id": id, "decision": "approve" }),
            Some("mallory"),
            StatusCode::NOT_FOUND,
        ),
        (
            json!({ "episode_id": episode, "decision": "approve" }),
            None,
            StatusCode::BAD_REQUEST,
        ),
        (
            json!({ "episode_id": episode, "interruption_id": id, "answer": "yes please" }),
            None,
            StatusCode::BAD_REQUEST,
        ),
        (
            json!({ "episode_id": episode, "interruption_id": id, "decision": "approve", "answer": "x" }),
            None,
            StatusCode::BAD_REQUEST,
        ),
    ];
    for (body, who, status) in cases {
        let response = send(&state, resume("t1", &body, who)).await;
        assert_eq!(response.status(), status, "{body}");
        let (_, message) = error_of(response).await;
        assert!(!message.is_empty());
    }
    // None of them resumed it: the right reply still does.
    let body = json!({ "episode_id": episode, "interruption_id": id, "decision": "decline" });
    let response = send(&state, resume("t1", &body, None)).await;
    let resumed = events(&text(response).await);
    assert!(!resumed.iter().any(|e| e["type"] == "tool_call_start"));
    assert_eq!(resumed.last().unwrap()["outcome"], "answered");
}

#[tokio::test]
async fn a_question_is_answered_in_words_and_refuses_a_decision() {
    let state = asking_state();
    let (episode, paused) = pause(&state).await;
    let asked = paused.iter().find(|e| e["type"] == "interruption").unwrap();
    assert_eq!(asked["kind"], "question");
    assert_eq!(asked["action"], "Gift card or cash out?");
    let id = asked["id"].as_str().unwrap();
    let yes = json!({ "episode_id": episode, "interruption_id": id, "decision": "approve" });
    let refused = send(&state, resume("t1", &yes, None)).await;
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    let answer = json!({ "episode_id": episode, "interruption_id": id, "answer": "a gift card" });
    let resumed = events(&text(send(&state, resume("t1", &answer, None)).await).await);
    assert_eq!(
        resumed.last().unwrap()["outcome"],
        "answered",
        "{resumed:?}"
    );
    let history = send(&state, get(&format!("/v1/episodes/{episode}"), None)).await;
    let history: Value = serde_json::from_str(&text(history).await).unwrap();
    let last = history["turns"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["user_text"], "a gift card", "{last}");
    assert_eq!(last["answered"]["answer"], "answered", "{last}");
    assert_eq!(last["answered"]["kind"], "question", "{last}");
}
