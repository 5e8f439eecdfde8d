//! Trace export (D-33) end to end: `baton chat` with the OTEL_* variables pointing at a real
//! OTLP receiver (Arize Phoenix, installed by `./infra/phoenix.sh`), and the spans read
//! back from the receiver's own API: one tree per turn, shaped as OpenTelemetry's GenAI
//! conventions say.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use baton_tests::otlp_receiver::{OtlpReceiver, Traces};

use crate::support::*;

/// The `phoenix` command: `BATON_PHOENIX`, else where `./infra/phoenix.sh` installs it.
fn phoenix_command() -> PathBuf {
    if let Some(path) = std::env::var_os("BATON_PHOENIX") {
        return PathBuf::from(path);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap();
    let path = cache.join("baton/phoenix/venv/bin/phoenix");
    assert!(
        path.exists(),
        "Arize Phoenix is not installed ({} is missing): run ./infra/phoenix.sh, or set BATON_PHOENIX",
        path.display()
    );
    path
}

/// A Phoenix server on free ports, stopped when dropped.
struct Phoenix {
    child: Child,
    base: String,
    _dir: tempfile::TempDir,
}

impl Phoenix {
    fn start() -> Phoenix {
        let dir = tempfile::tempdir().unwrap();
        let (http, grpc) = (free_port(), free_port());
        let child = Command::new(phoenix_command())
            .arg("serve")
            .env("PHOENIX_WORKING_DIR", dir.path())
            .env("PHOENIX_HOST", "127.0.0.1")
            .env("PHOENIX_PORT", http.to_string())
            .env("PHOENIX_GRPC_PORT", grpc.to_string())
            .env("PHOENIX_TELEMETRY_ENABLED", "false")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("phoenix.log")).unwrap())
            .spawn()
            .unwrap();
        let phoenix = Phoenix {
            child,
            base: format!("http://127.0.0.1:{http}"),
            _dir: dir,
        };
        let started = Instant::now();
        while get(&format!("{}/healthz", phoenix.base)).is_none() {
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "Phoenix did not answer /healthz within 120 s"
            );
            std::thread::sleep(Duration::from_millis(250));
        }
        phoenix
    }

    /// Every span the receiver holds.
    fn spans(&self) -> Vec<Value> {
        get(&format!(
            "{}/v1/projects/default/spans?limit=1000",
            self.base
        ))
        .and_then(|body| serde_json::from_str::<Value>(&body).ok())
        .and_then(|v| v["data"].as_array().cloned())
        .unwrap_or_default()
    }
}

impl Drop for Phoenix {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A GET over plain HTTP/1.1; `None` unless it answered 200.
fn get(url: &str) -> Option<String> {
    use std::io::{Read as _, Write as _};
    let rest = url.strip_prefix("http://")?;
    let (host, path) = rest.split_once('/').map(|(h, p)| (h, format!("/{p}")))?;
    let mut stream = std::net::TcpStream::connect(host).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    if !head.starts_with("HTTP/1.1 200") {
        return None;
    }
    // The API answers in chunks.
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        return Some(dechunk(body));
    }
    Some(body.to_owned())
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// An attribute, whether the receiver nests dotted names or keeps them flat.
fn attr<'a>(span: &'a Value, name: &str) -> Option<&'a Value> {
    let attributes = &span["attributes"];
    if let Some(v) = attributes.get(name) {
        return Some(v);
    }
    name.split('.')
        .try_fold(attributes, |v, part| v.get(part))
        .filter(|v| !v.is_null())
}

fn attr_str<'a>(span: &'a Value, name: &str) -> Option<&'a str> {
    attr(span, name).and_then(Value::as_str)
}

/// An integer attribute: exported as an int, as the GenAI conventions type counts (text
/// that holds a number does not count).
fn attr_u64(span: &Value, name: &str) -> Option<u64> {
    attr(span, name).and_then(Value::as_u64)
}

fn id(span: &Value) -> &str {
    span["context"]["span_id"].as_str().unwrap_or_default()
}

fn parent(span: &Value) -> Option<&str> {
    span["parent_id"].as_str()
}

