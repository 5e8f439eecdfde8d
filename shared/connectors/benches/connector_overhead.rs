//! What a connector adds to one tool call, against the bare client doing the same call.
//!
//! Three pairs, each a floor (the bare client) and the same call through the connector:
//!
//! - `http`: a local axum server (in process, on its own thread and current-thread
//!   runtime, so it never shares the measured thread) answers `GET /points/{member}` with
//!   a small envelope (211 bytes). `bare_reqwest`: one keep-alive `reqwest::Client`
//!   GETs the URL with the `x-baton-principal` header, reads the body and parses it into a
//!   `serde_json::Value`. `connector`: `HttpConnector::call` on a `kind: http` tool whose
//!   URL template has one placeholder (`/points/{member}`), envelope mode.
//! - `mcp_stdio`: the test MCP server (`tests/mcp/server.py stdio`, FastMCP) as a child
//!   process. `bare_rmcp`: a minimal rmcp client (unit handler, `TokioChildProcess`, as
//!   the connector's session builds it) calling `echo` with `{"text": "hi"}`;
//!   `connector`: `McpConnector::call` on a `kind: mcp` tool naming the same server and
//!   tool (its own server process; its session started by a warm-up call first).
//! - `mcp_http`: the same over streamable HTTP (`server.py http PORT`, one server process
//!   for both clients, each with its own MCP session).
//! - `a2a`: the example registry's store agent (`shared/registry/a2a/store_agent.py`, the
//!   official A2A SDK's server) answering "Which FreshMart in Springfield is open late?"
//!   (one task: submitted, working, two artifact chunks, completed). `bare_reqwest`: one
//!   keep-alive `reqwest::Client` POSTs `SendStreamingMessage`, reads the event stream to
//!   its end and parses each event's JSON into a `serde_json::Value`; `connector`:
//!   `A2aConnector::converse` (its card read once before), every event collected.
//!
//! The measured side runs on one current-thread tokio runtime (`block_on` per call). The
//! `ConnectorRequest` is built before the timer starts (building it is the runtime's
//! cost, not the connector's); results are dropped after it stops, on both sides.
//!
//! A `parts` group times some pieces of the difference on their own (CPU only): the
//! settings parse each call does, and the body parsed as a `Value` or as an `Envelope`.
//!
//! After criterion, a summary prints each pair's medians and their difference, and a
//! paired run alternates bare and connector calls (A/B, B/A, ...) for a few seconds and
//! reports the median of the per-pair differences, which machine-speed drift between
//! criterion's two runs does not move, by the wall clock and by the measured thread's CPU
//! clock (the client side's own work, without the server's or any waiting: the figure
//! that shows the connector's overhead when the server's jitter hides it in wall time).
//! `--test` (criterion's smoke mode, each function once) skips both.
//!
//! Run: `cargo bench -p baton-connectors --bench connector_overhead` (about a minute and a
//! half); smoke: `... -- --test`. The MCP server needs the Python environment of
//! `./infra/local-model.sh install` (or `BATON_MODEL_PYTHON`), the store agent that of
//! `./infra/a2a.sh` (or `BATON_A2A_PYTHON`); without them the bench fails, saying so, as the
//! connectors' tests do.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::hint::black_box;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use axum::Json;
use axum::Router;
use axum::extract::Path as UrlPath;
use axum::http::HeaderMap;
use axum::routing::get;
use baton_connectors::{A2aConnector, HttpConnector, McpConnector};
use baton_core::Principal;
use baton_core::ports::connector::{Connector, ConnectorRequest, Envelope, EnvelopeStatus};
use baton_core::ports::upstream::{UpstreamEvent, UpstreamRequest};
use criterion::{BatchSize, Criterion};
use futures::StreamExt;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::{Value, json};
use tokio::runtime::Runtime;

const PRINCIPAL: &str = "member-7";
/// How often the bare A2A client had to send a message again (see `Pair::bare`).
static A2A_RESENT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
const MEMBER: &str = "m-1042";
const PRINCIPAL_HEADER: &str = "x-baton-principal";

// ---- the pairs ------------------------------------------------------------------------

