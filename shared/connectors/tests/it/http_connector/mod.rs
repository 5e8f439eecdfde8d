//! The `http` connector against real servers on 127.0.0.1 (axum, or raw sockets for the
//! faults a framework would not produce), started inside each test.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use baton_connectors::{HttpConnector, SecretRef, SecretSource};
use baton_core::Principal;
use baton_core::ports::connector::{
    Connector, ConnectorError, ConnectorRequest, Envelope, EnvelopeStatus,
};
use baton_core::tool_result::{EnvelopeVerdict, judge_envelope};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

mod faults;
mod https;
mod retries;

const PRINCIPAL: &str = "user-7";

// ---- helpers ------------------------------------------------------------------------

/// One request as the server saw it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    uri: String,
    headers: HeaderMap,
    body: Vec<u8>,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

struct Server {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

/// An axum server answering every request with `answer(n, request)`, `n` counting from 1.
async fn server<F>(answer: F) -> Server
where
    F: Fn(usize, &Seen) -> Response + Send + Sync + 'static,
{
    let seen = Arc::new(Mutex::new(Vec::new()));
    let answer = Arc::new(answer);
    let log = seen.clone();
    let app = Router::new().fallback(move |req: Request| {
        let log = log.clone();
        let answer = answer.clone();
        async move {
            let (parts, body) = req.into_parts();
            let body = axum::body::to_bytes(body, 1 << 20).await.unwrap().to_vec();
            let s = Seen {
                method: parts.method.to_string(),
                uri: parts.uri.to_string(),
                headers: parts.headers,
                body,
            };
            let n = {
                let mut log = log.lock().unwrap();
                log.push(s.clone());
                log.len()
            };
            answer(n, &s)
        }
    });
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    Server { addr, seen }
}

/// A server handing each accepted connection to `handle`, for answers no framework sends.
async fn raw<F, Fut>(handle: F) -> SocketAddr
where
    F: Fn(TcpStream) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(handle(stream));
        }
    });
    addr
}

/// Reads a request's head (these tests send no body to raw servers).
async fn read_head<S: tokio::io::AsyncRead + Unpin>(stream: &mut S) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).await.unwrap_or(0) == 0 {
            break;
        }
        head.push(byte[0]);
    }
    String::from_utf8_lossy(&head).into_owned()
}

fn envelope_for(principal: &str) -> Value {
    json!({
        "status": "ok",
        "payload": {"offers": [{"title": "Oat milk", "reward": "200 points"}]},
        "partial": [],
        "principal": principal,
        "version": "1.2.0",
        "domain_type": "offers",
        "enricher_id": "acme-offers",
        "cache_meta": {"cached": true, "ttl_s": 60},
    })
}

fn json_response(status: StatusCode, body: Value) -> Response {
    (status, axum::Json(body)).into_response()
}

fn request(config: Value, args: Value) -> ConnectorRequest {
    ConnectorRequest {
        tool_id: Arc::from("search_offers"),
        config: Arc::new(config),
        args,
        principal: Principal::new(PRINCIPAL).unwrap(),
        episode_id: Arc::from("ep-1"),
        agent_id: Arc::from("shop"),
        now_ms: 0,
        progress: None,
        traceparent: None,
        idempotency_key: None,
        links: None,
        input: None,
    }
}

async fn call(config: Value, args: Value) -> Result<Envelope, ConnectorError> {
    let connector = HttpConnector::new();
    connector
        .check_config("search_offers", &config)
        .unwrap_or_else(|e| panic!("{e}"));
    connector.call(request(config, args)).await
}

fn unavailable(result: Result<Envelope, ConnectorError>) -> String {
    match result {
        Err(ConnectorError::Unavailable(detail)) => detail,
        other => panic!("expected Unavailable, got {other:?}"),
    }
}

fn invalid(result: Result<Envelope, ConnectorError>) -> String {
    match result {
        Err(ConnectorError::InvalidEnvelope(detail)) => detail,
        other => panic!("expected InvalidEnvelope, got {other:?}"),
    }
}

// ---- requests -----------------------------------------------------------------------