/// Polls the receiver until `done` holds for the spans it has (60 s at most).
fn wait_for(phoenix: &Phoenix, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let started = Instant::now();
    loop {
        let spans = phoenix.spans();
        if done(&spans) {
            return spans;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the spans did not arrive: {spans:#?}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
fn a_turn_arrives_in_a_real_otlp_receiver_as_one_tree() {
    let phoenix = Phoenix::start();
    let sandbox = Sandbox::new();
    let endpoint = phoenix.base.clone();
    let run: Run = sandbox
        .baton()
        .args([
            "--principal",
            "alice@example.com",
            "chat",
            "--registry",
            registry(),
            "--model",
            "offline",
            "my receipt didn't scan and find me coffee deals",
        ])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .env("OTEL_SERVICE_NAME", "baton-test")
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{run:?}");
    let episode = run
        .stdout
        .split_whitespace()
        .find(|w| w.starts_with("ep_"))
        .unwrap()
        .to_owned();

    // `baton` flushed before it exited; the receiver may still be writing.
    let is_root = |s: &Value| {
        s["name"] == "invoke_agent" && attr_str(s, "gen_ai.agent.name") == Some("orchestrator")
    };
    let spans = wait_for(&phoenix, |spans| {
        spans.iter().any(is_root)
            && spans.iter().filter(|s| s["name"] == "execute_tool").count() >= 2
    });
    let root = spans.iter().find(|s| is_root(s)).cloned().unwrap();

    // The turn: a root span for the orchestrator, the episode as the conversation, the
    // consulted record and the principal only as a pseudonym.
    assert_eq!(parent(&root), None, "{root:#}");
    assert_eq!(
        attr_str(&root, "gen_ai.operation.name"),
        Some("invoke_agent")
    );
    assert_eq!(
        attr_str(&root, "gen_ai.conversation.id"),
        Some(episode.as_str())
    );
    assert!(attr_u64(&root, "baton.intent_count").is_some(), "{root:#}");
    let mut consulted: Vec<&str> = attr_str(&root, "baton.consulted")
        .unwrap_or_default()
        .split(',')
        .collect();
    consulted.sort_unstable();
    assert_eq!(consulted, ["shop", "support"], "{root:#}");
    assert_eq!(attr_str(&root, "baton.outcome"), Some("answered"));
    let pseudonym = attr_str(&root, "baton.principal").unwrap_or_default();
    assert_eq!(pseudonym.len(), 16, "{root:#}");
    let trace = root["context"]["trace_id"].as_str().unwrap();
    let text = serde_json::to_string(&spans).unwrap();
    assert!(
        !text.contains("alice@example.com"),
        "the raw principal was exported"
    );
    // Content is not exported: neither the message nor the specialists' queries.
    assert!(
        !text.contains("coffee deals"),
        "the user's words were exported"
    );

    let of_turn: Vec<&Value> = spans
        .iter()
        .filter(|s| s["context"]["trace_id"] == trace)
        .collect();
    let children = |parent_id: &str| -> Vec<&Value> {
        of_turn
            .iter()
            .copied()
            .filter(|s| parent(s) == Some(parent_id))
            .collect()
    };

    // The routing call is a `chat` span of the turn, with its tokens.
    let turn_children = children(id(&root));
    let routing = turn_children
        .iter()
        .find(|s| s["name"] == "chat" && attr_str(s, "gen_ai.agent.name") == Some("orchestrator"))
        .unwrap_or_else(|| panic!("no routing `chat` span under the turn: {turn_children:#?}"));
    assert!(
        attr_u64(routing, "gen_ai.usage.input_tokens").unwrap_or(0) > 0,
        "{routing:#}"
    );
    assert!(
        attr_u64(routing, "gen_ai.usage.output_tokens").unwrap_or(0) > 0,
        "{routing:#}"
    );
    assert!(
        attr_str(routing, "gen_ai.response.finish_reasons").is_some(),
        "{routing:#}"
    );

    // Each consulted specialist is an `invoke_agent` span under the turn, with its own
    // model call and its tool call under it.
    for agent in ["shop", "support"] {
        let specialist = turn_children
            .iter()
            .find(|s| {
                s["name"] == "invoke_agent" && attr_str(s, "gen_ai.agent.name") == Some(agent)
            })
            .unwrap_or_else(|| {
                panic!("no `invoke_agent` span for {agent} under the turn: {turn_children:#?}")
            });
        let under = children(id(specialist));
        assert!(
            under.iter().any(|s| s["name"] == "chat"
                && attr_u64(s, "gen_ai.usage.input_tokens").unwrap_or(0) > 0),
            "{agent}: {under:#?}"
        );
        // The model that answered is named: here the offline model, whatever the card's.
        assert!(
            under
                .iter()
                .filter(|s| s["name"] == "chat")
                .all(|s| attr_str(s, "gen_ai.provider.name") == Some("offline")
                    && attr_str(s, "gen_ai.request.model") == Some("offline")),
            "{agent}: {under:#?}"
        );
        assert!(
            under
                .iter()
                .any(|s| s["name"] == "execute_tool" && attr_str(s, "gen_ai.tool.name").is_some()),
            "{agent}: {under:#?}"
        );
    }

    // Content, when asked for, is on the spans in the conventions' form, masked by the
    // privacy guard first.
    let run: Run = sandbox
        .baton()
        .args([
            "chat",
            "--registry",
            registry(),
            "--model",
            "offline",
            "my receipt didn't scan, write to bob@example.org",
        ])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .env("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{run:?}");
    let with_content = |s: &Value| {
        is_root(s) && attr_str(s, "gen_ai.input.messages").is_some_and(|m| m.contains("receipt"))
    };
    let spans = wait_for(&phoenix, |spans| spans.iter().any(with_content));
    let root = spans.iter().find(|s| with_content(s)).unwrap();
    let input: Value =
        serde_json::from_str(attr_str(root, "gen_ai.input.messages").unwrap()).unwrap();
    assert_eq!(
        input[0]["parts"][0]["content"], "my receipt didn't scan, write to [email]",
        "{root:#}"
    );
    let output: Value =
        serde_json::from_str(attr_str(root, "gen_ai.output.messages").unwrap_or("null")).unwrap();
    assert_eq!(output[0]["role"], "assistant", "{root:#}");
    assert!(
        output[0]["parts"][0]["content"]
            .as_str()
            .is_some_and(|answer| !answer.is_empty() && run.stdout.contains(answer.trim())),
        "the answer on the span is not the answer shown: {output:#} {run:?}"
    );
    let trace = &root["context"]["trace_id"];
    let support = spans
        .iter()
        .find(|s| {
            &s["context"]["trace_id"] == trace
                && s["name"] == "invoke_agent"
                && attr_str(s, "gen_ai.agent.name") == Some("support")
        })
        .unwrap_or_else(|| panic!("no support span in {trace}: {spans:#?}"));
    assert!(
        attr_str(support, "gen_ai.input.messages").is_some()
            && attr_str(support, "gen_ai.output.messages").is_some(),
        "{support:#}"
    );
    let text = serde_json::to_string(&spans).unwrap();
    assert!(
        !text.contains("bob@example.org"),
        "an e-mail address was exported"
    );

    // A turn with a phone's photo, content captured: nothing the photo hid (its GPS
    // position, owner, device) reaches a span (D-42).
    let photo = sandbox.path().join("receipt.jpg");
    std::fs::write(&photo, baton_testkit::pictures::receipt_photo()).unwrap();
    let run: Run = sandbox
        .baton()
        .args([
            "chat",
            "--registry",
            registry(),
            "--model",
            "offline",
            "--image",
        ])
        .arg(&photo)
        .arg("this photo of my receipt didn't scan")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .env("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{run:?}");
    let with_photo = |s: &Value| {
        is_root(s) && attr_str(s, "gen_ai.input.messages").is_some_and(|m| m.contains("this photo"))
    };
    let spans = wait_for(&phoenix, |spans| spans.iter().any(with_photo));
    let text = serde_json::to_string(&spans).unwrap();
    for secret in baton_testkit::pictures::SECRETS {
        assert!(
            !text.contains(secret),
            "{secret:?} from the photo was exported"
        );
    }

    // `baton serve`: a request carrying a W3C `traceparent` continues the caller's trace.
    let serving = Serving::start(
        &sandbox,
        &["--registry", registry(), "--model", "offline"],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ],
    );
    let (caller_trace, caller_span) = ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
    let response = serving.request(
        &format!(
            "POST /v1/turns HTTP/1.1\r\nContent-Type: application/json\r\ntraceparent: 00-{caller_trace}-{caller_span}-01"
        ),
        r#"{"message":"find me coffee deals"}"#,
    );
    assert!(response.contains("\"completed\""), "{response}");
    let spans = wait_for(&phoenix, |spans| {
        spans.iter().any(|s| {
            s["context"]["trace_id"] == caller_trace
                && s["name"] == "invoke_agent"
                && attr_str(s, "gen_ai.agent.name") == Some("orchestrator")
        })
    });
    let of_caller: Vec<&Value> = spans
        .iter()
        .filter(|s| s["context"]["trace_id"] == caller_trace)
        .collect();
    let request = of_caller
        .iter()
        .find(|s| parent(s) == Some(caller_span))
        .unwrap_or_else(|| panic!("no span under the caller's: {of_caller:#?}"));
    assert_eq!(request["name"], "POST /v1/turns", "{request:#}");
    let turn = of_caller
        .iter()
        .find(|s| {
            s["name"] == "invoke_agent" && attr_str(s, "gen_ai.agent.name") == Some("orchestrator")
        })
        .unwrap();
    assert_eq!(parent(turn), Some(id(request)), "{of_caller:#?}");
    serving.kill();

    // A specialist that fails is an error on its span, with its kind; the one that
    // answered is not.
    let failing = sandbox.script(
        r#"
agents:
  orchestrator:
    - when: { purpose: route }
      tool_calls:
        - { name: ask_shop, args: { query: "coffee deals", intent_count: 2 } }
        - { name: ask_support, args: { query: "my receipt", intent_count: 2 } }
    - when: { purpose: compose }
      text: ["Here is what I found."]
  shop:
    - text: ["Roast coffee earns points."]
  support:
    - error: invalid
"#,
    );
    let run: Run = sandbox
        .baton()
        .args(["chat", "--registry", registry(), "--model", &failing])
        .arg("coffee deals and my receipt")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{run:?}");
    let failed_support = |s: &Value| {
        s["name"] == "invoke_agent"
            && attr_str(s, "gen_ai.agent.name") == Some("support")
            && attr_str(s, "error.type").is_some()
    };
    let spans = wait_for(&phoenix, |spans| spans.iter().any(failed_support));
    let support = spans.iter().find(|s| failed_support(s)).unwrap();
    assert_eq!(support["status_code"], "ERROR", "{support:#}");
    assert_eq!(
        attr_str(support, "error.type"),
        Some("error"),
        "{support:#}"
    );
    let trace = &support["context"]["trace_id"];
    let shop = spans
        .iter()
        .find(|s| {
            &s["context"]["trace_id"] == trace
                && s["name"] == "invoke_agent"
                && attr_str(s, "gen_ai.agent.name") == Some("shop")
        })
        .unwrap();
    assert_ne!(shop["status_code"], "ERROR", "{shop:#}");

    // A remote A2A specialist's spans join the turn's trace: the store agent (the official
    // Python SDK, with OpenTelemetry's) exports to the same receiver and continues the
    // `traceparent` Baton sends it.
    let agent = crate::a2a::Agent::start(Some(&endpoint));
    let a2a_registry = crate::a2a::registry_at(&sandbox, agent.port);
    let run: Run = sandbox
        .baton()
        .args([
            "chat",
            "--registry",
            a2a_registry.to_str().unwrap(),
            "--model",
            "offline",
        ])
        .arg("which stores are open late in Springfield?")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("FreshMart Downtown"), "{run:?}");
    let is_stores = |s: &Value| {
        s["name"] == "invoke_agent" && attr_str(s, "gen_ai.agent.name") == Some("stores")
    };
    let served_by_agent = |s: &Value| s["name"].as_str().is_some_and(|n| n.starts_with("a2a "));
    let spans = wait_for(&phoenix, |spans| {
        spans.iter().any(is_stores) && spans.iter().any(served_by_agent)
    });
    let stores = spans.iter().find(|s| is_stores(s)).unwrap();
    let trace = &stores["context"]["trace_id"];
    let served: Vec<&Value> = spans.iter().filter(|s| served_by_agent(s)).collect();
    assert!(
        served
            .iter()
            .any(|s| &s["context"]["trace_id"] == trace && parent(s) == Some(id(stores))),
        "the agent's spans are not under the specialist's in the turn's trace: {stores:#} {served:#?}"
    );
}

#[test]
fn without_an_endpoint_nothing_is_exported_and_a_bad_protocol_is_named() {
    let sandbox = Sandbox::new();
    let run: Run = sandbox
        .baton()
        .args(["chat", "--registry", registry(), "--model", "offline", "hi"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        .output()
        .unwrap()
        .into();
    // The turn is answered; export is refused with a plain reason.
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stderr.contains("traces and metrics are not exported")
            && run
                .stderr
                .contains("OTEL_EXPORTER_OTLP_PROTOCOL = \"grpc\""),
        "{run:?}"
    );
}

#[test]
fn a_receiver_that_is_down_does_not_fail_the_turn() {
    let sandbox = Sandbox::new();
    let port = free_port();
    let run: Run = sandbox
        .baton()
        .args(["chat", "--registry", registry(), "--model", "offline", "hi"])
        .env(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://127.0.0.1:{port}"),
        )
        .env("OTEL_EXPORTER_OTLP_TIMEOUT", "500")
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(!run.stdout.trim().is_empty(), "{run:?}");
}

/// A receiver that takes the connection and never answers holds `baton chat`'s exit for
/// a moment (the last export's bounded wait), not for the exporter's own timeout.
#[test]
fn a_receiver_that_never_answers_does_not_hold_chat_at_exit() {
    let receiver = OtlpReceiver::start(Traces::Hang);
    let sandbox = Sandbox::new();
    let started = std::time::Instant::now();
    let run: Run = sandbox
        .baton()
        .args(["chat", "--registry", registry(), "--model", "offline", "hi"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url.as_str())
        .env("OTEL_EXPORTER_OTLP_TIMEOUT", "120000")
        .output()
        .unwrap()
        .into();
    let took = started.elapsed();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stderr.contains("did not answer"), "{run:?}");
    // The hang would last the exporter's 120 s timeout.
    assert!(took < Duration::from_secs(60), "chat took {took:?} to exit");
}

/// A paused and resumed turn through `baton serve`, traced: each request is a SERVER span
/// with OpenTelemetry's `http.*` attributes (a `traceparent` or not), the call to the
/// ledger that leaves the process a CLIENT span, the resumed specialist an `invoke_agent`
/// span of its own, and the resumed turn links to the turn that waited.
#[test]
fn requests_are_server_spans_remote_calls_client_spans_and_a_resume_links_to_its_wait() {
    let receiver = OtlpReceiver::start(Traces::Take);
    let sandbox = Sandbox::new();
    let (_ledger, registry) = crate::approvals::with_ledger(&sandbox);
    let model = sandbox.script(crate::approvals::SCRIPT);
    let serving = Serving::start(
        &sandbox,
        &["--registry", registry.to_str().unwrap(), "--model", &model],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url.as_str()),
            ("OTEL_BSP_SCHEDULE_DELAY", "50"),
        ],
    );
    let paused = serving.request(
        "POST /v1/turns HTTP/1.1\r\nContent-Type: application/json",
        r#"{"message":"redeem 800 points","turn_id":"t-wait"}"#,
    );
    let episode = header(&paused, "x-baton-episode-id").unwrap().to_owned();
    let asked = sse_events(&paused)
        .into_iter()
        .find(|e| e["type"] == "interruption")
        .unwrap_or_else(|| panic!("{paused}"));
    let body = serde_json::json!({
        "episode_id": episode, "interruption_id": asked["id"], "decision": "approve",
    });
    let resumed = serving.request(
        "POST /v1/turns/t-wait/resume HTTP/1.1\r\nContent-Type: application/json",
        &body.to_string(),
    );
    assert!(resumed.contains("\"answered\""), "{resumed}");
    let client_named = |s: &baton_tests::otlp_receiver::ReceivedSpan| {
        s.kind == 3 && s.name == "http redeem_points"
    };
    // The spans leave in batches: wait for the last request's and the ledger call's.
    assert!(
        receiver.wait_for(Duration::from_secs(30), |r| {
            let spans = r.spans();
            spans.iter().any(client_named)
                && spans
                    .iter()
                    .any(|s| s.name == "POST /v1/turns/{turn_id}/resume")
        }),
        "no CLIENT span for the ledger, or no span for the resume: {:?}",
        receiver.span_names()
    );
    let spans = receiver.spans();
    let request = |name: &str| {
        spans
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no {name} span: {:?}", receiver.span_names()))
    };
    let start = request("POST /v1/turns");
    assert_eq!(start.kind, 2, "SERVER: {start:?}");
    assert_eq!(start.attr("http.request.method"), Some("POST"));
    assert_eq!(start.attr("http.route"), Some("/v1/turns"));
    assert_eq!(start.attr("http.response.status_code"), Some("200"));
    let resume = request("POST /v1/turns/{turn_id}/resume");
    assert_eq!(resume.kind, 2, "SERVER: {resume:?}");
    assert_eq!(
        resume.attr("http.route"),
        Some("/v1/turns/{turn_id}/resume")
    );
    let turn_of = |request: &baton_tests::otlp_receiver::ReceivedSpan| {
        spans
            .iter()
            .find(|s| {
                s.trace_id == request.trace_id
                    && s.name == "invoke_agent"
                    && s.attr("gen_ai.agent.name") == Some("orchestrator")
            })
            .unwrap_or_else(|| panic!("no turn under {request:?}"))
            .clone()
    };
    let (waited, went_on) = (turn_of(start), turn_of(resume));
    assert_ne!(waited.trace_id, went_on.trace_id);
    assert_eq!(
        went_on.links,
        [(waited.trace_id.clone(), waited.span_id.clone())],
        "the resumed turn links to the one that waited"
    );
    // The specialist that goes on has its span, and its call to the ledger a CLIENT one.
    let rewards = spans
        .iter()
        .find(|s| {
            s.trace_id == went_on.trace_id
                && s.name == "invoke_agent"
                && s.attr("gen_ai.agent.name") == Some("rewards")
        })
        .unwrap_or_else(|| panic!("no resumed rewards span: {spans:#?}"));
    assert_eq!(rewards.attr("baton.resumed"), Some("true"));
    let client = spans.iter().find(|s| client_named(s)).unwrap();
    assert_eq!(client.trace_id, went_on.trace_id);
    let tool = spans
        .iter()
        .find(|s| s.span_id == client.parent_span_id)
        .unwrap();
    assert_eq!(tool.name, "execute_tool", "{tool:?}");
    serving.kill();
}

/// Sends `n` turns (`<prefix>-<i>`) one after another; each must be answered.
fn answered_turns(serving: &Serving, prefix: &str, n: usize) {
    for i in 0..n {
        let response = serving.request(
            "POST /v1/turns HTTP/1.1\r\nContent-Type: application/json",
            &format!(r#"{{"message":"find me coffee deals","turn_id":"{prefix}-{i}"}}"#),
        );
        assert!(response.contains("\"completed\""), "turn {i}: {response}");
    }
}

#[test]
fn a_receiver_that_stops_answering_slows_no_turn_and_the_dropped_spans_are_counted() {
    // Trace exports hang; metrics still arrive, so the drops can be read back.
    let receiver = OtlpReceiver::start(Traces::Hang);
    let sandbox = Sandbox::new();
    let serving = Serving::start(
        &sandbox,
        &["--registry", registry(), "--model", "offline"],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url.as_str()),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "60000"),
            ("OTEL_BSP_MAX_QUEUE_SIZE", "16"),
            ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "4"),
            ("OTEL_BSP_SCHEDULE_DELAY", "50"),
            ("OTEL_METRIC_EXPORT_INTERVAL", "200"),
        ],
    );
    // Each turn makes about ten spans: the exporter is stuck on its first batch, so the
    // queue fills within two turns. Every turn is still answered.
    answered_turns(&serving, "t-slow", 6);
    assert!(
        receiver.wait_for(Duration::from_secs(30), |r| {
            r.counter("turns_total", &[("outcome", "answered")]) == Some(6)
                && r.counter(
                    "otel.sdk.processor.span.processed",
                    &[("error.type", "queue_full")],
                )
                .is_some_and(|n| n > 0)
        }),
        "turns {:?}, dropped spans {:?} after {} metric exports",
        receiver.counter("turns_total", &[("outcome", "answered")]),
        receiver.counter(
            "otel.sdk.processor.span.processed",
            &[("error.type", "queue_full")]
        ),
        receiver.metric_exports()
    );
    assert!(receiver.span_names().is_empty());
    serving.kill();
}

/// The trace exporter failing (its fault injection point, D-39, refuses the first batches)
/// fails no turn, and export goes on with the next batches.
#[cfg(feature = "failpoints")]
#[test]
fn a_failed_export_fails_no_turn_and_export_goes_on() {
    let receiver = OtlpReceiver::start(Traces::Take);
    let sandbox = Sandbox::new();
    let serving = Serving::start(
        &sandbox,
        &["--registry", registry(), "--model", "offline"],
        &[
            ("FAILPOINTS", "otel.export=2*return"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url.as_str()),
            ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "4"),
            ("OTEL_BSP_SCHEDULE_DELAY", "50"),
        ],
    );
    answered_turns(&serving, "t-export", 3);
    assert!(
        receiver.wait_for(Duration::from_secs(30), |r| {
            r.span_names().iter().any(|n| n == "invoke_agent")
        }),
        "no span arrived after the failed exports: {:?}",
        receiver.span_names()
    );
    serving.kill();
}