/// One floor and the same call through a connector, each run to completion on `rt`.
struct Pair {
    /// Criterion group name (and the summary's).
    name: &'static str,
    /// The bare client's function name.
    bare_name: &'static str,
    rt: Runtime,
    bare: Bare,
    connector: Arc<dyn Connector>,
    request: Input,
}

enum Bare {
    /// The client and the full URL.
    Http(reqwest::Client, String),
    /// A running rmcp client session and the `echo` arguments.
    Mcp(RunningService<RoleClient, ()>, JsonObject),
    /// The client, the agent's JSON-RPC URL and the request body.
    A2a(reqwest::Client, String, Value),
}

/// What the bare clients return: kept until the timer stops, then dropped.
enum BareOut {
    Http(Value),
    Mcp(CallToolResult),
    A2a(Vec<Value>),
}

/// What the connector is given: a tool call, or a remote agent's message.
#[derive(Clone)]
enum Input {
    Call(ConnectorRequest),
    Converse(UpstreamRequest),
}

/// What the connector returns.
enum Output {
    Envelope(Envelope),
    Events(Vec<UpstreamEvent>),
}

impl Input {
    /// The tool call (the pairs of tools called as tools).
    fn call(&self) -> &ConnectorRequest {
        match self {
            Input::Call(request) => request,
            Input::Converse(_) => panic!("not a tool call"),
        }
    }
}

impl Pair {
    fn bare(&self) -> BareOut {
        self.rt.block_on(async {
            match &self.bare {
                Bare::Http(client, url) => {
                    let answer = client
                        .get(url)
                        .header(PRINCIPAL_HEADER, PRINCIPAL)
                        .send()
                        .await
                        .expect("GET the points URL");
                    let body = answer.bytes().await.expect("read the body");
                    BareOut::Http(serde_json::from_slice(&body).expect("a JSON body"))
                }
                Bare::Mcp(client, args) => {
                    let params = CallToolRequestParams::new("echo").with_arguments(args.clone());
                    BareOut::Mcp(client.peer().call_tool(params).await.expect("call echo"))
                }
                Bare::A2a(client, url, body) => {
                    let send = || {
                        client
                            .post(url)
                            .header("A2A-Version", "1.0")
                            .header(reqwest::header::ACCEPT, "text/event-stream")
                            .header(PRINCIPAL_HEADER, PRINCIPAL)
                            .json(body)
                            .send()
                    };
                    // The agent's server (uvicorn) now and then closes a kept-alive
                    // connection as the next request goes out: sent again, and counted.
                    let answer = match send().await {
                        Ok(answer) => answer,
                        Err(_) => {
                            A2A_RESENT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            send().await.expect("POST SendStreamingMessage")
                        }
                    };
                    let mut stream = answer.bytes_stream();
                    let mut text = Vec::new();
                    while let Some(chunk) = stream.next().await {
                        text.extend_from_slice(&chunk.expect("read the stream"));
                    }
                    let events = String::from_utf8(text)
                        .expect("UTF-8 events")
                        .lines()
                        .filter_map(|l| l.strip_prefix("data: "))
                        .map(|data| serde_json::from_str(data).expect("a JSON event"))
                        .collect();
                    BareOut::A2a(events)
                }
            }
        })
    }

    fn through(&self, input: Input) -> Output {
        let name = self.name;
        let fail =
            move |e: &dyn std::fmt::Debug| -> ! { panic!("{name}: the connector failed: {e:?}") };
        self.rt.block_on(async {
            match input {
                Input::Call(request) => Output::Envelope(
                    self.connector
                        .call(request)
                        .await
                        .unwrap_or_else(|e| fail(&e)),
                ),
                Input::Converse(request) => {
                    let chat = self.connector.upstream_chat().expect("a remote agent");
                    let mut stream = chat.converse(request).await.unwrap_or_else(|e| fail(&e));
                    let mut events = Vec::new();
                    while let Some(event) = stream.next().await {
                        events.push(event.unwrap_or_else(|e| fail(&e)));
                    }
                    Output::Events(events)
                }
            }
        })
    }