#[tokio::test]
async fn a_get_fills_the_template_sends_the_rest_as_query_and_passes_the_envelope_through() {
    let s = server(|_, seen| {
        let principal = seen.header("x-baton-principal").unwrap_or("none");
        json_response(StatusCode::OK, envelope_for(principal))
    })
    .await;
    let config = json!({"url": s.url("/users/{user}/offers?lang=en")});
    let e = call(
        config,
        json!({"user": "a b/c?", "query": "oat milk & honey", "limit": 3, "tags": ["x", "y"]}),
    )
    .await
    .unwrap();
    assert_eq!(
        e,
        serde_json::from_value::<Envelope>(envelope_for(PRINCIPAL)).unwrap()
    );
    let seen = s.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].method, "GET");
    assert_eq!(
        seen[0].uri,
        "/users/a%20b%2Fc%3F/offers?lang=en&limit=3&query=oat%20milk%20%26%20honey&tags=x&tags=y"
    );
    assert_eq!(seen[0].header("x-baton-principal"), Some(PRINCIPAL));
    assert_eq!(seen[0].header("accept"), Some("application/json"));
    assert!(seen[0].body.is_empty());
}

#[tokio::test]
async fn a_call_with_a_trace_context_sends_it_as_traceparent() {
    let s = server(|_, seen| {
        let principal = seen.header("x-baton-principal").unwrap_or("none");
        json_response(StatusCode::OK, envelope_for(principal))
    })
    .await;
    let config = json!({"url": s.url("/offers")});
    let connector = HttpConnector::new();
    connector.check_config("search_offers", &config).unwrap();
    let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    connector
        .call(ConnectorRequest {
            traceparent: Some(Arc::from(traceparent)),
            ..request(config.clone(), json!({}))
        })
        .await
        .unwrap();
    connector.call(request(config, json!({}))).await.unwrap();
    let seen = s.seen();
    assert_eq!(seen[0].header("traceparent"), Some(traceparent));
    assert_eq!(seen[1].header("traceparent"), None, "none without a trace");
}

#[tokio::test]
async fn a_call_with_an_idempotency_key_sends_it_on_every_attempt() {
    let s = server(|n, seen| {
        if n == 1 {
            StatusCode::SERVICE_UNAVAILABLE.into_response()
        } else {
            let principal = seen.header("x-baton-principal").unwrap_or("none");
            json_response(StatusCode::OK, envelope_for(principal))
        }
    })
    .await;
    let config = json!({"url": s.url("/redeem"), "retry": {"attempts": 2, "backoff_ms": 1}});
    let connector = HttpConnector::new();
    connector.check_config("redeem", &config).unwrap();
    connector
        .call(ConnectorRequest {
            idempotency_key: Some(Arc::from("bk_0123")),
            links: None,
            ..request(config, json!({}))
        })
        .await
        .unwrap();
    let seen = s.seen();
    assert_eq!(seen.len(), 2, "retried once");
    assert!(
        seen.iter()
            .all(|r| r.header("idempotency-key") == Some("bk_0123"))
    );
}

#[tokio::test]
async fn a_key_conflict_reads_as_an_act_already_done_not_as_a_failure() {
    let s = server(|_, _| {
        json_response(
            StatusCode::CONFLICT,
            json!({"error": "this redemption was already made"}),
        )
    })
    .await;
    let config = json!({"url": s.url("/redeem"), "method": "POST", "response": {"json": {"domain_type": "d", "enricher_id": "e", "version": "1.0.0"}}});
    let connector = HttpConnector::new();
    connector.check_config("redeem", &config).unwrap();
    let keyed = connector
        .call(ConnectorRequest {
            idempotency_key: Some(Arc::from("bk_0123")),
            ..request(config.clone(), json!({}))
        })
        .await;
    assert!(
        matches!(keyed, Err(ConnectorError::AlreadyActed(_))),
        "{keyed:?}"
    );
    // Without a key a 409 is only a failure: nothing says this act was done.
    unavailable(connector.call(request(config, json!({}))).await);
}

#[tokio::test]
async fn a_post_sends_the_request_envelope_and_the_principal_header() {
    let s = server(|_, seen| {
        let body = seen.json();
        json_response(
            StatusCode::OK,
            envelope_for(body["principal"].as_str().unwrap_or("none")),
        )
    })
    .await;
    let config = json!({"url": s.url("/offers/{id}"), "method": "POST"});
    let args = json!({"id": "o-1", "query": "coffee"});
    let e = call(config, args.clone()).await.unwrap();
    assert_eq!(e.principal, PRINCIPAL);
    let seen = s.seen();
    assert_eq!(seen[0].method, "POST");
    assert_eq!(seen[0].uri, "/offers/o-1", "no query string with a body");
    assert_eq!(seen[0].header("x-baton-principal"), Some(PRINCIPAL));
    assert_eq!(seen[0].header("content-type"), Some("application/json"));
    assert_eq!(
        seen[0].json(),
        json!({"principal": PRINCIPAL, "args": args, "tool": "search_offers", "episode_id": "ep-1"})
    );
}

