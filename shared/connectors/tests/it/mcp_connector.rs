//! The `mcp` connector against a real MCP server (`tests/mcp/server.py`, the PyPI `mcp`
//! package's FastMCP), over stdio and over streamable HTTP.
//!
//! The server runs in the Python environment `./infra/local-model.sh install` builds; these
//! tests fail (they do not skip) when it is missing.

use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use baton_connectors::McpConnector;
use baton_core::Principal;
use baton_core::input::InputGiven;
use baton_core::ports::connector::{
    Connector, ConnectorError, ConnectorRequest, Envelope, EnvelopeStatus, ProgressSink,
};
use serde_json::{Value, json};

/// Where `server.py` lives: the connector's registry root in these tests, so commands
/// name it by a relative path.
fn server_dir() -> PathBuf {
    baton_testkit::crate_dir().join("../../tests/mcp")
}

/// The interpreter with the `mcp` package: `BATON_MODEL_PYTHON`, else the env file that
/// `./infra/local-model.sh install` writes.
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
            "the MCP tests need Python with the `mcp` package: BATON_MODEL_PYTHON is unset and {} does not exist; {HOW}",
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
        "{} (from {}) does not exist; {HOW}",
        python.display(),
        env.display()
    );
    python
}

/// A streamable-HTTP server process, killed when dropped.
struct HttpServer {
    child: Child,
    port: u16,
}

impl HttpServer {
    fn start(port: u16, flags: &[&str]) -> HttpServer {
        let child = Command::new(python())
            .arg(server_dir().join("server.py"))
            .args(["http", &port.to_string()])
            .args(flags)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the MCP test server");
        let mut server = HttpServer { child, port };
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("the MCP test server exited before listening: {status}");
            }
            assert!(
                Instant::now() < deadline,
                "the MCP test server did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    baton_testkit::port_for_a_child()
}

/// A connector and the `server:` settings of one test server.
struct Fixture {
    connector: McpConnector,
    server: Value,
    http: Option<HttpServer>,
    flags: Vec<String>,
}

impl Fixture {
    fn stdio(flags: &[&str]) -> Fixture {
        let mut command = vec![json!(python().to_str().unwrap()), json!("server.py")];
        command.push(json!("stdio"));
        command.extend(flags.iter().map(|f| json!(f)));
        Fixture {
            connector: McpConnector::new(&server_dir()),
            server: json!({"command": command}),
            http: None,
            flags: flags.iter().map(|f| f.to_string()).collect(),
        }
    }

    fn http(flags: &[&str]) -> Fixture {
        let http = HttpServer::start(free_port(), flags);
        Fixture {
            connector: McpConnector::new(&server_dir()),
            server: json!({"url": http.url()}),
            http: Some(http),
            flags: flags.iter().map(|f| f.to_string()).collect(),
        }
    }

    /// What messages name the server by.
    fn label(&self) -> String {
        match &self.http {
            Some(http) => http.url(),
            None => format!("{} server.py stdio", python().display()),
        }
    }

    /// After a crash: an HTTP server is started again on its port (a stdio server is
    /// started again by the connector itself).
    fn revive(&mut self) {
        if let Some(old) = self.http.take() {
            let port = old.port;
            drop(old);
            let flags: Vec<&str> = self.flags.iter().map(String::as_str).collect();
            self.http = Some(HttpServer::start(port, &flags));
        }
    }

    fn config(&self, tool: &str, extra: Value) -> Value {
        let mut config = json!({
            "kind": "mcp",
            "server": self.server,
            "tool": tool,
            "domain_type": "mcp_test",
            "enricher_id": "mcp-test",
            "version": "1.0.0",
        });
        for (k, v) in extra.as_object().unwrap() {
            config[k] = v.clone();
        }
        config
    }

    async fn call(&self, tool: &str, args: Value) -> Result<Envelope, ConnectorError> {
        self.call_with(tool, args, json!({}), None).await
    }