    /// One call each, checked: both sides do the work the figures claim.
    fn check(&self) {
        let through = self.through(self.request.clone());
        match (self.bare(), through) {
            (BareOut::Http(value), Output::Envelope(envelope)) => {
                assert_eq!(envelope.status, EnvelopeStatus::Ok, "{}", self.name);
                assert_eq!(envelope.principal, PRINCIPAL, "{}", self.name);
                assert_eq!(value["principal"], PRINCIPAL);
                assert_eq!(value["payload"]["member"], MEMBER);
                assert_eq!(envelope.payload["member"], MEMBER);
            }
            (BareOut::Mcp(result), Output::Envelope(envelope)) => {
                assert_eq!(envelope.status, EnvelopeStatus::Ok, "{}", self.name);
                assert_eq!(envelope.principal, PRINCIPAL, "{}", self.name);
                let text = result.content.first().and_then(|c| c.as_text());
                assert_eq!(text.map(|t| t.text.as_str()), Some("hi"));
                assert_eq!(envelope.payload, json!({"text": "hi"}));
            }
            (BareOut::A2a(events), Output::Events(through)) => {
                let last = events.last().expect("events");
                assert_eq!(
                    last["result"]["statusUpdate"]["status"]["state"],
                    "TASK_STATE_COMPLETED"
                );
                let text: String = through
                    .iter()
                    .filter_map(|e| match e {
                        UpstreamEvent::Text(t) => Some(t.as_str()),
                        _ => None,
                    })
                    .collect();
                assert!(
                    text.contains("FreshMart Downtown, 12 Main Street"),
                    "{text}"
                );
                assert!(!text.contains("Elm Park"), "{text}");
            }
            _ => panic!("{}: the sides answered differently", self.name),
        }
    }

    fn bench(&self, c: &mut Criterion) {
        let mut group = c.benchmark_group(self.name);
        group.bench_function(self.bare_name, |b| {
            b.iter_batched(|| (), |()| black_box(self.bare()), BatchSize::SmallInput);
        });
        group.bench_function("connector", |b| {
            b.iter_batched(
                || self.request.clone(),
                |request| black_box(self.through(request)),
                BatchSize::SmallInput,
            );
        });
        group.finish();
    }

    /// Bare and connector calls alternated for `budget` (the order flips every pair),
    /// each timed by the wall clock and by the measured thread's CPU clock.
    fn paired(&self, budget: Duration) -> Paired {
        let mut bare = Sides::default();
        let mut through = Sides::default();
        let started = Instant::now();
        while started.elapsed() < budget || bare.wall.len() < 20 {
            let request = self.request.clone();
            if bare.wall.len() % 2 == 0 {
                bare.time(|| self.bare());
                through.time(|| self.through(request));
            } else {
                through.time(|| self.through(request));
                bare.time(|| self.bare());
            }
        }
        let diff = |a: &[f64], b: &[f64]| -> f64 {
            let mut d: Vec<f64> = a.iter().zip(b).map(|(a, b)| a - b).collect();
            median(&mut d)
        };
        Paired {
            pairs: bare.wall.len(),
            wall: [
                median(&mut bare.wall.clone()),
                median(&mut through.wall.clone()),
                diff(&through.wall, &bare.wall),
            ],
            cpu: [
                median(&mut bare.cpu.clone()),
                median(&mut through.cpu.clone()),
                diff(&through.cpu, &bare.cpu),
            ],
        }
    }
}

/// One side's calls in a paired run, µs each.
#[derive(Default)]
struct Sides {
    wall: Vec<f64>,
    cpu: Vec<f64>,
}

impl Sides {
    /// Times `call` (its result is dropped after the clocks are read).
    fn time<T>(&mut self, call: impl FnOnce() -> T) {
        let cpu = thread_cpu();
        let wall = Instant::now();
        let out = call();
        let wall = wall.elapsed();
        let cpu = thread_cpu() - cpu;
        drop(out);
        self.wall.push(wall.as_secs_f64() * 1e6);
        self.cpu.push(cpu.as_secs_f64() * 1e6);
    }
}

/// A paired run's medians, µs: `[bare, connector, per-pair difference]`.
struct Paired {
    pairs: usize,
    wall: [f64; 3],
    cpu: [f64; 3],
}

/// CPU time of the calling thread: with the current-thread runtime, every client-side
/// task of a call (hyper's connection, rmcp's service loop and transport) runs on it, and
/// neither the servers (another thread, another process) nor time spent waiting count.
fn thread_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