#[tokio::test]
async fn delete_uses_the_query_and_put_the_body() {
    let s = server(|_, _| json_response(StatusCode::OK, envelope_for(PRINCIPAL))).await;
    for method in ["DELETE", "PUT", "PATCH"] {
        let config = json!({"url": s.url("/items/{id}"), "method": method});
        call(config, json!({"id": 5, "why": "old"})).await.unwrap();
    }
    let seen = s.seen();
    assert_eq!(
        (seen[0].method.as_str(), seen[0].uri.as_str()),
        ("DELETE", "/items/5?why=old")
    );
    for s in &seen[1..] {
        assert_eq!(s.uri, "/items/5");
        assert_eq!(s.json()["args"], json!({"id": 5, "why": "old"}));
    }
}

#[tokio::test]
async fn a_placeholder_without_its_argument_is_unavailable_without_a_request() {
    let s = server(|_, _| json_response(StatusCode::OK, envelope_for(PRINCIPAL))).await;
    let detail = unavailable(call(json!({"url": s.url("/items/{id}")}), json!({})).await);
    assert!(detail.contains("id"), "{detail}");
    assert!(s.seen().is_empty());
}

// ---- secrets ------------------------------------------------------------------------

#[tokio::test]
async fn secret_headers_come_from_the_environment_and_are_never_shown() {
    // An environment variable cargo sets for every test run: this crate's directory
    // stands in for a token (setting variables needs `unsafe`, which the workspace
    // forbids).
    let Ok(secret) = std::env::var("CARGO_MANIFEST_DIR") else {
        return;
    };
    let s = server(|_, _| json_response(StatusCode::OK, envelope_for(PRINCIPAL))).await;
    let config = json!({
        "url": s.url("/offers"),
        "headers": {
            "Authorization": {"env": "CARGO_MANIFEST_DIR", "prefix": "Bearer "},
            "X-Api-Key": {"env": "CARGO_MANIFEST_DIR"},
            "X-Client": "baton",
        },
    });
    let connector = HttpConnector::new();
    connector.check_config("t", &config).unwrap();
    connector
        .call(request(config.clone(), json!({})))
        .await
        .unwrap();
    let seen = s.seen();
    assert_eq!(
        seen[0].header("authorization"),
        Some(format!("Bearer {secret}").as_str())
    );
    assert_eq!(seen[0].header("x-api-key"), Some(secret.as_str()));
    assert_eq!(seen[0].header("x-client"), Some("baton"));
    // Neither the connector's Debug nor an error of a call holding the secret shows it.
    assert!(!format!("{connector:?}").contains(&secret));
    let mut down = config.clone();
    let (closed, _held) = faults::closed_port();
    down["url"] = json!(format!("http://{closed}/offers"));
    let err = connector.call(request(down, json!({}))).await.unwrap_err();
    assert!(!format!("{err} {err:?}").contains(&secret), "{err:?}");
}

#[tokio::test]
async fn an_unset_variable_is_named_at_load_and_arns_need_the_aws_source() {
    let c = HttpConnector::new();
    let e = c
        .check_config(
            "t",
            &json!({"url": "http://h/x", "headers": {"Authorization": {"env": "BATON_TEST_SURELY_UNSET_TOKEN", "prefix": "Bearer "}}}),
        )
        .unwrap_err();
    assert!(
        e.contains("headers.authorization") && e.contains("BATON_TEST_SURELY_UNSET_TOKEN"),
        "{e}"
    );
    let e = c
        .check_config(
            "t",
            &json!({"url": "http://h/x", "headers": {"Authorization": {"arn": "arn:aws:secretsmanager:eu-west-1:123:secret:tok"}}}),
        )
        .unwrap_err();
    assert!(
        e.contains("secrets by ARN need the AWS secret source (on Lambda)"),
        "{e}"
    );
}

/// A secret source counting its look-ups.
#[derive(Default)]
struct Counting(AtomicUsize);

