//! The client against recorded and faulty servers: real HTTP on loopback, the streams of
//! `tests/streams/` replayed byte for byte, and servers that fail in the ways real ones do.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use axum::routing::post;
use baton_core::message::Message;
use baton_core::ports::model::{
    CallPurpose, Inference, Model, ModelError, ModelEvent, ModelRequest, StopReason, TokenUsage,
    ToolChoice, ToolDef,
};
use baton_core::registry::{ModelCapabilities, ModelEndpoint, ModelSpec, Prices};
use baton_openai::OpenAiCompatible;
use futures::StreamExt as _;
use serde_json::{Value, json};

/// What a test server answers, and what it saw.
#[derive(Clone)]
struct Server {
    answer: Arc<dyn Fn(&Value) -> Response + Send + Sync>,
    bodies: Arc<Mutex<Vec<Value>>>,
    auth: Arc<Mutex<Vec<String>>>,
    calls: Arc<AtomicUsize>,
}

async fn handle(State(s): State<Server>, headers: HeaderMap, body: String) -> Response {
    s.calls.fetch_add(1, Ordering::SeqCst);
    let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    if let Some(a) = headers.get(header::AUTHORIZATION) {
        s.auth.lock().unwrap().push(a.to_str().unwrap().to_owned());
    }
    s.bodies.lock().unwrap().push(body.clone());
    (s.answer)(&body)
}

/// Starts a server; its base URL and its record.
async fn serve(answer: impl Fn(&Value) -> Response + Send + Sync + 'static) -> (String, Server) {
    let server = Server {
        answer: Arc::new(answer),
        bodies: Arc::default(),
        auth: Arc::default(),
        calls: Arc::default(),
    };
    let app = Router::new()
        .route("/v1/chat/completions", post(handle))
        .with_state(server.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}/v1"), server)
}

fn sse(body: impl Into<Body>) -> Response {
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .body(body.into())
        .unwrap()
}

fn recorded(name: &str) -> String {
    let path = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap())
        .join("tests/streams")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn spec(base_url: &str, tool_choice: bool, api_key_env: Option<&str>) -> ModelSpec {
    ModelSpec {
        key: Arc::from("local"),
        provider: Arc::from(baton_openai::PROVIDER),
        model_id: Arc::from("served-model"),
        context_window: 8_192,
        prices: Prices::default(),
        capabilities: ModelCapabilities {
            tool_choice,
            ..ModelCapabilities::default()
        },
        endpoint: Some(ModelEndpoint {
            base_url: Arc::from(base_url),
            api_key_env: api_key_env.map(Arc::from),
        }),
    }
}

fn request(choice: ToolChoice) -> ModelRequest {
    ModelRequest {
        agent_id: Arc::from("concierge"),
        model_id: Arc::from("served-model"),
        purpose: CallPurpose::Route,
        system: Vec::new(),
        messages: vec![Message::user("what is my balance?")],
        tools: Arc::from(vec![ToolDef {
            name: Arc::from("ask_rewards"),
            description: Arc::from("Rewards"),
            input_schema: Arc::new(json!({"type": "object"})),
        }]),
        tool_choice: choice,
        inference: Inference::default(),
    }
}

/// What a stream came to.
#[derive(Debug, Default, PartialEq)]
struct Outcome {
    text: String,
    reasoning: String,
    /// (id, name, arguments) in the order the calls started.
    calls: Vec<(String, String, String)>,
    stopped: Vec<String>,
    stop: Option<StopReason>,
    usage: Option<TokenUsage>,
    error: Option<ModelError>,
}

async fn run(model: &OpenAiCompatible, request: &ModelRequest) -> Outcome {
    let mut out = Outcome::default();
    let mut events = model.stream(request);
    while let Some(event) = events.next().await {
        match event {
            Ok(ModelEvent::TextDelta(t)) => out.text.push_str(&t),
            Ok(ModelEvent::ReasoningDelta(t)) => out.reasoning.push_str(&t),
            Ok(ModelEvent::ToolUseStart { id, name }) => out.calls.push((id, name, String::new())),
            Ok(ModelEvent::ToolUseDelta { id, fragment }) => {
                let call = out
                    .calls
                    .iter_mut()
                    .find(|c| c.0 == id)
                    .expect("delta before start");
                call.2.push_str(&fragment);
            }
            Ok(ModelEvent::ToolUseStop { id }) => out.stopped.push(id),
            Ok(ModelEvent::Stop(reason)) => out.stop = Some(reason),
            Ok(ModelEvent::Usage(u)) => out.usage = Some(u),
            Err(e) => {
                assert!(out.error.is_none(), "nothing may follow an error");
                out.error = Some(e);
            }
        }
    }
    out
}