    async fn call_with(
        &self,
        tool: &str,
        args: Value,
        extra: Value,
        progress: Option<Arc<dyn ProgressSink>>,
    ) -> Result<Envelope, ConnectorError> {
        let mut request = request(&format!("{tool}_tool"), self.config(tool, extra), args);
        request.progress = progress;
        self.connector.call(request).await
    }
}

fn request(tool_id: &str, config: Value, args: Value) -> ConnectorRequest {
    ConnectorRequest {
        tool_id: Arc::from(tool_id),
        config: Arc::new(config),
        args,
        principal: Principal::new("user-7").unwrap(),
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

#[derive(Debug, Default)]
struct Recorder(Mutex<Vec<String>>);

impl ProgressSink for Recorder {
    fn progress(&self, status_code: &str) {
        self.0.lock().unwrap().push(status_code.to_owned());
    }
}

/// Runs scenarios one after the other on one server, over stdio and over streamable HTTP
/// (one server each: starting Python is most of a scenario's time).
macro_rules! over_both {
    ($test:ident => $($scenario:ident),+ $(,)?) => {
        mod $test {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn stdio() {
                let mut f = super::Fixture::stdio(&[]);
                $(super::$scenario(&mut f).await;)+
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn http() {
                let mut f = super::Fixture::http(&[]);
                $(super::$scenario(&mut f).await;)+
            }
        }
    };
}

over_both!(
    a_healthy_server =>
    discovery_gives_the_servers_description_and_schema,
    a_missing_tool_is_a_discovery_error_naming_server_and_tool,
    results_become_envelopes_for_the_requests_principal,
    the_principal_travels_as_request_metadata,
    progress_notifications_reach_the_sink,
    a_tool_error_is_an_error_envelope_without_the_servers_text,
    a_question_mid_call_waits_for_the_user_and_the_call_made_again_gets_the_answer,
);
over_both!(
    a_crash =>
    a_crash_mid_call_fails_that_call_and_the_next_call_starts_a_new_session,
);
over_both!(a_hang => a_hung_call_can_be_dropped_and_others_go_on);

/// A server's question mid-call (a form elicitation, D-36): the call ends as `NeedsInput`
/// with the question (the server was told `cancel` and booked nothing); made again with
/// the user's answer, the server gets it and books once.
async fn a_question_mid_call_waits_for_the_user_and_the_call_made_again_gets_the_answer(
    f: &Fixture,
) {
    let Err(ConnectorError::NeedsInput(asked)) = f.call("book", json!({})).await else {
        panic!("the server's question did not reach the caller")
    };
    assert_eq!(asked.message, "Which seat would you like?");
    assert_eq!(asked.schema["properties"]["window"]["default"], true);
    assert_eq!(asked.schema["required"], json!(["seat"]));
    let content = asked.content_from("12A").unwrap();
    let mut again = request("book_tool", f.config("book", json!({})), json!({}));
    again.input = Some(Arc::new(InputGiven {
        message: asked.message.clone(),
        content,
    }));
    let booked = f.connector.call(again.clone()).await.unwrap();
    assert_eq!(
        booked.payload,
        json!({"text": "booked 12A (window: True), booking 1"})
    );
    // An answer to another question is not given: the server's is asked again.
    again.input = Some(Arc::new(InputGiven {
        message: "Which meal?".into(),
        content: Default::default(),
    }));
    let Err(ConnectorError::NeedsInput(_)) = f.connector.call(again).await else {
        panic!("an answer to another question was given")
    };
}

async fn discovery_gives_the_servers_description_and_schema(f: &Fixture) {
    let found = f
        .connector
        .discover("echo_tool", &f.config("echo", json!({})))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.description.as_deref(), Some("Echoes its text back."));
    assert_eq!(found.schema["type"], "object");
    assert_eq!(found.schema["properties"]["text"]["type"], "string");
    assert_eq!(found.schema["required"], json!(["text"]));
    // `garbage` is on the listing's third page: pages are followed.
    let last = f
        .connector
        .discover("garbage", &f.config("garbage", json!({})))
        .await
        .unwrap()
        .unwrap();
    assert!(last.description.unwrap().contains("garbage"));
    // Without `tool:`, the tool id is the server's name for it.
    let mut config = f.config("add", json!({}));
    config.as_object_mut().unwrap().remove("tool");
    let add = f.connector.discover("add", &config).await.unwrap().unwrap();
    assert_eq!(add.schema["properties"]["a"]["type"], "number");
}

async fn results_become_envelopes_for_the_requests_principal(f: &Fixture) {
    let echo = f.call("echo", json!({"text": "hello"})).await.unwrap();
    assert_eq!(echo.status, EnvelopeStatus::Ok);
    assert_eq!(echo.payload, json!({"text": "hello"}));
    assert_eq!(echo.principal, "user-7");
    assert_eq!(
        (
            echo.domain_type.as_str(),
            echo.enricher_id.as_str(),
            echo.version.as_str()
        ),
        ("mcp_test", "mcp-test", "1.0.0")
    );
    // Structured content is the payload.
    let add = f.call("add", json!({"a": 2, "b": 3.5})).await.unwrap();
    assert_eq!(add.status, EnvelopeStatus::Ok);
    assert_eq!(add.payload, json!({"sum": 5.5}));
}

async fn the_principal_travels_as_request_metadata(f: &Fixture) {
    let who = f.call("whoami", json!({})).await.unwrap();
    // One text content that is JSON is parsed.
    assert_eq!(
        who.payload,
        json!({"baton/principal": "user-7", "baton/episode": "ep-1", "baton/agent": "rewards", "baton/idempotency_key": null, "traceparent": null})
    );
    assert_eq!(who.principal, "user-7");
    // With traces exported, the call's trace context travels beside them (D-33).
    let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let mut traced = request("whoami_tool", f.config("whoami", json!({})), json!({}));
    traced.traceparent = Some(Arc::from(traceparent));
    traced.idempotency_key = Some(Arc::from("bk_0123"));
    let who = f.connector.call(traced).await.unwrap();
    assert_eq!(who.payload["traceparent"], traceparent);
    // So does the act's idempotency key (D-36).
    assert_eq!(who.payload["baton/idempotency_key"], "bk_0123");
}

async fn progress_notifications_reach_the_sink(f: &Fixture) {
    let recorder = Arc::new(Recorder::default());
    let done = f
        .call_with(
            "progress",
            json!({"steps": 3}),
            json!({"progress_status": "searching"}),
            Some(recorder.clone()),
        )
        .await
        .unwrap();
    assert_eq!(done.payload, json!({"text": "done"}));
    // Notifications are handled on their own tasks: the last may land just after the answer.
    let deadline = Instant::now() + Duration::from_secs(2);
    while recorder.0.lock().unwrap().len() < 3 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(*recorder.0.lock().unwrap(), vec!["searching"; 3]);
    // Without a status to report, a sink hears nothing.
    let quiet = Arc::new(Recorder::default());
    f.call_with(
        "progress",
        json!({"steps": 2}),
        json!({}),
        Some(quiet.clone()),
    )
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(quiet.0.lock().unwrap().is_empty());
}

async fn a_tool_error_is_an_error_envelope_without_the_servers_text(f: &Fixture) {
    let e = f.call("fail", json!({})).await.unwrap();
    assert_eq!(e.status, EnvelopeStatus::Error);
    assert_eq!(e.principal, "user-7");
    assert!(
        !e.payload.to_string().contains("internal detail"),
        "{}",
        e.payload
    );
}

async fn a_crash_mid_call_fails_that_call_and_the_next_call_starts_a_new_session(f: &mut Fixture) {
    f.call("echo", json!({"text": "before"})).await.unwrap();
    let started = Instant::now();
    let err = f.call("crash", json!({})).await.unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "a crash is noticed at once, not by a timeout"
    );
    match &err {
        ConnectorError::Unavailable(m) => {
            assert!(m.contains(&f.label()) && m.contains("crash"), "{m}")
        }
        other => panic!("a crash is Unavailable, got {other:?}"),
    }
    f.revive();
    let after = f.call("echo", json!({"text": "after"})).await.unwrap();
    assert_eq!(after.payload, json!({"text": "after"}));
    // An HTTP server restarted between calls (it no longer knows the session) serves the
    // next call all the same.
    f.revive();
    let restarted = f.call("echo", json!({"text": "restarted"})).await.unwrap();
    assert_eq!(restarted.payload, json!({"text": "restarted"}));
}

async fn a_hung_call_can_be_dropped_and_others_go_on(f: &Fixture) {
    f.call("echo", json!({"text": "warm"})).await.unwrap();
    // The runtime's timeout drops the call future while the server still works on it.
    let hung = tokio::time::timeout(
        Duration::from_millis(300),
        f.call("slow", json!({"ms": 20_000})),
    )
    .await;
    assert!(hung.is_err(), "the slow call was still running");
    let echo = tokio::time::timeout(
        Duration::from_secs(5),
        f.call("echo", json!({"text": "still here"})),
    )
    .await
    .expect("a later call is not held up by the dropped one")
    .unwrap();
    assert_eq!(echo.payload, json!({"text": "still here"}));
    // Calls on one session run side by side: a quick one overtakes a slow one.
    let (slow, quick) = tokio::join!(
        f.call("slow", json!({"ms": 800})),
        tokio::time::timeout(
            Duration::from_millis(600),
            f.call("echo", json!({"text": "quick"}))
        ),
    );
    assert_eq!(slow.unwrap().payload, json!({"text": "slept"}));
    assert_eq!(quick.unwrap().unwrap().payload, json!({"text": "quick"}));
    // The connector's own timeout.
    let err = f
        .call_with(
            "slow",
            json!({"ms": 20_000}),
            json!({"call_timeout_ms": 200}),
            None,
        )
        .await
        .unwrap_err();
    match err {
        ConnectorError::Unavailable(m) => assert!(m.contains("no answer within 200 ms"), "{m}"),
        other => panic!("a timeout is Unavailable, got {other:?}"),
    }
    f.call("echo", json!({"text": "again"})).await.unwrap();
}

async fn a_missing_tool_is_a_discovery_error_naming_server_and_tool(f: &Fixture) {
    let err = f
        .connector
        .discover("nope", &f.config("no_such_tool", json!({})))
        .await
        .unwrap_err();
    assert!(
        err.contains(&f.label()) && err.contains("no_such_tool") && err.contains("echo"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_input_schema_is_a_discovery_error_naming_server_and_tool() {
    for f in [
        Fixture::stdio(&["--bad-schema"]),
        Fixture::http(&["--bad-schema"]),
    ] {
        let err = f
            .connector
            .discover("broken", &f.config("broken", json!({})))
            .await
            .unwrap_err();
        assert!(
            err.contains(&f.label()) && err.contains("broken") && err.contains("inputSchema"),
            "{err}"
        );
        // The server's other tools are fine.
        let echo = f
            .connector
            .discover("echo", &f.config("echo", json!({})))
            .await;
        assert!(echo.unwrap().is_some());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_servers_get_a_clean_environment_plus_their_env() {
    let mut f = Fixture::stdio(&[]);
    f.server["env"] = json!({"BATON_LITERAL": "x y", "BATON_FROM": {"env": "HOME"}});
    let getenv = |name: &str| f.call("getenv", json!({"name": name}));
    assert_eq!(getenv("BATON_LITERAL").await.unwrap().payload, json!("x y"));
    let home = std::env::var("HOME").unwrap();
    assert_eq!(getenv("BATON_FROM").await.unwrap().payload, json!(home));
    assert_eq!(
        getenv("PATH").await.unwrap().payload,
        json!(std::env::var("PATH").unwrap())
    );
    // Baton's other variables (cargo sets this one for tests) stay out.
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
    assert_eq!(
        getenv("CARGO_MANIFEST_DIR").await.unwrap().payload,
        Value::Null
    );
    // A variable that is not set fails the start, naming it.
    f.server["env"] = json!({"KEY": {"env": "BATON_SURELY_UNSET_VARIABLE"}});
    let err = f.call("echo", json!({"text": "x"})).await.unwrap_err();
    assert!(
        matches!(&err, ConnectorError::Unavailable(m) if m.contains("BATON_SURELY_UNSET_VARIABLE") && m.contains("server.env.KEY")),
        "{err:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_from_the_server_is_an_invalid_envelope_and_the_session_survives() {
    // stdio only: the tool writes a malformed answer to its own request on stdout.
    let f = Fixture::stdio(&[]);
    let err = f.call("garbage", json!({})).await.unwrap_err();
    assert!(
        matches!(&err, ConnectorError::InvalidEnvelope(m) if m.contains("garbage")),
        "{err:?}"
    );
    let echo = f.call("echo", json!({"text": "ok"})).await.unwrap();
    assert_eq!(echo.payload, json!({"text": "ok"}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_servers_are_discovery_errors_naming_them() {
    let connector = McpConnector::new(&server_dir());
    let config = |server: Value| {
        json!({
            "kind": "mcp", "server": server, "tool": "echo",
            "domain_type": "t", "enricher_id": "t", "version": "1.0.0",
            "connect_timeout_ms": 3000,
        })
    };
    // A program that does not exist.
    let err = connector
        .discover(
            "echo",
            &config(json!({"command": ["/nonexistent/mcp-server", "--stdio"]})),
        )
        .await
        .unwrap_err();
    assert!(
        err.contains("/nonexistent/mcp-server --stdio") && err.contains("echo"),
        "{err}"
    );
    // A program that exits at once: its last words on stderr are quoted.
    let py = python();
    let py = py.to_str().unwrap();
    let exits = "import sys; sys.exit('no MCP here')";
    let err = connector
        .discover("echo", &config(json!({"command": [py, "-c", exits]})))
        .await
        .unwrap_err();
    assert!(
        err.contains(exits) && err.contains("stderr ended with: no MCP here"),
        "{err}"
    );
    // A closed port.
    let url = format!("http://127.0.0.1:{}/mcp", free_port());
    let err = connector
        .discover("echo", &config(json!({"url": url})))
        .await
        .unwrap_err();
    assert!(err.contains(&url) && err.contains("echo"), "{err}");
    // The call path says the same as an Unavailable error.
    let err = connector
        .call(request(
            "echo",
            config(json!({"url": url})),
            json!({"text": "x"}),
        ))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ConnectorError::Unavailable(m) if m.contains(&url)),
        "{err:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_that_never_answer_are_bounded_by_the_connect_timeout() {
    let connector = McpConnector::new(&server_dir());
    let config = |server: Value| {
        json!({
            "kind": "mcp", "server": server, "tool": "echo",
            "domain_type": "t", "enricher_id": "t", "version": "1.0.0",
            "connect_timeout_ms": 500,
        })
    };
    // A process that never speaks MCP.
    let py = python();
    let sleeper = json!({"command": [py.to_str().unwrap(), "-c", "import time; time.sleep(60)"]});
    // An HTTP port that accepts connections and never answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    for (server, name) in [
        (sleeper, "time.sleep(60)".to_owned()),
        (json!({"url": url}), url.clone()),
    ] {
        let started = Instant::now();
        let err = connector
            .discover("echo", &config(server))
            .await
            .unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(3), "{err}");
        assert!(
            err.contains(&name) && err.contains("no answer within 500 ms"),
            "{err}"
        );
    }
    silent.abort();
}

#[test]
fn check_config_names_what_is_wrong() {
    let connector = McpConnector::new(Path::new("."));
    let base = json!({
        "kind": "mcp", "server": {"command": ["python3", "server.py"]},
        "domain_type": "t", "enricher_id": "t", "version": "1.0.0",
    });
    assert_eq!(connector.check_config("echo", &base), Ok(()));
    let cases = [
        (
            json!({"server": {"command": ["x"], "url": "http://h/mcp"}}),
            "both",
        ),
        (json!({"server": {"command": []}}), "server.command"),
        (json!({"server": {"url": "ftp://h/mcp"}}), "server.url"),
        (
            json!({"server": {"url": "http://h/mcp", "cwd": "/"}}),
            "`cwd`",
        ),
        (json!({"version": "latest"}), "latest"),
        (json!({"tools": "echo"}), "allowed: kind, server, tool"),
        (json!({"call_timeout_ms": 0}), "call_timeout_ms"),
        (
            json!({"server": {"command": ["x"], "env": {"K": {"env": "BATON_SURELY_UNSET_VARIABLE"}}}}),
            "server.env.K: the environment variable BATON_SURELY_UNSET_VARIABLE is not set",
        ),
    ];
    for (change, expected) in cases {
        let mut config = base.clone();
        for (k, v) in change.as_object().unwrap() {
            config[k] = v.clone();
        }
        let err = connector.check_config("echo", &config).unwrap_err();
        assert!(err.contains(expected), "{change}: {err}");
    }
    let mut config = base.clone();
    config.as_object_mut().unwrap().remove("enricher_id");
    assert!(
        connector
            .check_config("echo", &config)
            .unwrap_err()
            .contains("enricher_id")
    );
}

#[test]
fn the_connector_is_shipped_as_kind_mcp() {
    let connectors = baton_connectors::default_connectors(Path::new("."));
    assert!(connectors.contains_key(McpConnector::KIND));
    assert_eq!(McpConnector::KIND, "mcp");
}