impl SecretSource for Counting {
    fn resolve(&self, reference: &SecretRef) -> Result<String, String> {
        self.0.fetch_add(1, Ordering::SeqCst);
        match reference {
            SecretRef::Arn(arn) if arn.ends_with(":tok") => Ok("s3cr3t-from-arn".to_owned()),
            other => Err(format!("{other} is unknown")),
        }
    }
}

#[tokio::test]
async fn secrets_are_resolved_once_through_the_given_source() {
    let s = server(|_, _| json_response(StatusCode::OK, envelope_for(PRINCIPAL))).await;
    let source = Arc::new(Counting::default());
    let connector = HttpConnector::with_secret_source(source.clone());
    let config = json!({
        "url": s.url("/x"),
        "headers": {"authorization": {"arn": "arn:aws:ssm:eu-west-1:123:parameter:tok", "prefix": "Token "}},
    });
    connector.check_config("t", &config).unwrap();
    for _ in 0..3 {
        connector
            .call(request(config.clone(), json!({})))
            .await
            .unwrap();
    }
    assert_eq!(source.0.load(Ordering::SeqCst), 1);
    assert!(
        s.seen()
            .iter()
            .all(|r| r.header("authorization") == Some("Token s3cr3t-from-arn"))
    );
    assert!(!format!("{connector:?}").contains("s3cr3t"));
}

// ---- plain JSON ---------------------------------------------------------------------

#[tokio::test]
async fn plain_json_is_wrapped_for_the_callers_principal_by_the_status_rule() {
    let s = server(|_, seen| {
        let status = match seen.uri.as_str() {
            "/items?kind=partial" => StatusCode::PARTIAL_CONTENT,
            "/items?kind=stale" => StatusCode::NON_AUTHORITATIVE_INFORMATION,
            _ => StatusCode::OK,
        };
        let body = if seen.uri.ends_with("empty") {
            json!({"data": {}})
        } else {
            json!({"data": {"items": [1, 2]}, "principal": "not-asserted"})
        };
        json_response(status, body)
    })
    .await;
    let config = json!({
        "url": s.url("/items"),
        "response": {"json": {
            "result_path": "/data/items",
            "domain_type": "items",
            "enricher_id": "acme-items",
            "version": "2.0.0",
            "partial_statuses": [203],
        }},
    });
    let cases = [
        ("ok", EnvelopeStatus::Ok, json!([1, 2])),
        ("partial", EnvelopeStatus::Partial, json!([1, 2])),
        ("stale", EnvelopeStatus::Partial, json!([1, 2])),
        ("empty", EnvelopeStatus::Error, Value::Null),
    ];
    for (kind, status, payload) in cases {
        let e = call(config.clone(), json!({"kind": kind})).await.unwrap();
        assert_eq!((e.status, &e.payload), (status, &payload), "{kind}");
        assert_eq!(e.principal, PRINCIPAL);
        assert_eq!(
            (
                e.domain_type.as_str(),
                e.enricher_id.as_str(),
                e.version.as_str()
            ),
            ("items", "acme-items", "2.0.0")
        );
    }
    let mut whole = config.clone();
    whole["response"]["json"]
        .as_object_mut()
        .unwrap()
        .remove("result_path");
    let e = call(whole, json!({})).await.unwrap();
    assert_eq!(e.payload["data"]["items"], json!([1, 2]));
}

#[tokio::test]
async fn plain_json_failures_are_unavailable_and_non_json_is_invalid() {
    let s = server(|_, seen| match seen.uri.as_str() {
        "/500" => json_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            json!({"error": "db password wrong"}),
        ),
        _ => (StatusCode::OK, "not json at all").into_response(),
    })
    .await;
    let json_mode = |path: &str| json!({"url": s.url(path), "response": {"json": {"domain_type": "d", "enricher_id": "e", "version": "1.0.0"}}});
    let detail = unavailable(call(json_mode("/500"), json!({})).await);
    assert!(!detail.contains("password"), "{detail}");
    assert!(invalid(call(json_mode("/text"), json!({})).await).contains("not JSON"));
}

// ---- configuration ------------------------------------------------------------------

