//! Another team's A2A agent answering a message with any bytes, in pieces cut anywhere:
//! the `a2a` connector's whole client path (its request, the event-stream decoder, each
//! event's JSON-RPC and A2A shapes, the reader's checks). The agent is a loopback server
//! here; the connector reads its card once and then streams. Events or a plain error,
//! never a panic, and the same result however the bytes arrive.

// `expect` only on what the harness builds from fixed values (runtimes, servers, requests)
// and on its own locks: a failure there is a broken harness, not a finding.
#![allow(clippy::expect_used)]

use std::sync::{Arc, Mutex, OnceLock};

use axum::Router;
use axum::body::Body;
use axum::http::header;
use axum::response::IntoResponse as _;
use axum::routing::{get, post};
use baton_connectors::A2aConnector;
use baton_core::Principal;
use baton_core::ports::upstream::{UpstreamChat, UpstreamRequest};
use bytes::Bytes;
use futures::StreamExt as _;
use serde_json::json;

use crate::common;

/// The pieces the next answer sends, each its own chunk on the wire.
#[derive(Debug, Clone, Default)]
struct Pieces(Arc<Mutex<Vec<Bytes>>>);

impl Pieces {
    fn set(&self, pieces: Vec<Bytes>) {
        *self.0.lock().expect("not poisoned") = pieces;
    }

    /// The pieces as a body (taken: each answer is sent once).
    fn body(&self) -> Body {
        let pieces = std::mem::take(&mut *self.0.lock().expect("not poisoned"));
        Body::from_stream(futures::stream::iter(
            pieces.into_iter().map(Ok::<_, std::io::Error>),
        ))
    }
}

struct Fixed {
    runtime: tokio::runtime::Runtime,
    pieces: Pieces,
    base: String,
    connector: A2aConnector,
}

fn fixed() -> &'static Fixed {
    static FIXED: OnceLock<Fixed> = OnceLock::new();
    FIXED.get_or_init(|| {
        baton_connectors::install_tls_provider();
        let runtime = common::runtime();
        let pieces = Pieces::default();
        let answer = pieces.clone();
        let card = Arc::new(Mutex::new(json!({})));
        let shown = card.clone();
        let router = Router::new()
            .route(
                "/.well-known/agent-card.json",
                get(move || {
                    let card = shown.lock().expect("not poisoned").clone();
                    async move { axum::Json(card) }
                }),
            )
            .route(
                "/",
                post(move |body: String| {
                    let answer = answer.clone();
                    async move {
                        // A cancel of an unfinished task is answered, and not with the input.
                        if body.contains("\"CancelTask\"") {
                            return axum::Json(json!({"jsonrpc": "2.0", "result": {}}))
                                .into_response();
                        }
                        ([(header::CONTENT_TYPE, "text/event-stream")], answer.body())
                            .into_response()
                    }
                }),
            );
        let base = common::serve(&runtime, router);
        *card.lock().expect("not poisoned") = json!({
            "name": "Fuzzed", "description": "Answers with the input.", "version": "1",
            "supportedInterfaces": [{"url": format!("{base}/"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
            "capabilities": {"streaming": true},
            "defaultInputModes": [], "defaultOutputModes": [], "skills": [],
        });
        Fixed {
            runtime,
            pieces,
            base,
            connector: A2aConnector::new(),
        }
    })
}

fn request(base: &str) -> UpstreamRequest {
    UpstreamRequest {
        tool_id: Arc::from("fuzzed"),
        config: Arc::new(json!({"url": base, "timeout_ms": 900})),
        principal: Principal::new("alice").expect("a principal"),
        episode_id: Arc::from("ep-1"),
        agent_id: Arc::from("stores"),
        message: "hi".to_owned(),
        details: serde_json::Map::new(),
        conversation_id: None,
        pending: None,
        replay: Vec::new(),
        locale: None,
        traceparent: None,
    }
}

/// Every event of the exchange, then its error if it failed.
fn exchange(fixed: &Fixed, pieces: Vec<Bytes>) -> Vec<String> {
    fixed.pieces.set(pieces);
    fixed.runtime.block_on(async {
        let mut seen = Vec::new();
        match fixed.connector.converse(request(&fixed.base)).await {
            Err(e) => seen.push(format!("refused {e:?}")),
            Ok(mut stream) => {
                while let Some(item) = stream.next().await {
                    seen.push(format!("{item:?}"));
                }
            }
        }
        seen
    })
}

/// One input: where to cut, then the agent's answer.
pub fn run(data: &[u8]) {
    let Some((cuts, body)) = common::input::<(Vec<u16>, &[u8])>(data) else {
        return;
    };
    let fixed = fixed();
    common::same_however_cut(&cuts, body, |pieces| exchange(fixed, pieces));
}