async fn replay(file: &'static str) -> Outcome {
    answered_by(move |_| sse(recorded(file))).await
}

/// What a plain request (no forced tool) came to against a server answering `answer`.
async fn answered_by(answer: impl Fn(&Value) -> Response + Send + Sync + 'static) -> Outcome {
    let (url, _) = serve(answer).await;
    let model = OpenAiCompatible::new([Arc::new(spec(&url, false, None))]).unwrap();
    run(&model, &request(ToolChoice::Auto)).await
}

fn call(id: &str, name: &str, args: &str) -> (String, String, String) {
    (id.into(), name.into(), args.into())
}

#[tokio::test]
async fn llama_cpp_text_streams_as_text() {
    let out = replay("llamacpp-text.sse").await;
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(out.text, "Hello, welcome to my little corner of the world!");
    assert!(out.calls.is_empty());
    assert_eq!(out.stop, Some(StopReason::EndTurn));
    // llama.cpp's server reports no usage in a stream.
    assert_eq!(out.usage, None);
    let out = replay("llamacpp-length.sse").await;
    assert!(!out.text.is_empty());
    assert_eq!(out.stop, Some(StopReason::MaxTokens));
}

#[tokio::test]
async fn a_llama_cpp_forced_tool_call_repeating_id_and_name_is_one_call() {
    let out = replay("llamacpp-forced-tool.sse").await;
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(out.calls.len(), 1, "{:?}", out.calls);
    let (id, name, args) = &out.calls[0];
    assert_eq!(name, "ask_rewards");
    assert!(id.starts_with("call__0_ask_rewards"));
    let args: Value = serde_json::from_str(args).expect("the arguments are one JSON object");
    assert!(args.get("request").is_some(), "{args}");
    assert_eq!(out.stopped, vec![id.clone()]);
    assert_eq!(out.stop, Some(StopReason::ToolUse));
}