#[test]
fn check_config_names_what_is_wrong() {
    let c = HttpConnector::new();
    let base = json!({"url": "https://api.example/v1/offers/{id}"});
    assert_eq!(c.check_config("t", &base), Ok(()));
    let cases = [
        (
            "colour",
            json!("blue"),
            "unknown field `colour`, expected one of",
        ),
        ("url", json!("ftp://h/x"), "http:// or https://"),
        ("url", json!("http://{host}/x"), "not in the scheme or host"),
        ("method", json!("TRACE"), "GET, POST, PUT, PATCH, DELETE"),
        ("headers", json!({"bad name": "x"}), "not a header name"),
        (
            "headers",
            json!({"X-Baton-Principal": "x"}),
            "set by the connector",
        ),
        (
            "headers",
            json!({"x-a": "line\nbreak"}),
            "not a valid header value",
        ),
        ("headers", json!({"x-a": 5}), "a string, or {env"),
        (
            "headers",
            json!({"x-a": {"env": "A", "arn": "arn:x"}}),
            "exactly one of",
        ),
        (
            "headers",
            json!({"x-a": {"env": "1BAD"}}),
            "not an environment variable name",
        ),
        (
            "headers",
            json!({"x-a": {"env": "PATH", "suffix": "x"}}),
            "unknown key \"suffix\"",
        ),
        (
            "headers",
            json!({"x-a": {"arn": "secret-name"}}),
            "not an ARN",
        ),
        ("connect_timeout_ms", json!(0), "connect_timeout_ms = 0"),
        ("deadline_ms", json!(0), "deadline_ms = 0"),
        ("retry", json!({"attempts": 0}), "retry.attempts = 0"),
        ("retry", json!({"attempts": 50}), "retry.attempts = 50"),
        (
            "retry",
            json!({"backoff_ms": 3_600_000}),
            "retry.backoff_ms",
        ),
        ("retry", json!({"tries": 2}), "unknown field `tries`"),
        ("max_body_bytes", json!(0), "max_body_bytes = 0"),
        ("response", json!("xml"), "response is `envelope`"),
        (
            "response",
            json!({"json": {"domain_type": "d", "enricher_id": "e"}}),
            "missing field `version`",
        ),
        (
            "response",
            json!({"json": {"domain_type": "d", "enricher_id": "e", "version": "x"}}),
            "MAJOR.MINOR.PATCH",
        ),
        (
            "response",
            json!({"json": {"domain_type": "d", "enricher_id": "e", "version": "1.0.0", "result_path": "data"}}),
            "JSON Pointer",
        ),
        (
            "response",
            json!({"json": {"domain_type": "d", "enricher_id": "e", "version": "1.0.0", "partial_statuses": [500]}}),
            "not a 2xx",
        ),
        (
            "ca_file",
            json!("/nonexistent/ca.pem"),
            "ca_file /nonexistent/ca.pem",
        ),
        ("kind", json!("fixture"), "kind \"fixture\""),
    ];
    for (key, value, expected) in cases {
        let mut config = base.clone();
        config[key] = value;
        let err = c.check_config("t", &config).unwrap_err();
        assert!(err.contains(expected), "{key}: {err}");
    }
    let err = c.check_config("t", &json!({"method": "GET"})).unwrap_err();
    assert!(err.contains("missing field `url`"), "{err}");
    let err = c
        .check_config("t", &json!({"url": "http://h/x", "ca_file": "/tmp/ca.pem"}))
        .unwrap_err();
    assert!(err.contains("https:// URLs only"), "{err}");
}

#[test]
fn the_http_kind_is_shipped() {
    let connectors = baton_connectors::default_connectors(std::path::Path::new("."));
    assert!(connectors.contains_key(HttpConnector::KIND));
    assert_eq!(HttpConnector::KIND, "http");
}

/// Answers every reference: the documented example must check without real secrets.
struct AnySecret;

impl SecretSource for AnySecret {
    fn resolve(&self, _: &SecretRef) -> Result<String, String> {
        Ok("token".to_owned())
    }
}

#[test]
fn the_documented_example_checks() {
    let doc =
        std::fs::read_to_string(baton_testkit::workspace_root().join("docs/connectors-http.md"))
            .unwrap();
    let yaml = doc
        .split("```yaml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .unwrap();
    let tools: Value = serde_norway::from_str(yaml).unwrap();
    let mut connector = tools["tools"]["search_partner_offers"]["connector"].clone();
    // The registry hands the settings over without `kind`; either way is accepted.
    assert_eq!(connector["kind"], "http");
    let c = HttpConnector::with_secret_source(Arc::new(AnySecret));
    c.check_config("search_partner_offers", &connector)
        .unwrap_or_else(|e| panic!("{e}"));
    connector.as_object_mut().unwrap().remove("kind");
    c.check_config("search_partner_offers", &connector)
        .unwrap_or_else(|e| panic!("{e}"));
}
