//! The `mcp` connector as the client under test of the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`): the suite runs this program with its test
//! server's URL as the last argument, the scenario's name in `MCP_CONFORMANCE_SCENARIO`,
//! and, for scenarios that hand the client credentials, a JSON context in
//! `MCP_CONFORMANCE_CONTEXT`. The program configures one `mcp` tool exactly as a
//! `tools.yaml` would (the credentials by reference), discovers it and calls it.
//!
//! A scenario that hands over no client credentials is one where a user signs in (the
//! authorization-code grant): the tool's server gets `grant: authorization_code`, and the
//! "user" is a stand-in that opens the authorization URL and reads where the suite's
//! authorization server sends the browser back (it approves at once), as a user's browser
//! would land on Baton's callback.
//!
//! The connectors' conformance test runs it (docs/connectors-mcp.md, "Conformance").

use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::Arc;

use baton_connectors::{McpConnector, SecretRef, SecretSource, UserAuthorizer};
use baton_core::Principal;
use baton_core::input::InputGiven;
use baton_core::ports::connector::{Connector, ConnectorError, ConnectorRequest};
use serde_json::{Value, json};

/// The credentials the suite hands over, served as if they were environment variables.
struct ContextSecrets(HashMap<String, String>);

impl SecretSource for ContextSecrets {
    fn resolve(&self, reference: &SecretRef) -> Result<String, String> {
        match reference {
            SecretRef::Env(name) => self
                .0
                .get(name)
                .cloned()
                .ok_or_else(|| format!("the environment variable {name} is not set")),
            SecretRef::Arn(_) => Err("no ARNs here".to_owned()),
        }
    }
}

/// The tool each scenario's server offers, and the arguments to call it with; `None`:
/// the server offers no tool (the handshake is the test).
fn tool_of(scenario: &str) -> Option<(&'static str, Value)> {
    match scenario {
        "initialize" => None,
        "tools_call" => Some(("add_numbers", json!({"a": 5, "b": 3}))),
        "sse-retry" => Some(("test_reconnection", json!({}))),
        "elicitation-sep1034-client-defaults" => {
            Some(("test_client_elicitation_defaults", json!({})))
        }
        // Every auth/* scenario's server offers this one.
        _ => Some(("test-tool", json!({}))),
    }
}

/// Where the stand-in user's browser is sent back to.
const REDIRECT_URI: &str = "http://localhost:3000/callback";
/// The client ID metadata document URL the suite expects a client to use where the
/// authorization server takes one.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// The user, for the suite's authorization server, which approves at once: opens the
/// authorization URL and reads where the browser is sent back (the redirect's
/// `Location`), without following it.
struct StandInUser(reqwest::Client);

#[async_trait::async_trait]
impl UserAuthorizer for StandInUser {
    async fn sign_in(&self, authorize_url: &str, redirect_uri: &str) -> Result<String, String> {
        let response = self
            .0
            .get(authorize_url)
            .send()
            .await
            .map_err(|e| format!("the authorization page could not be opened: {e}"))?;
        let landed = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| {
                format!(
                    "the authorization page answered {} without sending the browser back",
                    response.status()
                )
            })?;
        if !landed.starts_with(redirect_uri) {
            return Err(format!(
                "the browser was sent to {landed}, not back to {redirect_uri}"
            ));
        }
        Ok(landed.to_owned())
    }
}

/// The `server:` block: the URL, and the OAuth client the context describes (none for a
/// scenario where the user signs in).
fn server_of(
    url: &str,
    scenario: &str,
    context: &Value,
    secrets: &mut HashMap<String, String>,
) -> Value {
    let mut server = json!({"url": url});
    let Some(client_id) = context.get("client_id").and_then(Value::as_str) else {
        if scenario.starts_with("auth/") {
            server["oauth"] = json!({
                "grant": "authorization_code",
                "redirect_uri": REDIRECT_URI,
                "client_metadata_url": CLIENT_METADATA_URL,
                "client_name": "Baton conformance client",
            });
        }
        return server;
    };
    let mut oauth = json!({"client_id": client_id});
    if let Some(secret) = context.get("client_secret").and_then(Value::as_str) {
        secrets.insert("CONFORMANCE_CLIENT_SECRET".into(), secret.into());
        oauth["client_secret"] = json!({"env": "CONFORMANCE_CLIENT_SECRET"});
    }
    if let Some(key) = context.get("private_key_pem").and_then(Value::as_str) {
        secrets.insert("CONFORMANCE_PRIVATE_KEY".into(), key.into());
        oauth["private_key"] = json!({"env": "CONFORMANCE_PRIVATE_KEY"});
        if let Some(algorithm) = context.get("signing_algorithm") {
            oauth["signing_algorithm"] = algorithm.clone();
        }
    }
    server["oauth"] = oauth;
    server
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let Some(url) = std::env::args().nth(1) else {
        eprintln!("usage: mcp_conformance_client <server URL>");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null);
    baton_connectors::install_tls_provider();
    let mut secrets = HashMap::new();
    let server = server_of(&url, &scenario, &context, &mut secrets);
    let browser = match reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
    {
        Ok(browser) => browser,
        Err(e) => {
            eprintln!("no HTTP client: {e}");
            return ExitCode::FAILURE;
        }
    };
    let connector = McpConnector::with_secret_source(
        std::path::Path::new("."),
        Arc::new(ContextSecrets(secrets)),
    )
    .with_user_authorizer(Arc::new(StandInUser(browser)));
    let (tool, args) = tool_of(&scenario).unwrap_or(("none", json!({})));
    let config = json!({
        "kind": "mcp",
        "server": server,
        "tool": tool,
        "domain_type": "conformance",
        "enricher_id": "mcp-conformance",
        "version": "1.0.0",
        "connect_timeout_ms": 20000,
    });
    if let Err(e) = connector.check_config(tool, &config) {
        eprintln!("{e}");
        return ExitCode::FAILURE;
    }
    match connector.discover(tool, &config).await {
        Ok(_) => {}
        // The initialize scenario's server lists no tools: the handshake and the listing
        // are what it checks.
        Err(e) if tool_of(&scenario).is_none() && e.contains("has no such tool") => {
            println!("initialized; the server lists no tools");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    }
    let Ok(principal) = Principal::new("conformance") else {
        return ExitCode::FAILURE;
    };
    let request = ConnectorRequest {
        tool_id: Arc::from(tool),
        config: Arc::new(config),
        args,
        principal,
        episode_id: Arc::from("conformance"),
        agent_id: Arc::from("conformance"),
        now_ms: 0,
        progress: None,
        traceparent: None,
        idempotency_key: None,
        links: None,
        input: None,
    };
    let answer = match connector.call(request.clone()).await {
        // The server asked the user something: the stand-in user accepts the form as it
        // stands (its defaults), and the call is made again with that answer, as a turn
        // does once the user has answered (D-36).
        Err(ConnectorError::NeedsInput(asked)) => match asked.content_from("ok") {
            Ok(content) => {
                let given = InputGiven {
                    message: asked.message,
                    content,
                };
                connector
                    .call(ConnectorRequest {
                        input: Some(Arc::new(given)),
                        ..request
                    })
                    .await
            }
            Err(problem) => {
                eprintln!("the stand-in user cannot answer: {problem}");
                return ExitCode::FAILURE;
            }
        },
        other => other,
    };
    match answer {
        Ok(envelope) => {
            println!("{}", serde_json::to_string(&envelope).unwrap_or_default());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