fn measured_runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime")
}

fn request(tool_id: &str, config: Value, args: Value) -> Input {
    Input::Call(ConnectorRequest {
        tool_id: Arc::from(tool_id),
        config: Arc::new(config),
        args,
        principal: Principal::new(PRINCIPAL).unwrap(),
        episode_id: Arc::from("ep-bench"),
        agent_id: Arc::from("bench"),
        now_ms: 0,
        progress: None,
        traceparent: None,
        idempotency_key: None,
        links: None,
        input: None,
    })
}

// ---- http -----------------------------------------------------------------------------

/// The points service's answer: a small envelope for the caller's principal.
async fn points(UrlPath(member): UrlPath<String>, headers: HeaderMap) -> Json<Value> {
    let principal = headers
        .get(PRINCIPAL_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    Json(json!({
        "status": "ok",
        "payload": {"member": member, "points": 1250, "tier": "silver"},
        "partial": [],
        "principal": principal,
        "version": "1.0.0",
        "domain_type": "points",
        "enricher_id": "bench-points",
        "cache_meta": {"cached": false},
    }))
}

/// The points service on its own thread and runtime; lives as long as the process.
fn start_points_server() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::Builder::new()
        .name("points-server".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("the server's runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let app = Router::new().route("/points/{member}", get(points));
                axum::serve(listener, app).await.expect("serve");
            });
        })
        .expect("start the server thread");
    addr
}

fn http_pair() -> Pair {
    let addr = start_points_server();
    let config = json!({
        "kind": "http",
        "url": format!("http://{addr}/points/{{member}}"),
    });
    let connector = HttpConnector::new();
    connector
        .check_config("member_points", &config)
        .unwrap_or_else(|e| panic!("{e}"));
    Pair {
        name: "http",
        bare_name: "bare_reqwest",
        rt: measured_runtime(),
        bare: Bare::Http(
            reqwest::Client::new(),
            format!("http://{addr}/points/{MEMBER}"),
        ),
        connector: Arc::new(connector),
        request: request("member_points", config, json!({"member": MEMBER})),
    }
}

// ---- mcp ------------------------------------------------------------------------------

/// Where `server.py` lives (the MCP connector's registry root here).
fn server_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp")
}

/// The interpreter with the `mcp` package, found as the connector's tests find it.
fn python() -> PathBuf {
    const HOW: &str = "run `./infra/local-model.sh install` (it builds the Python environment with the `mcp` package) or set BATON_MODEL_PYTHON";
    if let Some(p) = std::env::var_os("BATON_MODEL_PYTHON").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    let dir = match std::env::var_os("BATON_MODEL_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
            .expect("HOME is set")
            .join("baton/model"),
    };
    let env = dir.join("env");
    let text = std::fs::read_to_string(&env).unwrap_or_else(|_| {
        panic!(
            "the MCP benchmarks need Python with the `mcp` package: BATON_MODEL_PYTHON is unset and {} does not exist; {HOW}",
            env.display()
        )
    });
    let python = text
        .lines()
        .find_map(|l| l.strip_prefix("BATON_MODEL_PYTHON="))
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("{} names no BATON_MODEL_PYTHON; {HOW}", env.display()));
    assert!(
        python.exists(),
        "{} does not exist; {HOW}",
        python.display()
    );
    python
}

fn mcp_config(server: Value) -> Value {
    json!({
        "kind": "mcp",
        "server": server,
        "tool": "echo",
        "domain_type": "echo",
        "enricher_id": "mcp-bench",
        "version": "1.0.0",
    })
}

fn echo_args() -> JsonObject {
    let mut args = JsonObject::new();
    args.insert("text".to_owned(), json!("hi"));
    args
}

/// A pair on `server` (`{command}` or `{url}`), the bare client connected by `bare`.
fn mcp_pair(
    name: &'static str,
    server: Value,
    bare: impl Future<Output = RunningService<RoleClient, ()>>,
) -> Pair {
    let rt = measured_runtime();
    let bare = rt.block_on(bare);
    let config = mcp_config(server);
    let connector = McpConnector::new(&server_dir());
    connector
        .check_config("echo_tool", &config)
        .unwrap_or_else(|e| panic!("{e}"));
    let pair = Pair {
        name,
        bare_name: "bare_rmcp",
        rt,
        bare: Bare::Mcp(bare, echo_args()),
        connector: Arc::new(connector),
        request: request("echo_tool", config, Value::Object(echo_args())),
    };
    // The warm-up call: the connector's session exists before anything is measured.
    pair.through(pair.request.clone());
    pair
}

