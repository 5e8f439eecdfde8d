//! An MCP server answering a tool call with any bytes, in pieces cut anywhere: the `mcp`
//! connector's whole client path over streamable HTTP (the official SDK's transport and
//! SSE decoding, the JSON-RPC response, the result made an envelope). The server is a
//! loopback one that initializes properly and answers `tools/call` with the input, its
//! `$ID` replaced by the call's request id. An envelope or a plain error, never a panic;
//! an envelope the same however the bytes arrive.

// `expect` only on what the harness builds from fixed values (runtimes, servers, requests)
// and on its own locks: a failure there is a broken harness, not a finding.
#![allow(clippy::expect_used)]

use std::sync::{Arc, Mutex, OnceLock};

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse as _, Response};
use axum::routing::post;
use baton_connectors::McpConnector;
use baton_core::Principal;
use baton_core::ports::connector::{Connector, ConnectorRequest};
use serde_json::{Value, json};

use crate::common;

/// The tool call's answer: the input's bytes and where to cut them.
#[derive(Debug, Clone, Default)]
struct Answer(Arc<Mutex<(Vec<u16>, Vec<u8>)>>);

impl Answer {
    /// The answer to request `id`, in its pieces.
    fn body(&self, id: &Value) -> axum::body::Body {
        let (cuts, bytes) = std::mem::take(&mut *self.0.lock().expect("not poisoned"));
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let bytes = if text.contains("$ID") {
            text.replace("$ID", &id.to_string()).into_bytes()
        } else {
            bytes
        };
        let pieces = common::cut(&cuts, &bytes);
        axum::body::Body::from_stream(futures::stream::iter(
            pieces.into_iter().map(Ok::<_, std::io::Error>),
        ))
    }
}

/// A server that does the handshake by the book and answers the call with the input.
fn respond(answer: &Answer, message: &Value) -> Response {
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    match message.get("method").and_then(Value::as_str) {
        _ if id.is_null() => StatusCode::ACCEPTED.into_response(),
        Some("initialize") => {
            let version = message["params"]["protocolVersion"].clone();
            let result = json!({"jsonrpc": "2.0", "id": id, "result": {
                "protocolVersion": version,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "fuzzed", "version": "1"},
            }});
            ([("mcp-session-id", "s-1")], axum::Json(result)).into_response()
        }
        Some("tools/call") => (
            [(header::CONTENT_TYPE, "text/event-stream")],
            answer.body(&id),
        )
            .into_response(),
        _ => axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": {}})).into_response(),
    }
}

struct Fixed {
    runtime: tokio::runtime::Runtime,
    answer: Answer,
    base: String,
}

fn fixed() -> &'static Fixed {
    static FIXED: OnceLock<Fixed> = OnceLock::new();
    FIXED.get_or_init(|| {
        baton_connectors::install_tls_provider();
        let runtime = common::runtime();
        let answer = Answer::default();
        let served = answer.clone();
        let router = Router::new().route(
            "/mcp",
            post(move |body: String| {
                let answer = served.clone();
                async move {
                    match serde_json::from_str::<Value>(&body) {
                        Ok(message) => respond(&answer, &message),
                        Err(_) => StatusCode::BAD_REQUEST.into_response(),
                    }
                }
            })
            .get(|| async { StatusCode::METHOD_NOT_ALLOWED })
            .delete(|| async { StatusCode::OK }),
        );
        let base = common::serve(&runtime, router);
        Fixed {
            runtime,
            answer,
            base,
        }
    })
}

fn request(base: &str) -> ConnectorRequest {
    ConnectorRequest {
        tool_id: Arc::from("fuzzed_tool"),
        config: Arc::new(json!({
            "kind": "mcp",
            "server": {"url": format!("{base}/mcp")},
            "tool": "fuzzed",
            "domain_type": "mcp_fuzz",
            "enricher_id": "mcp-fuzz",
            "version": "1.0.0",
            "connect_timeout_ms": 400,
            "call_timeout_ms": 400,
        })),
        args: json!({"query": "coffee"}),
        principal: Principal::new("alice").expect("a principal"),
        episode_id: Arc::from("ep-1"),
        agent_id: Arc::from("rewards"),
        now_ms: 0,
        progress: None,
        traceparent: None,
        idempotency_key: None,
        links: None,
        input: None,
    }
}

/// One call on a new connector: a new session, so the call's request id (which the input's
/// `$ID` becomes) is the same on every run.
fn call(fixed: &Fixed, cuts: Vec<u16>, bytes: &[u8]) -> String {
    *fixed.answer.0.lock().expect("not poisoned") = (cuts, bytes.to_vec());
    let result = fixed.runtime.block_on(async {
        let connector = McpConnector::new(std::path::Path::new("."));
        connector.call(request(&fixed.base)).await
    });
    format!("{result:?}")
}

/// One input: where to cut, then the server's answer to the call.
pub fn run(data: &[u8]) {
    let Some((cuts, body)) = common::input::<(Vec<u16>, &[u8])>(data) else {
        return;
    };
    let fixed = fixed();
    let whole = call(fixed, Vec::new(), body);
    common::show(&whole);
    let split = call(fixed, cuts, body);
    // An answer must not depend on how it was cut. Garbage may end differently (the SDK's
    // transport ends the session, or waits for the rest until the call's timeout): either
    // way a plain error.
    if whole.starts_with("Ok") || split.starts_with("Ok") {
        assert_eq!(whole, split);
    }
}
