//! The `mcp` connector against an MCP server that requires authorization: a small
//! streamable-HTTP MCP server and an OAuth authorization server in one axum app, whose
//! behaviour each test scripts (token lifetimes, revoked tokens, scopes per method,
//! refusals and broken metadata). The official conformance suite covers the protocol
//! (`mcp_conformance`); these tests cover what it does not: caching, renewal, step-up
//! bounds, faults, and that no secret leaks.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use axum::extract::{Form, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine;
use baton_connectors::{McpConnector, SecretRef, SecretSource};
use baton_core::Principal;
use baton_core::ports::connector::{Connector, ConnectorError, ConnectorRequest, EnvelopeStatus};
use serde_json::{Value, json};

const CLIENT_ID: &str = "baton-test";
const CLIENT_SECRET: &str = "s3cr3t-client-value";
const API_KEY: &str = "k3y-static-value";

/// How the servers behave in one test.
#[derive(Clone, Default)]
struct Script {
    /// `expires_in` of issued tokens (none: no expiry given).
    lifetime: Option<u64>,
    /// A scope `tools/call` needs beyond `read`.
    call_scope: Option<&'static str>,
    /// The token endpoint answers this instead of a token.
    token_refusal: Option<(u16, String)>,
    /// The authorization server's metadata document, as served (none: the good one).
    metadata: Option<String>,
    /// Every token is refused by the MCP server (one for another audience).
    refuse_all: bool,
    /// The MCP server wants `X-Api-Key` instead of OAuth.
    api_key: bool,
}

/// One token request as the authorization server saw it.
#[derive(Debug, Clone)]
struct TokenRequest {
    form: HashMap<String, String>,
    basic: Option<(String, String)>,
}

#[derive(Default)]
struct Seen {
    token_requests: Vec<TokenRequest>,
    /// token -> scopes
    issued: HashMap<String, Vec<String>>,
    revoked: Vec<String>,
    /// The Authorization header of every MCP request, in order.
    mcp_auth: Vec<Option<String>>,
}

struct Shared {
    base: String,
    script: Script,
    seen: Mutex<Seen>,
}

type App = Arc<Shared>;

async fn resource_metadata(State(app): State<App>) -> Json<Value> {
    Json(json!({
        "resource": format!("{}/mcp", app.base),
        "authorization_servers": [format!("{}/as", app.base)],
        "scopes_supported": ["read"],
    }))
}

async fn server_metadata(State(app): State<App>) -> Response {
    match &app.script.metadata {
        Some(text) => ([(header::CONTENT_TYPE, "application/json")], text.clone()).into_response(),
        None => Json(json!({
            "issuer": format!("{}/as", app.base),
            "token_endpoint": format!("{}/as/token", app.base),
            "token_endpoint_auth_methods_supported": ["client_secret_basic"],
            "grant_types_supported": ["client_credentials"],
        }))
        .into_response(),
    }
}

async fn token(
    State(app): State<App>,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let basic = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        .and_then(|raw| String::from_utf8(raw).ok())
        .and_then(|pair| {
            pair.split_once(':')
                .map(|(a, b)| (a.to_owned(), b.to_owned()))
        });
    let mut seen = app.seen.lock().unwrap();
    seen.token_requests.push(TokenRequest {
        form: form.clone(),
        basic: basic.clone(),
    });
    if let Some((status, body)) = &app.script.token_refusal {
        return (
            StatusCode::from_u16(*status).unwrap(),
            [(header::CONTENT_TYPE, "application/json")],
            body.clone(),
        )
            .into_response();
    }
    if basic != Some((CLIENT_ID.to_owned(), CLIENT_SECRET.to_owned())) {
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"error": "invalid_client"})),
        )
            .into_response();
    }
    // Grants what is asked among what exists.
    let scopes: Vec<String> = form
        .get("scope")
        .map(|s| s.split(' ').map(str::to_owned).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .filter(|s| ["read", "write"].contains(&s.as_str()))
        .collect();
    let token = format!("tok-{}", seen.issued.len() + 1);
    seen.issued.insert(token.clone(), scopes.clone());
    let mut body =
        json!({"access_token": token, "token_type": "Bearer", "scope": scopes.join(" ")});
    if let Some(lifetime) = app.script.lifetime {
        body["expires_in"] = json!(lifetime);
    }
    Json(body).into_response()
}