fn mcp_stdio_pair() -> Pair {
    let python = python();
    let server = json!({"command": [python.to_str().unwrap(), "server.py", "stdio"]});
    let bare = async move {
        let mut command = tokio::process::Command::new(&python);
        command
            .args(["server.py", "stdio"])
            .current_dir(server_dir());
        let (transport, _stderr) = TokioChildProcess::builder(command)
            .stderr(Stdio::null())
            .spawn()
            .expect("start the MCP test server");
        ().serve(transport)
            .await
            .expect("an MCP session over stdio")
    };
    mcp_pair("mcp_stdio", server, bare)
}

/// A streamable-HTTP MCP server process, killed when dropped.
struct HttpServer(Child);

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn mcp_http_pair() -> (Pair, HttpServer) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let mut server = HttpServer(
        Command::new(python())
            .arg(server_dir().join("server.py"))
            .args(["http", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the MCP test server"),
    );
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        if let Ok(Some(status)) = server.0.try_wait() {
            panic!("the MCP test server exited before listening: {status}");
        }
        assert!(
            Instant::now() < deadline,
            "the MCP test server did not listen"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let url = format!("http://127.0.0.1:{port}/mcp");
    let bare_url = url.clone();
    let bare = async move {
        let config = StreamableHttpClientTransportConfig::with_uri(bare_url);
        let transport = StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
        ().serve(transport)
            .await
            .expect("an MCP session over streamable HTTP")
    };
    let pair = mcp_pair("mcp_http", json!({"url": url}), bare);
    (pair, server)
}

// ---- a2a ------------------------------------------------------------------------------

fn a2a_pair() -> (Pair, HttpServer) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let agent = HttpServer(
        Command::new(baton_testkit::a2a_python())
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../registry/a2a/store_agent.py"))
            .arg(port.to_string())
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the store agent"),
    );
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        assert!(Instant::now() < deadline, "the store agent did not listen");
        std::thread::sleep(Duration::from_millis(50));
    }
    let url = format!("http://127.0.0.1:{port}");
    let message = "Which FreshMart in Springfield is open late?";
    let body = json!({
        "jsonrpc": "2.0",
        "id": "bench",
        "method": "SendStreamingMessage",
        "params": {"message": {
            "messageId": "bench", "role": "ROLE_USER", "parts": [{"text": message}],
            "metadata": {"baton/principal": PRINCIPAL},
        }},
    });
    let request = UpstreamRequest {
        tool_id: Arc::from("store_finder"),
        config: Arc::new(json!({"kind": "a2a", "url": url})),
        principal: Principal::new(PRINCIPAL).unwrap(),
        episode_id: Arc::from("ep-bench"),
        agent_id: Arc::from("stores"),
        message: message.to_owned(),
        details: serde_json::Map::new(),
        conversation_id: None,
        pending: None,
        replay: Vec::new(),
        locale: None,
        traceparent: None,
    };
    let pair = Pair {
        name: "a2a",
        bare_name: "bare_reqwest",
        rt: measured_runtime(),
        bare: Bare::A2a(reqwest::Client::new(), format!("{url}/"), body),
        connector: Arc::new(A2aConnector::new()),
        request: Input::Converse(request),
    };
    // The warm-up call: the agent's card is read before anything is measured.
    pair.through(pair.request.clone());
    (pair, agent)
}

// ---- parts ----------------------------------------------------------------------------