#[tokio::test]
async fn ollama_whole_calls_with_a_stop_finish_are_tool_use() {
    let out = replay("ollama-tool.sse").await;
    assert_eq!(
        out.calls,
        vec![
            call(
                "call_k3v9",
                "ask_rewards",
                r#"{"request":"what is my points balance"}"#
            ),
            call("call_p2x1", "ask_shop", r#"{"request":"coffee offers"}"#),
        ]
    );
    assert_eq!(out.stop, Some(StopReason::ToolUse));
    assert_eq!(
        out.usage,
        Some(TokenUsage {
            input: 212,
            output: 41,
            ..TokenUsage::default()
        })
    );
}

#[tokio::test]
async fn reasoning_arrives_apart_from_the_answer() {
    for file in ["ollama-reasoning.sse", "vllm-reasoning.sse"] {
        let out = replay(file).await;
        assert!(out.error.is_none(), "{file}: {:?}", out.error);
        assert!(!out.reasoning.is_empty(), "{file}");
        assert!(
            !out.text.contains("Think") && !out.text.contains("greets"),
            "{file}"
        );
        assert_eq!(out.stop, Some(StopReason::EndTurn), "{file}");
    }
}

#[tokio::test]
async fn vllm_parallel_calls_are_assembled_by_index() {
    let out = replay("vllm-parallel-tools.sse").await;
    assert_eq!(
        out.calls,
        vec![
            call(
                "chatcmpl-tool-111",
                "ask_rewards",
                r#"{"request": "points balance"}"#
            ),
            call(
                "chatcmpl-tool-222",
                "ask_support",
                r#"{"request": "receipt R-1 missing"}"#
            ),
        ]
    );
    assert_eq!(out.stopped.len(), 2);
    assert_eq!(out.stop, Some(StopReason::ToolUse));
    assert_eq!(out.usage.map(|u| (u.input, u.output)), Some((300, 40)));
}

#[tokio::test]
async fn lm_studio_empty_names_on_continuations_do_not_split_the_call() {
    let out = replay("lmstudio-tool.sse").await;
    assert_eq!(
        out.calls,
        vec![call(
            "814390612",
            "ask_rewards",
            r#"{"request":"my balance"}"#
        )]
    );
    assert_eq!(out.stop, Some(StopReason::ToolUse));
}

#[tokio::test]
async fn openai_cached_prompt_tokens_are_counted_as_cache_reads() {
    let out = replay("openai-cached-usage.sse").await;
    assert_eq!(out.text, "You have 1,250 points.");
    assert_eq!(
        out.usage,
        Some(TokenUsage {
            input: 128,
            output: 7,
            cache_read: 1920,
            cache_write: 0,
        })
    );
}

#[tokio::test]
async fn the_lenient_cases_together() {
    let out = replay("quirks.sse").await;
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(
        out.calls,
        vec![
            call("c-1", "ask_rewards", r#"{"request":"balance"}"#),
            call("c-2", "ask_shop", r#"{"request":"coffee"}"#),
            // No id, no index, another name: a new call, with no arguments at all.
            call("call_2", "ask_support", "{}"),
        ]
    );
    assert_eq!(out.stop, Some(StopReason::ToolUse));
    assert_eq!(out.usage, None, "an empty usage is no usage");
}

#[tokio::test]
async fn malformed_arguments_reach_the_engine_as_they_are() {
    let out = answered_by(|_| {
        sse(concat!(
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"ask_rewards\",\"arguments\":\"{\\\"request\\\": oops\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: [DONE]\n\n"
        ))
    })
    .await;
    assert!(out.error.is_none());
    assert_eq!(
        out.calls,
        vec![call("c", "ask_rewards", r#"{"request": oops"#)]
    );
}

#[tokio::test]
async fn http_failures_are_classified() {
    for (status, expect) in [
        (429, "throttled"),
        (500, "unavailable"),
        (503, "unavailable"),
        (400, "invalid"),
        (401, "invalid"),
    ] {
        let (url, _) = serve(move |_| {
            Response::builder()
                .status(StatusCode::from_u16(status).unwrap())
                .body(Body::from("{\"error\":{\"message\":\"internal detail\"}}"))
                .unwrap()
        })
        .await;
        let model = OpenAiCompatible::new([Arc::new(spec(&url, false, None))]).unwrap();
        let out = run(&model, &request(ToolChoice::Auto)).await;
        let got = match out.error {
            Some(ModelError::Throttled) => "throttled",
            Some(ModelError::Unavailable(_)) => "unavailable",
            Some(ModelError::Invalid(_)) => "invalid",
            other => panic!("{status}: {other:?}"),
        };
        assert_eq!(got, expect, "HTTP {status}");
        assert!(out.text.is_empty());
    }
}

#[tokio::test]
async fn a_stream_cut_mid_tool_call_is_an_error_not_a_short_answer() {
    let out = answered_by(|_| {
        sse("data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"ask_rewards\",\"arguments\":\"{\\\"req\"}}]}}]}\n\n")
    })
    .await;
    assert!(
        matches!(out.error, Some(ModelError::Unavailable(_))),
        "{:?}",
        out.error
    );
    assert!(out.stop.is_none());
}

#[tokio::test]
async fn an_empty_body_with_status_200_is_an_error() {
    // llama.cpp's chatml-function-calling format does this when streaming.
    let out = answered_by(|_| sse("")).await;
    assert!(
        matches!(out.error, Some(ModelError::Unavailable(_))),
        "{:?}",
        out.error
    );
}

#[tokio::test]
async fn garbage_and_html_are_model_errors() {
    let out = answered_by(|_| sse("data: this is not json\n\n")).await;
    assert!(
        matches!(out.error, Some(ModelError::Malformed(_))),
        "{:?}",
        out.error
    );

    let out = answered_by(|_| {
        Response::builder()
            .header(header::CONTENT_TYPE, "text/html")
            .body(Body::from("<html><body>Bad gateway</body></html>"))
            .unwrap()
    })
    .await;
    assert!(out.error.is_some());
    assert!(out.text.is_empty());
}

#[tokio::test]
async fn a_line_without_end_is_cut_at_the_bound() {
    // 2 MiB without a newline: the client stops reading at 1 MiB.
    let out = answered_by(|_| sse(format!("data: {}", "x".repeat(2 * 1024 * 1024)))).await;
    assert!(
        matches!(out.error, Some(ModelError::Unavailable(_))),
        "{:?}",
        out.error
    );
}

#[tokio::test]
async fn a_silent_server_times_out() {
    let (url, _) = serve(|_| {
        let silent = futures::stream::pending::<Result<bytes::Bytes, std::io::Error>>();
        sse(Body::from_stream(silent))
    })
    .await;
    let model = OpenAiCompatible::new([Arc::new(spec(&url, false, None))])
        .unwrap()
        .with_stall_limit(Duration::from_millis(200));
    let out = run(&model, &request(ToolChoice::Auto)).await;
    assert_eq!(out.error, Some(ModelError::Timeout));
}

#[tokio::test]
async fn a_server_that_is_down_is_unavailable() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    let model = OpenAiCompatible::new([Arc::new(spec(&url, false, None))]).unwrap();
    let out = run(&model, &request(ToolChoice::Auto)).await;
    assert!(
        matches!(out.error, Some(ModelError::Unavailable(_))),
        "{:?}",
        out.error
    );
}

#[tokio::test]
async fn the_api_key_travels_as_a_bearer_token_and_a_missing_variable_is_named() {
    let (url, server) = serve(|_| sse(recorded("openai-cached-usage.sse"))).await;
    // A variable every process has stands in for the key (tests may not set variables).
    let key = std::env::var("PATH").unwrap();
    let model = OpenAiCompatible::new([Arc::new(spec(&url, false, Some("PATH")))]).unwrap();
    assert!(!format!("{model:?}").contains(&key));
    let out = run(&model, &request(ToolChoice::Auto)).await;
    assert!(out.error.is_none());
    assert_eq!(*server.auth.lock().unwrap(), vec![format!("Bearer {key}")]);

    let err = OpenAiCompatible::new([Arc::new(spec(&url, false, Some("BATON_TEST_UNSET_KEY")))])
        .unwrap_err();
    assert!(err.to_string().contains("BATON_TEST_UNSET_KEY"), "{err}");
}

#[tokio::test]
async fn the_request_names_the_served_model_and_every_card_may_share_one() {
    let (url, server) = serve(|_| sse(recorded("openai-cached-usage.sse"))).await;
    let mut s = spec(&url, false, None);
    s.model_id = Arc::from("qwen2.5:0.5b");
    let model = OpenAiCompatible::serving_every_card(&s).unwrap();
    // The card names another model; the shared one serves it.
    let out = run(&model, &request(ToolChoice::Auto)).await;
    assert!(out.error.is_none(), "{:?}", out.error);
    let bodies = server.bodies.lock().unwrap();
    assert_eq!(bodies[0]["model"], "qwen2.5:0.5b");
    assert_eq!(bodies[0]["stream"], true);
    assert_eq!(bodies[0]["tool_choice"], "auto");
}

#[tokio::test]
async fn a_server_that_ignores_a_forced_tool_choice_is_named_once() {
    // Answers every request with text, whatever the tool choice says.
    let (url, server) = serve(|_| sse(recorded("openai-cached-usage.sse"))).await;
    let model = OpenAiCompatible::new([Arc::new(spec(&url, true, None))]).unwrap();
    let forced = request(ToolChoice::Tool("ask_rewards".into()));
    let out = run(&model, &forced).await;
    let Some(ModelError::Invalid(message)) = out.error else {
        panic!("{:?}", out.error);
    };
    assert!(message.contains("tool_choice: false"), "{message}");
    assert!(message.contains(&url), "{message}");
    // Requests that force nothing are served; the probe ran once.
    let out = run(&model, &request(ToolChoice::Auto)).await;
    assert!(out.error.is_none());
    let again = run(&model, &forced).await;
    assert!(matches!(again.error, Some(ModelError::Invalid(_))));
    assert_eq!(
        server.calls.load(Ordering::SeqCst),
        2,
        "one probe and one served call"
    );
}

#[tokio::test]
async fn a_server_that_honours_a_forced_tool_choice_passes_the_probe() {
    let (url, server) = serve(|body| {
        if body["tool_choice"].is_object() {
            let name = body["tool_choice"]["function"]["name"].as_str().unwrap().to_owned();
            sse(format!(
                "data: {{\"choices\":[{{\"delta\":{{\"tool_calls\":[{{\"index\":0,\"id\":\"p\",\"function\":{{\"name\":\"{name}\",\"arguments\":\"{{}}\"}}}}]}}}}]}}\n\ndata: {{\"choices\":[{{\"delta\":{{}},\"finish_reason\":\"tool_calls\"}}]}}\n\ndata: [DONE]\n\n"
            ))
        } else {
            sse(recorded("openai-cached-usage.sse"))
        }
    })
    .await;
    let model = OpenAiCompatible::new([Arc::new(spec(&url, true, None))]).unwrap();
    let out = run(&model, &request(ToolChoice::Tool("ask_rewards".into()))).await;
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(out.calls[0].1, "ask_rewards");
    let bodies = server.bodies.lock().unwrap();
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0]["tool_choice"]["function"]["name"], "baton_probe");
}
