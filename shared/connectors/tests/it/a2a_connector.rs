//! The `a2a` connector against a real A2A 1.0 agent, the example registry's store agent
//! (`shared/registry/a2a/store_agent.py`, served by the official Python SDK `a2a-sdk`), and
//! against a scripted server for what a real agent does not do on purpose (garbage,
//! another context, a runaway answer, a stream that never ends).
//!
//! The agent runs in the Python environment `./infra/a2a.sh` builds; these tests fail
//! (they do not skip) when it is missing.

use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use baton_connectors::A2aConnector;
use baton_core::Principal;
use baton_core::ports::connector::Connector;
use baton_core::ports::upstream::{
    UpstreamChat, UpstreamEnd, UpstreamError, UpstreamEvent, UpstreamRequest,
};
use futures::StreamExt;
use serde_json::{Value, json};

/// The example store agent on a free port, killed when dropped.
pub(crate) struct StoreAgent {
    child: Child,
    pub(crate) port: u16,
}

impl StoreAgent {
    pub(crate) fn start(delay_ms: u64) -> StoreAgent {
        let port = free_port();
        let script = baton_testkit::crate_dir().join("../registry/a2a/store_agent.py");
        let child = Command::new(baton_testkit::a2a_python())
            .arg(script)
            .arg(port.to_string())
            .env("BATON_STORE_AGENT_DELAY_MS", delay_ms.to_string())
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the store agent");
        let mut agent = StoreAgent { child, port };
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + Duration::from_secs(30);
        // Ready when it serves its card: a port that only accepts connections may not be
        // the agent's yet.
        while !serves_its_card(addr) {
            if let Ok(Some(status)) = agent.child.try_wait() {
                panic!("the store agent exited before listening: {status}");
            }
            assert!(Instant::now() < deadline, "the store agent did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        agent
    }

    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for StoreAgent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether an A2A agent at `addr` answers for its card.
fn serves_its_card(addr: SocketAddr) -> bool {
    use std::io::{Read as _, Write as _};
    let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let asked = stream.write_all(
        b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    );
    let mut head = [0u8; 12];
    asked.is_ok() && stream.read_exact(&mut head).is_ok() && head.ends_with(b"200")
}

fn free_port() -> u16 {
    baton_testkit::port_for_a_child()
}

fn request(url: &str, message: &str) -> UpstreamRequest {
    UpstreamRequest {
        tool_id: Arc::from("store_finder"),
        config: Arc::new(json!({"url": url, "timeout_ms": 10000})),
        principal: Principal::new("alice").unwrap(),
        episode_id: Arc::from("ep-1"),
        agent_id: Arc::from("stores"),
        message: message.to_owned(),
        details: serde_json::Map::new(),
        conversation_id: None,
        pending: None,
        replay: Vec::new(),
        locale: Some("en-GB".into()),
        traceparent: None,
    }
}

/// Every event of one exchange, or its error after those before it.
async fn exchange(
    connector: &A2aConnector,
    request: UpstreamRequest,
) -> (Vec<UpstreamEvent>, Option<UpstreamError>) {
    let mut stream = match connector.converse(request).await {
        Ok(stream) => stream,
        Err(e) => return (Vec::new(), Some(e)),
    };
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        match event {
            Ok(event) => events.push(event),
            Err(e) => return (events, Some(e)),
        }
    }
    (events, None)
}

fn text(events: &[UpstreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            UpstreamEvent::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

fn context(events: &[UpstreamEvent]) -> String {
    match events.first() {
        Some(UpstreamEvent::Conversation(id)) => id.clone(),
        other => panic!("the first event is not the context: {other:?}"),
    }
}

#[tokio::test]
async fn a_real_agent_streams_its_answer_and_keeps_the_context() {
    let agent = StoreAgent::start(0);
    let c = A2aConnector::new();
    let (events, error) = exchange(
        &c,
        request(&agent.url(), "Which FreshMart in Springfield is open late?"),
    )
    .await;
    assert_eq!(error, None);
    let ctx = context(&events);
    assert!(events.contains(&UpstreamEvent::Working), "{events:?}");
    let answer = text(&events);
    // The agent's data, filtered: Downtown closes at 22:00, Elm Park at 21:00.
    assert!(
        answer.contains("FreshMart Downtown, 12 Main Street"),
        "{answer}"
    );
    assert!(!answer.contains("Elm Park"), "{answer}");
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, UpstreamEvent::AwaitingInput(_)))
    );
    // The next message continues the same context.
    let mut next = request(&agent.url(), "And the Bean & Leaf in Riverton?");
    next.conversation_id = Some(ctx.clone());
    let (events, error) = exchange(&c, next).await;
    assert_eq!(error, None);
    assert_eq!(context(&events), ctx);
    assert!(
        text(&events).contains("Bean & Leaf Harbour"),
        "{}",
        text(&events)
    );
}

#[tokio::test]
async fn a_question_from_the_agent_is_answered_on_the_same_task() {
    let agent = StoreAgent::start(0);
    let c = A2aConnector::new();
    let (events, error) = exchange(&c, request(&agent.url(), "Where are the bakeries?")).await;
    assert_eq!(error, None);
    let ctx = context(&events);
    assert!(
        text(&events).starts_with("Which city are you in?"),
        "{events:?}"
    );
    let Some(UpstreamEvent::AwaitingInput(task)) = events.last().cloned() else {
        panic!("the exchange did not wait for the user: {events:?}");
    };
    let mut reply = request(&agent.url(), "Lakeside");
    reply.conversation_id = Some(ctx.clone());
    reply.pending = Some(task);
    let (events, error) = exchange(&c, reply).await;
    assert_eq!(error, None);
    assert_eq!(context(&events), ctx);
    let answer = text(&events);
    // The bakery question and the city together: the one bakery in Lakeside.
    assert!(answer.contains("FreshMart Lakeside"), "{answer}");
    assert!(!answer.contains("Green Basket"), "{answer}");
    // A task the agent no longer knows is a forgotten exchange.
    let mut stale = request(&agent.url(), "Springfield");
    stale.conversation_id = Some(ctx);
    stale.pending = Some("no-such-task".into());
    let (_, error) = exchange(&c, stale).await;
    assert_eq!(error, Some(UpstreamError::UnknownConversation));
}

#[tokio::test]
async fn a_dropped_exchange_cancels_the_agents_task() {
    let agent = StoreAgent::start(5_000);
    let c = A2aConnector::new();
    let mut stream = c
        .converse(request(&agent.url(), "Stores in Riverton?"))
        .await
        .unwrap();
    // Read until the agent is working, then stop listening (the turn's deadline).
    let mut task_context = None;
    while let Some(event) = stream.next().await {
        match event.unwrap() {
            UpstreamEvent::Conversation(ctx) => task_context = Some(ctx),
            UpstreamEvent::Working => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    drop(stream);
    let ctx = task_context.unwrap();
    // The agent says the task was canceled: ListTasks for the context, polled.
    let http = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let listed: Value = http
            .post(format!("{}/", agent.url()))
            .header("A2A-Version", "1.0")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {"contextId": ctx}}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let state = listed["result"]["tasks"][0]["status"]["state"].clone();
        if state == "TASK_STATE_CANCELED" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the task was not canceled: {listed}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn the_card_is_read_at_load_and_checked_by_probe() {
    let agent = StoreAgent::start(0);
    let c = A2aConnector::new();
    let config = json!({"kind": "a2a", "url": agent.url()});
    c.check_config("store_finder", &config).unwrap();
    let found = c.discover("store_finder", &config).await.unwrap().unwrap();
    assert!(
        found
            .description
            .unwrap()
            .starts_with("Where the Tally partner stores are"),
    );
    c.probe("store_finder", &config).await.unwrap();
    // An agent that is down: loading goes on (the specialist is unavailable until it is
    // up), and `baton validate`'s probe names it.
    let down = json!({"kind": "a2a", "url": format!("http://127.0.0.1:{}", free_port())});
    assert_eq!(c.discover("store_finder", &down).await, Ok(None));
    let e = c.probe("store_finder", &down).await.unwrap_err();
    assert!(e.contains("cannot be fetched"), "{e}");
    assert!(e.starts_with("A2A agent http://127.0.0.1:"), "{e}");
}

/// A scripted agent on a free port: an A2A 1.0 card, and `answer` for every message.
async fn scripted_agent(answer: axum::routing::MethodRouter) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let card = json!({
        "name": "Scripted", "description": "A scripted agent.", "version": "1",
        "supportedInterfaces": [{"url": format!("{base}/"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": true},
        "defaultInputModes": [], "defaultOutputModes": [], "skills": [],
    });
    let router = Router::new()
        .route(
            "/.well-known/agent-card.json",
            get(move || {
                let card = card.clone();
                async move { axum::Json(card) }
            }),
        )
        .route("/", answer);
    tokio::spawn(async move { axum::serve(listener, router).await });
    base
}

/// A scripted agent answering every message with `body`.
async fn scripted(body: &'static str, content_type: &'static str) -> String {
    scripted_agent(post(move || async move {
        ([(header::CONTENT_TYPE, content_type)], body).into_response()
    }))
    .await
}

/// A scripted agent whose stream sends one working update, then nothing, forever.
async fn silent() -> String {
    scripted_agent(post(|| async {
        let first = futures::stream::once(async {
            Ok::<_, std::io::Error>(
                "data: {\"jsonrpc\":\"2.0\",\"result\":{\"task\":{\"id\":\"t\",\"contextId\":\"c\",\"status\":{\"state\":\"TASK_STATE_WORKING\"}}}}\n\n",
            )
        });
        let body = first.chain(futures::stream::pending());
        (
            [(header::CONTENT_TYPE, "text/event-stream")],
            axum::body::Body::from_stream(body),
        )
    }))
    .await
}

const TASK: &str = r#"{"jsonrpc":"2.0","result":{"task":{"id":"t","contextId":"c","status":{"state":"TASK_STATE_SUBMITTED"}}}}"#;

#[tokio::test]
async fn hostile_agents_end_in_plain_errors() {
    let c = A2aConnector::new();
    let garbage = scripted("data: {not json\n\n", "text/event-stream").await;
    let (_, e) = exchange(&c, request(&garbage, "hi")).await;
    assert_eq!(
        e,
        Some(UpstreamError::Invalid("an event is not JSON".into()))
    );

    let other = Box::leak(
        format!(
            "data: {TASK}\n\ndata: {}\n\n",
            TASK.replace("\"contextId\":\"c\"", "\"contextId\":\"c2\"")
        )
        .into_boxed_str(),
    );
    let switched = scripted(other, "text/event-stream").await;
    let (_, e) = exchange(&c, request(&switched, "hi")).await;
    assert!(
        matches!(&e, Some(UpstreamError::Invalid(why)) if why.contains("another context")),
        "{e:?}"
    );

    let huge_text = "x".repeat(300 * 1024);
    let huge = Box::leak(
        format!(
            "data: {TASK}\n\ndata: {{\"jsonrpc\":\"2.0\",\"result\":{{\"artifactUpdate\":{{\"taskId\":\"t\",\"contextId\":\"c\",\"artifact\":{{\"artifactId\":\"a\",\"parts\":[{{\"text\":\"{huge_text}\"}}]}}}}}}}}\n\n"
        )
        .into_boxed_str(),
    );
    let runaway = scripted(huge, "text/event-stream").await;
    let (_, e) = exchange(&c, request(&runaway, "hi")).await;
    assert!(
        matches!(&e, Some(UpstreamError::Invalid(why)) if why.contains("larger than 262144 bytes")),
        "{e:?}"
    );

    let failed = Box::leak(
        format!(
            "data: {TASK}\n\ndata: {}\n\n",
            TASK.replace("TASK_STATE_SUBMITTED", "TASK_STATE_FAILED")
        )
        .into_boxed_str(),
    );
    let failing = scripted(failed, "text/event-stream").await;
    let (_, e) = exchange(&c, request(&failing, "hi")).await;
    assert_eq!(e, Some(UpstreamError::Ended(UpstreamEnd::Failed)));

    let truncated = Box::leak(format!("data: {TASK}\n\n").into_boxed_str());
    let cut = scripted(truncated, "text/event-stream").await;
    let (_, e) = exchange(&c, request(&cut, "hi")).await;
    assert!(
        matches!(&e, Some(UpstreamError::Unavailable(why)) if why.contains("ended before the task did")),
        "{e:?}"
    );

    let json_error = scripted(
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"boom"}}"#,
        "application/json",
    )
    .await;
    let (_, e) = exchange(&c, request(&json_error, "hi")).await;
    assert!(
        matches!(&e, Some(UpstreamError::Unavailable(why)) if why.contains("-32603: boom")),
        "{e:?}"
    );

    let never = silent().await;
    let mut quick = request(&never, "hi");
    quick.config = Arc::new(json!({"url": never, "timeout_ms": 300}));
    let started = Instant::now();
    let (events, e) = exchange(&c, quick).await;
    assert!(events.contains(&UpstreamEvent::Working));
    assert!(
        matches!(&e, Some(UpstreamError::Unavailable(why)) if why.contains("no event within 300 ms")),
        "{e:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));

    let down = format!("http://127.0.0.1:{}", free_port());
    let (_, e) = exchange(&c, request(&down, "hi")).await;
    assert!(
        matches!(&e, Some(UpstreamError::Unavailable(why)) if why.contains("cannot be fetched")),
        "{e:?}"
    );
}
