//! The app on a real socket, read by a streaming HTTP client.

use std::time::Duration;

use baton_core::events::{Event, WireEvent};
use baton_http::sse::SseDecoder;
use baton_http::{AppState, PRINCIPAL_HEADER};
use futures::StreamExt;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::support::*;

struct Server {
    base: String,
    stop: oneshot::Sender<()>,
    task: JoinHandle<std::io::Result<()>>,
}

async fn start(state: AppState) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(baton_http::serve(
        listener,
        state,
        baton_http::ServerLimits::default(),
        async {
            let _ = stopped.await;
        },
    ));
    Server { base, stop, task }
}

/// A reqwest client; reqwest has no crypto provider of its own in this workspace.
fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

fn post(server: &Server, body: &str) -> reqwest::RequestBuilder {
    client()
        .post(format!("{}/v1/turns", server.base))
        .header("content-type", "application/json")
        .header(PRINCIPAL_HEADER, "alice")
        .body(body.to_owned())
}

#[tokio::test]
async fn a_streamed_turn_arrives_in_order_and_completes() {
    let server = start(
        Rig {
            script: script(20, 20),
            ..Rig::default()
        }
        .state(),
    )
    .await;
    let response = post(&server, r#"{"message":"coffee deals"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let turn_id = response.headers()["x-baton-turn-id"]
        .to_str()
        .unwrap()
        .to_owned();

    let mut decoder = SseDecoder::new();
    let mut events: Vec<WireEvent> = Vec::new();
    let mut body = response.bytes_stream();
    while let Some(chunk) = body.next().await {
        for frame in decoder.push(&chunk.unwrap()) {
            let event = frame.wire_event().unwrap();
            assert_eq!(frame.id, Some(event.seq.to_string()));
            events.push(event);
        }
    }
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    let expected: Vec<u64> = (1..=events.len() as u64).collect();
    assert_eq!(seqs, expected);
    assert!(events.iter().all(|e| *e.turn_id == turn_id));
    assert!(matches!(
        events.last().unwrap().event,
        Event::Completed { .. }
    ));

    server.stop.send(()).unwrap();
    server.task.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_client_that_leaves_mid_stream_still_gets_its_turn_committed() {
    let server = start(
        Rig {
            script: script(200, 100),
            ..Rig::default()
        }
        .state(),
    )
    .await;
    let response = post(&server, r#"{"message":"coffee deals"}"#)
        .send()
        .await
        .unwrap();
    let episode = response.headers()["x-baton-episode-id"]
        .to_str()
        .unwrap()
        .to_owned();

    // Read the first frame, then hang up.
    let mut decoder = SseDecoder::new();
    let mut body = response.bytes_stream();
    let mut first = Vec::new();
    while first.is_empty() {
        first = decoder.push(&body.next().await.unwrap().unwrap());
    }
    let first = first[0].wire_event().unwrap();
    assert!(matches!(first.event, Event::Thinking {}), "{first:?}");
    drop(body);

    let client = client();
    let url = format!("{}/v1/episodes/{episode}", server.base);
    let mut history = Value::Null;
    for _ in 0..100 {
        let response = client
            .get(&url)
            .header(PRINCIPAL_HEADER, "alice")
            .send()
            .await
            .unwrap();
        if response.status() == 200 {
            history = response.json().await.unwrap();
            if history["turns"].as_array().is_some_and(|t| !t.is_empty()) {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
    let turns = history["turns"].as_array().expect("the turn was committed");
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0]["outcome"], "answered");
    assert!(
        turns[0]["narration"].as_str().unwrap().contains(ANSWER),
        "{history}"
    );
    let _ = server.stop.send(());
}