/// What some of the difference is made of, CPU only: the settings parse each `call` does
/// (`check_config` runs the same parse; these configs have no secrets or CA file to
/// check), and the body parsed as a `Value` (the floor) or as a typed `Envelope` (the
/// connector).
fn bench_parts(c: &mut Criterion, http: &Pair, stdio: &Pair, mcp_http: &Pair) {
    let BareOut::Http(value) = http.bare() else {
        unreachable!("the http pair's floor answers JSON")
    };
    let body = serde_json::to_vec(&value).unwrap();
    let mut group = c.benchmark_group("parts");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for (name, pair) in [
        ("http_config_parse", http),
        ("mcp_stdio_config_parse", stdio),
        ("mcp_http_config_parse", mcp_http),
    ] {
        let request = pair.request.call();
        group.bench_function(name, |b| {
            b.iter(|| {
                pair.connector
                    .check_config(&request.tool_id, black_box(&request.config))
            });
        });
    }
    group.bench_function("body_to_value", |b| {
        b.iter(|| serde_json::from_slice::<Value>(black_box(&body)).unwrap());
    });
    group.bench_function("body_to_envelope", |b| {
        b.iter(|| serde_json::from_slice::<Envelope>(black_box(&body)).unwrap());
    });
    group.finish();
}

// ---- summary --------------------------------------------------------------------------

/// Criterion's median (ns) of `group/function` if this run wrote it.
fn criterion_median(group: &str, function: &str, since: SystemTime) -> Option<f64> {
    let home = std::env::var_os("CRITERION_HOME")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("CARGO_TARGET_DIR").map(|d| PathBuf::from(d).join("criterion"))
        })
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/criterion"));
    let file = home.join(group).join(function).join("new/estimates.json");
    let fresh = std::fs::metadata(&file)
        .and_then(|m| m.modified())
        .is_ok_and(|m| m >= since);
    if !fresh {
        return None;
    }
    let estimates: Value = serde_json::from_slice(&std::fs::read(&file).ok()?).ok()?;
    estimates["median"]["point_estimate"].as_f64()
}

fn main() {
    // The bare reqwest clients below need the process's crypto provider.
    baton_connectors::install_tls_provider();
    let test_mode = std::env::args().any(|a| a == "--test");
    let mut criterion = Criterion::default()
        .sample_size(50)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();
    let started = SystemTime::now();

    let http = http_pair();
    let stdio = mcp_stdio_pair();
    let (mcp_http, _server) = mcp_http_pair();
    let (a2a, _agent) = a2a_pair();
    let pairs = [http, stdio, mcp_http, a2a];
    for pair in &pairs {
        pair.check();
    }
    for pair in &pairs {
        pair.bench(&mut criterion);
    }
    bench_parts(&mut criterion, &pairs[0], &pairs[1], &pairs[2]);
    criterion.final_summary();
    if test_mode {
        return;
    }

    println!("\nconnector overhead per call (criterion medians, µs):");
    println!(
        "{:<10} {:>12} {:>12} {:>12}",
        "pair", "bare", "connector", "difference"
    );
    for pair in &pairs {
        let bare = criterion_median(pair.name, pair.bare_name, started);
        let through = criterion_median(pair.name, "connector", started);
        match (bare, through) {
            (Some(b), Some(t)) => println!(
                "{:<10} {:>12.1} {:>12.1} {:>12.1}",
                pair.name,
                b / 1e3,
                t / 1e3,
                (t - b) / 1e3
            ),
            _ => println!("{:<10} (not measured in this run)", pair.name),
        }
    }
    for function in [
        "http_config_parse",
        "mcp_stdio_config_parse",
        "mcp_http_config_parse",
        "body_to_value",
        "body_to_envelope",
    ] {
        if let Some(ns) = criterion_median("parts", function, started) {
            println!("parts/{function:<28} {:>8.2}", ns / 1e3);
        }
    }

    println!(
        "\nthe bare A2A client sent a message again {} time(s) (a connection closed by the agent)",
        A2A_RESENT.load(std::sync::atomic::Ordering::Relaxed)
    );
    println!(
        "\npaired run (bare and connector alternated; medians, µs; cpu = the measured thread's CPU time):"
    );
    println!(
        "{:<10} {:>6} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "pair", "pairs", "wall bare", "wall conn", "wall diff", "cpu bare", "cpu conn", "cpu diff"
    );
    for pair in &pairs {
        let budget = Duration::from_secs(if pair.name == "http" { 2 } else { 3 });
        let Paired { pairs, wall, cpu } = pair.paired(budget);
        println!(
            "{:<10} {pairs:>6} {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:>10.1}",
            pair.name, wall[0], wall[1], wall[2], cpu[0], cpu[1], cpu[2]
        );
    }
}