fn challenge(app: &Shared, extra: &str) -> String {
    format!(
        r#"Bearer resource_metadata="{}/.well-known/oauth-protected-resource/mcp"{extra}"#,
        app.base
    )
}

async fn mcp(State(app): State<App>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    let auth = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let method = body["method"].as_str().unwrap_or("").to_owned();
    let scopes = {
        let mut seen = app.seen.lock().unwrap();
        seen.mcp_auth.push(auth.clone());
        if app.script.api_key {
            let key = headers.get("x-api-key").and_then(|v| v.to_str().ok());
            if key != Some(API_KEY) {
                return (StatusCode::UNAUTHORIZED, "no key").into_response();
            }
            vec!["read".to_owned(), "write".to_owned()]
        } else {
            let token = auth.as_deref().and_then(|a| a.strip_prefix("Bearer "));
            let granted = token
                .filter(|t| !seen.revoked.iter().any(|r| r == t) && !app.script.refuse_all)
                .and_then(|t| seen.issued.get(t).cloned());
            match granted {
                Some(scopes) => scopes,
                None => {
                    return (
                        StatusCode::UNAUTHORIZED,
                        [(
                            header::WWW_AUTHENTICATE,
                            challenge(&app, r#", scope="read""#),
                        )],
                        Json(json!({"error": "invalid_token"})),
                    )
                        .into_response();
                }
            }
        }
    };
    if method == "tools/call"
        && let Some(needed) = app.script.call_scope
        && !scopes.iter().any(|s| s == needed)
    {
        return (
            StatusCode::FORBIDDEN,
            [(
                header::WWW_AUTHENTICATE,
                challenge(
                    &app,
                    &format!(r#", error="insufficient_scope", scope="read {needed}""#),
                ),
            )],
            Json(json!({"error": "insufficient_scope"})),
        )
            .into_response();
    }
    let id = body["id"].clone();
    let result = match method.as_str() {
        "initialize" => json!({
            "protocolVersion": body["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "oauth-test", "version": "1.0.0"},
        }),
        "tools/list" => json!({"tools": [{"name": "whoami", "inputSchema": {"type": "object"}}]}),
        "tools/call" => {
            json!({"content": [{"type": "text", "text": json!({"scopes": scopes}).to_string()}]})
        }
        _ if id.is_null() => return StatusCode::ACCEPTED.into_response(),
        _ => json!({}),
    };
    Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
}

/// The servers on a free port, running until the test's runtime ends.
async fn serve(script: Script) -> App {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = Arc::new(Shared {
        base,
        script,
        seen: Mutex::new(Seen::default()),
    });
    let router = Router::new()
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(resource_metadata),
        )
        .route(
            "/.well-known/oauth-authorization-server/as",
            get(server_metadata),
        )
        .route("/as/token", post(token))
        .route(
            "/mcp",
            post(mcp).get(|| async { StatusCode::METHOD_NOT_ALLOWED }),
        )
        .with_state(app.clone());
    tokio::spawn(async move { axum::serve(listener, router).await });
    app
}

/// The test's secrets, as if from the environment.
struct Secrets;

impl SecretSource for Secrets {
    fn resolve(&self, reference: &SecretRef) -> Result<String, String> {
        match reference {
            SecretRef::Env(name) if name == "MCP_CLIENT_SECRET" => Ok(CLIENT_SECRET.to_owned()),
            SecretRef::Env(name) if name == "MCP_API_KEY" => Ok(API_KEY.to_owned()),
            other => Err(format!("{other} is not set")),
        }
    }
}

fn connector() -> McpConnector {
    McpConnector::with_secret_source(Path::new("."), Arc::new(Secrets))
}

fn config(app: &Shared, server_extra: Value) -> Value {
    let mut server = json!({"url": format!("{}/mcp", app.base)});
    for (k, v) in server_extra.as_object().unwrap() {
        server[k] = v.clone();
    }
    json!({
        "kind": "mcp",
        "server": server,
        "tool": "whoami",
        "domain_type": "who",
        "enricher_id": "oauth-test",
        "version": "1.0.0",
        "connect_timeout_ms": 5000,
    })
}

fn oauth() -> Value {
    json!({"oauth": {"client_id": CLIENT_ID, "client_secret": {"env": "MCP_CLIENT_SECRET"}}})
}

async fn call(connector: &McpConnector, config: &Value) -> Result<Value, ConnectorError> {
    let request = ConnectorRequest {
        tool_id: Arc::from("whoami"),
        config: Arc::new(config.clone()),
        args: json!({}),
        principal: Principal::new("alice").unwrap(),
        episode_id: Arc::from("e1"),
        agent_id: Arc::from("a1"),
        now_ms: 0,
        progress: None,
        traceparent: None,
        idempotency_key: None,
        links: None,
        input: None,
    };
    connector.call(request).await.map(|envelope| {
        assert_eq!(envelope.status, EnvelopeStatus::Ok);
        envelope.payload
    })
}

fn no_secret_in(text: &str) {
    for secret in [CLIENT_SECRET, API_KEY] {
        assert!(!text.contains(secret), "a secret leaked: {text}");
    }
}

#[tokio::test]
async fn a_token_is_fetched_on_the_challenge_cached_and_sent() {
    let app = serve(Script {
        lifetime: Some(3600),
        ..Script::default()
    })
    .await;
    let c = connector();
    let config = config(&app, oauth());
    c.check_config("whoami", &config).unwrap();
    let payload = call(&c, &config).await.unwrap();
    assert_eq!(payload["scopes"], json!(["read"]));
    call(&c, &config).await.unwrap();
    let seen = app.seen.lock().unwrap();
    assert_eq!(seen.token_requests.len(), 1, "the token is cached");
    let request = &seen.token_requests[0];
    assert_eq!(
        request.basic,
        Some((CLIENT_ID.to_owned(), CLIENT_SECRET.to_owned())),
        "client_secret_basic, as the server lists"
    );
    assert_eq!(request.form["grant_type"], "client_credentials");
    assert_eq!(request.form["scope"], "read", "the challenge's scope");
    assert_eq!(request.form["resource"], format!("{}/mcp", app.base));
    assert!(!request.form.contains_key("client_secret"));
    // The first request went without a token (its challenge led to the metadata); every
    // one after it carried the token.
    assert_eq!(seen.mcp_auth[0], None);
    assert!(seen.mcp_auth.len() >= 4, "{:?}", seen.mcp_auth);
    assert!(
        seen.mcp_auth[1..]
            .iter()
            .all(|a| a.as_deref() == Some("Bearer tok-1")),
        "{:?}",
        seen.mcp_auth
    );
    no_secret_in(&format!("{c:?}"));
}

#[tokio::test]
async fn a_refused_token_is_renewed_once_and_the_call_goes_through() {
    let app = serve(Script::default()).await;
    let c = connector();
    let config = config(&app, oauth());
    call(&c, &config).await.unwrap();
    // The token expires (or is revoked) between two calls.
    app.seen.lock().unwrap().revoked.push("tok-1".to_owned());
    call(&c, &config).await.unwrap();
    let seen = app.seen.lock().unwrap();
    assert_eq!(seen.token_requests.len(), 2);
    assert_eq!(
        seen.mcp_auth.last().unwrap().as_deref(),
        Some("Bearer tok-2")
    );
}

#[tokio::test]
async fn a_token_about_to_expire_is_not_sent() {
    // Ten seconds is within the renewal margin: each call fetches a new token.
    let app = serve(Script {
        lifetime: Some(10),
        ..Script::default()
    })
    .await;
    let c = connector();
    let config = config(&app, oauth());
    call(&c, &config).await.unwrap();
    let before = app.seen.lock().unwrap().token_requests.len();
    call(&c, &config).await.unwrap();
    let seen = app.seen.lock().unwrap();
    assert!(seen.token_requests.len() > before);
    // The second call did not send the first call's token.
    assert_eq!(
        seen.mcp_auth.last().unwrap().as_deref(),
        Some(format!("Bearer tok-{}", seen.token_requests.len()).as_str())
    );
}

#[tokio::test]
async fn insufficient_scope_steps_up_to_the_added_scope() {
    let app = serve(Script {
        call_scope: Some("write"),
        ..Script::default()
    })
    .await;
    let c = connector();
    let config = config(&app, oauth());
    let payload = call(&c, &config).await.unwrap();
    assert_eq!(payload["scopes"], json!(["read", "write"]));
    let seen = app.seen.lock().unwrap();
    assert_eq!(seen.token_requests.len(), 2);
    assert_eq!(seen.token_requests[1].form["scope"], "read write");
}

#[tokio::test]
async fn step_up_is_bounded_and_the_refusal_is_plain() {
    // The authorization server never grants `admin`: every step-up is refused again.
    let app = serve(Script {
        call_scope: Some("admin"),
        ..Script::default()
    })
    .await;
    let c = connector();
    let config = config(&app, oauth());
    let e = call(&c, &config).await.unwrap_err();
    assert!(matches!(e, ConnectorError::Unavailable(_)), "{e:?}");
    let text = e.to_string();
    assert!(text.contains("Insufficient scope"), "{text}");
    no_secret_in(&text);
    let seen = app.seen.lock().unwrap();
    assert!(
        seen.token_requests.len() <= 3,
        "one token and at most two step-ups: {}",
        seen.token_requests.len()
    );
}

#[tokio::test]
async fn authorization_server_faults_end_in_plain_secret_free_errors() {
    let cases: Vec<(Script, &str)> = vec![
        (
            Script {
                token_refusal: Some((
                    400,
                    json!({"error": "invalid_client", "error_description": format!("bad secret {CLIENT_SECRET}")})
                        .to_string(),
                )),
                ..Script::default()
            },
            "refused a token: invalid_client (bad secret <redacted>)",
        ),
        (
            Script {
                token_refusal: Some((500, "<html>oops</html>".to_owned())),
                ..Script::default()
            },
            "refused a token: HTTP 500",
        ),
        (
            Script {
                token_refusal: Some((200, json!({"token_type": "Bearer"}).to_string())),
                ..Script::default()
            },
            "the token response is not usable",
        ),
        (
            Script {
                token_refusal: Some((200, json!({"access_token": "x", "token_type": "MAC"}).to_string())),
                ..Script::default()
            },
            "the token type is MAC, not Bearer",
        ),
        (
            Script {
                metadata: Some("{not json".to_owned()),
                ..Script::default()
            },
            "not the expected JSON",
        ),
        (
            Script {
                metadata: Some(
                    json!({"issuer": "https://elsewhere.example", "token_endpoint": "https://elsewhere.example/token"})
                        .to_string(),
                ),
                ..Script::default()
            },
            "names another issuer, https://elsewhere.example",
        ),
        (
            // A token for another audience: the resource refuses every token.
            Script {
                refuse_all: true,
                ..Script::default()
            },
            "Auth required",
        ),
    ];
    for (script, expected) in cases {
        let app = serve(script).await;
        let c = connector();
        let config = config(&app, oauth());
        let e = call(&c, &config).await.unwrap_err();
        let text = e.to_string();
        assert!(text.contains(expected), "expected {expected:?} in: {text}");
        assert!(
            text.contains(&format!("MCP server {}/mcp", app.base)),
            "{text}"
        );
        no_secret_in(&text);
        no_secret_in(&format!("{e:?}"));
        // Bounded: one token request for the session start, one retry at most.
        assert!(app.seen.lock().unwrap().token_requests.len() <= 2);
    }
}

#[tokio::test]
async fn static_headers_carry_their_secret() {
    let app = serve(Script {
        api_key: true,
        ..Script::default()
    })
    .await;
    let c = connector();
    let keyed = config(
        &app,
        json!({"headers": {"X-Api-Key": {"env": "MCP_API_KEY"}}}),
    );
    c.check_config("whoami", &keyed).unwrap();
    call(&c, &keyed).await.unwrap();
    let bare = config(&app, json!({}));
    let e = call(&c, &bare).await.unwrap_err();
    no_secret_in(&e.to_string());
    let unset = config(
        &app,
        json!({"headers": {"X-Api-Key": {"env": "UNSET_VAR"}}}),
    );
    let e = c.check_config("whoami", &unset).unwrap_err();
    assert!(
        e.contains("server.headers.X-Api-Key") || e.contains("server.headers.x-api-key"),
        "{e}"
    );
}

#[test]
fn bad_auth_settings_are_named() {
    let c = connector();
    let app_base = "http://127.0.0.1:1";
    let base = |server: Value| json!({"kind": "mcp", "server": server, "tool": "t", "domain_type": "d", "enricher_id": "e", "version": "1.0.0"});
    for (server, expected) in [
        (
            json!({"url": format!("{app_base}/mcp"), "oauth": {"client_secret": {"env": "MCP_CLIENT_SECRET"}}}),
            "server.oauth.client_id: required",
        ),
        (
            json!({"url": format!("{app_base}/mcp"), "oauth": {"client_id": "x"}}),
            "exactly one of client_secret and private_key",
        ),
        (
            json!({"url": format!("{app_base}/mcp"), "oauth": {"client_id": "x", "client_secret": "inline"}}),
            "a secret by reference",
        ),
        (
            json!({"url": format!("{app_base}/mcp"), "oauth": {"client_id": "x", "client_secret": {"env": "MCP_CLIENT_SECRET"}, "token_endpoint_auth": "private_key_jwt"}}),
            "does not go with client_secret",
        ),
        (
            json!({"url": format!("{app_base}/mcp"), "oauth": {"client_id": "x", "client_secret": {"env": "UNSET_VAR"}}}),
            "server.oauth: the environment variable UNSET_VAR is not set",
        ),
        (
            json!({"url": format!("{app_base}/mcp"), "oauth": {"client_id": "x", "private_key": {"env": "MCP_CLIENT_SECRET"}}}),
            "not a PKCS#8 PEM key",
        ),
        (
            json!({"url": format!("{app_base}/mcp"), "headers": {"Authorization": "Bearer x"}, "oauth": {"client_id": "x", "client_secret": {"env": "MCP_CLIENT_SECRET"}}}),
            "give one",
        ),
        (
            json!({"command": ["x"], "headers": {"X": "y"}}),
            "server.headers applies to a `url` server",
        ),
        (
            json!({"url": format!("{app_base}/mcp"), "headers": {"Mcp-Session-Id": "y"}}),
            "set by the connector itself",
        ),
        (
            json!({"url": format!("{app_base}/mcp"), "oauth": {"grant": "device_code"}}),
            "client_credentials (the default) or authorization_code",
        ),
        (
            json!({"url": format!("{app_base}/mcp"), "oauth": {"grant": "authorization_code"}}),
            "server.oauth.redirect_uri: required",
        ),
    ] {
        let e = c.check_config("t", &base(server)).unwrap_err();
        assert!(e.contains(expected), "expected {expected:?} in: {e}");
        no_secret_in(&e);
    }
    // A user's own sign-in is a setting like any other: the runtime keeps the links.
    let user = base(
        json!({"url": format!("{app_base}/mcp"), "oauth": {"grant": "authorization_code", "redirect_uri": "http://127.0.0.1:8787/v1/links/callback"}}),
    );
    assert_eq!(c.check_config("t", &user), Ok(()));
    assert!(c.acts_for_user(&user));
    assert!(!c.acts_for_user(&base(json!({"url": format!("{app_base}/mcp")}))));
}
