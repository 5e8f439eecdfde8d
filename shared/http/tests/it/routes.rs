//! Successful requests through `oneshot`: a whole turn, history, health, metrics.

use axum::http::StatusCode;
use baton_core::events::Event;
use baton_http::sse::decode;
use serde_json::Value;

use crate::support::*;
use baton_core::ports::store::SummaryStore as _;

#[tokio::test]
async fn a_turn_streams_numbered_frames_ending_in_completed() {
    let state = Rig::default().state();
    let response = send(&state, post_turn(r#"{"message":"coffee deals"}"#, None)).await;
    assert_eq!(response.status(), StatusCode::OK);
    let h = response.headers().clone();
    assert_eq!(h["content-type"], "text/event-stream");
    assert_eq!(h["cache-control"], "no-cache");
    assert_eq!(h["x-baton-protocol"], "1");
    let turn_id = h["x-baton-turn-id"].to_str().unwrap().to_owned();
    let episode_id = h["x-baton-episode-id"].to_str().unwrap().to_owned();
    assert!(h.get("x-baton-replay").is_none());

    let frames = decode(&text(response).await);
    let events: Vec<_> = frames.iter().map(|f| f.wire_event().unwrap()).collect();
    for (i, (frame, event)) in frames.iter().zip(&events).enumerate() {
        assert_eq!(event.seq, i as u64 + 1);
        assert_eq!(frame.id.as_deref(), Some(event.seq.to_string().as_str()));
        assert_eq!(frame.event.as_deref(), Some(event.event.name()));
        assert_eq!(&*event.turn_id, turn_id);
    }
    assert!(matches!(events.first().unwrap().event, Event::Thinking {}));
    assert!(events.last().unwrap().event.is_terminal());
    assert!(events.iter().any(|e| matches!(
        &e.event,
        Event::ResponseId { episode_id: ep, .. } if *ep == episode_id
    )));
    let answer: String = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(answer.contains(ANSWER), "{answer}");
}

#[tokio::test]
async fn history_is_the_callers_own_and_hidden_from_others() {
    let state = Rig::default().state();
    let response = send(&state, post_turn(r#"{"message":"coffee deals"}"#, None)).await;
    let episode = response.headers()["x-baton-episode-id"]
        .to_str()
        .unwrap()
        .to_owned();
    text(response).await;

    let mine = send(&state, get(&format!("/v1/episodes/{episode}"), None)).await;
    assert_eq!(mine.status(), StatusCode::OK);
    let history: Value = serde_json::from_str(&text(mine).await).unwrap();
    assert_eq!(history["episode_id"], episode.as_str());
    assert_eq!(history["turns"][0]["user_text"], "coffee deals");
    assert!(
        history["turns"][0]["narration"]
            .as_str()
            .unwrap()
            .contains(ANSWER)
    );

    let theirs = send(&state, get(&format!("/v1/episodes/{episode}"), Some("bob"))).await;
    assert_eq!(theirs.status(), StatusCode::NOT_FOUND);
    let unknown = send(&state, get("/v1/episodes/ep_unknown", None)).await;
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
    assert_eq!(error_of(theirs).await, error_of(unknown).await);
}

#[tokio::test]
async fn history_says_how_far_the_summary_reaches() {
    use std::sync::Arc;

    use baton_core::Principal;
    use baton_core::memory::EpisodeSummary;

    use baton_inproc::HeapStore;

    let store = Arc::new(HeapStore::new());
    let state = Rig {
        store: store.clone(),
        ..Rig::default()
    }
    .state();
    let response = send(&state, post_turn(r#"{"message":"coffee deals"}"#, None)).await;
    let episode = response.headers()["x-baton-episode-id"]
        .to_str()
        .unwrap()
        .to_owned();
    text(response).await;
    let body = r#"{"message":"more coffee deals","episode_id":"EP"}"#.replace("EP", &episode);
    text(send(&state, post_turn(&body, None)).await).await;

    let path = format!("/v1/episodes/{episode}");
    let before: Value =
        serde_json::from_str(&text(send(&state, get(&path, None)).await).await).unwrap();
    assert_eq!(before["summary"], Value::Null, "{before}");
    assert_eq!(before["turns"].as_array().unwrap().len(), 2);

    // As a compaction would leave it: turn 1 folded, turn 2 kept.
    let summary = EpisodeSummary {
        upto_seq: 1,
        text: "The user asked about coffee deals.".into(),
        ..EpisodeSummary::default()
    };
    let alice = Principal::new("alice").unwrap();
    store
        .save_summary(&alice, &episode, 2, &summary)
        .await
        .unwrap();
    let after: Value =
        serde_json::from_str(&text(send(&state, get(&path, None)).await).await).unwrap();
    assert_eq!(
        after["summary"],
        serde_json::json!({ "upto_seq": 1 }),
        "{after}"
    );
    assert_eq!(after["episode_id"], episode.as_str());
    assert_eq!(
        after["turns"].as_array().unwrap().len(),
        2,
        "every turn is still shown"
    );
    assert!(
        !after.to_string().contains("asked about"),
        "the summary's text stays out"
    );
}

#[tokio::test]
async fn a_principal_in_the_body_is_ignored_and_the_auth_context_wins() {
    let state = Rig::default().state();
    let body = r#"{"message":"coffee deals","principal":"mallory"}"#;
    let response = send(&state, post_turn(body, Some("alice"))).await;
    assert_eq!(response.status(), StatusCode::OK);
    let episode = response.headers()["x-baton-episode-id"]
        .to_str()
        .unwrap()
        .to_owned();
    text(response).await;

    let path = format!("/v1/episodes/{episode}");
    let alice = send(&state, get(&path, Some("alice"))).await;
    assert_eq!(alice.status(), StatusCode::OK, "the turn ran as alice");
    let mallory = send(&state, get(&path, Some("mallory"))).await;
    assert_eq!(mallory.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_completed_turn_id_replays_its_answer() {
    let state = Rig::default().state();
    let body = r#"{"message":"coffee deals","turn_id":"t-once"}"#;
    let first = send(&state, post_turn(body, None)).await;
    text(first).await;
    let again = send(&state, post_turn(body, None)).await;
    assert_eq!(again.status(), StatusCode::OK);
    assert_eq!(again.headers()["x-baton-replay"], "true");
    let events: Vec<_> = decode(&text(again).await)
        .iter()
        .map(|f| f.wire_event().unwrap())
        .collect();
    assert!(events.last().unwrap().event.is_terminal());
}

#[tokio::test]
async fn healthz_says_ok() {
    let state = Rig::default().state();
    let response = send(&state, get("/healthz", None)).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(text(response).await, r#"{"status":"ok"}"#);
}

#[tokio::test]
async fn metrics_count_turns() {
    let state = Rig::default().state();
    let response = send(&state, post_turn(r#"{"message":"coffee deals"}"#, None)).await;
    text(response).await;
    let response = send(&state, get("/metrics", None)).await;
    assert_eq!(response.status(), StatusCode::OK);
    let body: Value = serde_json::from_str(&text(response).await).unwrap();
    let counters = body["counters"].as_object().unwrap();
    assert!(!counters.is_empty(), "{body}");
    // The spawned tasks alive (none here: the test's own future is not spawned).
    assert_eq!(body["runtime"]["alive_tasks"].as_u64(), Some(0), "{body}");
}
