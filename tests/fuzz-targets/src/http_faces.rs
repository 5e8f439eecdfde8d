//! Any HTTP request to the app — method, path and query, headers, a body delivered in two
//! pieces — through every face (`/v1/turns`, A2A, AG-UI, chat completions, MCP, the link
//! callback): a response, never a panic and never a 500; a JSON answer is JSON, and its
//! body ends. Each input gets a fresh app over the heap store and the scripted model.
//!
//! The input is a request as text: `METHOD PATH`, header lines, an empty line, the body.

// `expect` on what the harness builds from fixed values (a failure there is a broken
// harness, not a finding) and, like an assertion, on what must hold of every input (the
// body ends).
#![allow(clippy::expect_used)]

use std::sync::{Arc, OnceLock};

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use baton_connectors::ConfiguredConnector;
use baton_core::Principal;
use baton_core::registry::Registry;
use baton_http::{AppState, LocalPrincipal};
use baton_inproc::HeapStore;
use baton_inproc::scripted::ScriptedModel;
use baton_runtime::{Runtime, Sealer};
use baton_testkit::registry::TestRegistry;
use bytes::Bytes;
use tower::ServiceExt as _;

/// Routes to `shop`, which calls its tool; then composes. Any message takes the whole path.
const SCRIPT: &str = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      text: ["Let me look. "]
      tool_calls: [{ name: ask_shop, args: { query: "coffee deals", intent_count: 1 } }]
    - when: { purpose: compose }
      text: ["Roast coffee ", "earns ", "500 points."]
  shop:
    - when: { after_tool_results: false }
      tool_calls: [{ name: search_offers, args: { query: "coffee deals" } }]
    - when: { after_tool_results: true }
      text: ["Roast coffee earns 500 points."]
"#;

struct Fixed {
    runtime: tokio::runtime::Runtime,
    registry: Arc<Registry>,
    model: Arc<ScriptedModel>,
}

fn fixed() -> &'static Fixed {
    static FIXED: OnceLock<Fixed> = OnceLock::new();
    FIXED.get_or_init(|| Fixed {
        runtime: tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime"),
        registry: Arc::new(TestRegistry::default().load().expect("the test registry")),
        model: Arc::new(ScriptedModel::from_yaml(SCRIPT).expect("the script")),
    })
}

/// A fresh app: nothing one input leaves behind reaches the next.
fn state(fixed: &Fixed) -> AppState {
    let runtime = Runtime::builder(fixed.registry.clone())
        .model_override(fixed.model.clone())
        .store(Arc::new(HeapStore::new()))
        .connector("test", Arc::new(ConfiguredConnector))
        .link_key(Sealer::new(&[7; 32]).expect("a 32-byte key"))
        .build()
        .expect("the runtime");
    let alice = Principal::new("alice").expect("a principal");
    AppState::new(runtime, Arc::new(LocalPrincipal::new(Some(alice)))).with_console()
}

/// The request the text describes, or `None` when it names no request at all.
fn request(input: &[u8]) -> Option<Request<Body>> {
    let split = input
        .windows(2)
        .position(|w| w == b"\n\n")
        .map_or((input, &[][..]), |at| (&input[..at], &input[at + 2..]));
    let (head, body) = split;
    let head = std::str::from_utf8(head).ok()?;
    let mut lines = head.lines();
    let (method, target) = lines.next()?.split_once(' ')?;
    let mut builder = Request::builder().method(method).uri(target);
    for line in lines {
        if let Some((name, value)) = line.split_once(':') {
            builder = builder.header(name.trim(), value.trim());
        }
    }
    // By halves: a body parser must not care where the transport cut it.
    let (first, second) = body.split_at(body.len() / 2);
    let pieces = [
        Bytes::copy_from_slice(first),
        Bytes::copy_from_slice(second),
    ];
    let stream = futures::stream::iter(pieces.map(Ok::<_, std::io::Error>));
    builder.body(Body::from_stream(stream)).ok()
}

/// One input: the request as text.
pub fn run(data: &[u8]) {
    let Some(request) = request(data) else {
        return;
    };
    let fixed = fixed();
    fixed.runtime.block_on(async {
        let app = baton_http::app(state(fixed));
        let response = app
            .oneshot(request)
            .await
            .expect("the router is infallible");
        let status = response.status();
        assert_ne!(
            status,
            StatusCode::INTERNAL_SERVER_ERROR,
            "a 500 for outside input"
        );
        let json = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"));
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("the body ends");
        // Replaying one input by hand: FUZZ_SHOW=1 prints what the app answered.
        if std::env::var_os("FUZZ_SHOW").is_some() {
            eprintln!("{status}\n{}", String::from_utf8_lossy(&body));
        }
        if json && !body.is_empty() {
            assert!(
                serde_json::from_slice::<serde_json::Value>(&body).is_ok(),
                "a JSON answer that is not JSON: {}",
                String::from_utf8_lossy(&body)
            );
        }
    });
}
