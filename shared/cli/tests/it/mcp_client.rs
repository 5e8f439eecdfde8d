//! The MCP face driven by the official MCP SDK for Rust (rmcp's client) against a real
//! `baton serve` at `/mcp` (streamable HTTP) and a real `baton mcp` over stdio, with the
//! shipped registry and a scripted model: the tools, a call whose progress lines arrive as
//! progress notifications before its result, the consulted record in the structured
//! content, and a Direct Line call answered word for word.

use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResult, NumberOrString, ProgressNotificationParam,
    ProgressToken, RequestMetaObject,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt as _};
use serde_json::{Value, json};

use crate::support::*;

/// Routes to `rewards`, whose points tool reports "Checking your points…" (a progress
/// line) before it answers; `shop` answers any Direct Line question with its own words.
const SCRIPT: &str = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      tool_calls: [{ name: ask_rewards, args: { query: "my points", intent_count: 1 } }]
    - when: { purpose: compose }
      text: ["You have ", "points to spend."]
  rewards:
    - when: { after_tool_results: false }
      tool_calls: [{ name: get_points_balance, args: {} }]
    - when: { after_tool_results: true }
      text: ["Your balance is ready."]
  shop:
    - text: ["Shop's own words, exactly."]
"#;

/// A client that keeps the progress notifications it receives.
#[derive(Clone, Default)]
struct Watcher {
    progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
}

impl ClientHandler for Watcher {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params);
    }
}

fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

async fn call(
    client: &RunningService<RoleClient, Watcher>,
    tool: &str,
    arguments: Value,
    token: Option<&str>,
) -> CallToolResult {
    let Value::Object(arguments) = arguments else {
        panic!("arguments are an object")
    };
    let mut params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
    if let Some(token) = token {
        let mut meta = RequestMetaObject::default();
        meta.set_progress_token(ProgressToken(NumberOrString::String(token.into())));
        params.meta = Some(meta);
    }
    client.call_tool(params).await.unwrap()
}

/// What both transports must show.
async fn exercise(client: RunningService<RoleClient, Watcher>, watcher: &Watcher) {
    let info = client.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().unwrap().name, "baton");
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names[0], "ask", "{names:?}");
    for specialist in ["ask_shop", "ask_support", "ask_rewards"] {
        assert!(names.contains(&specialist), "{names:?}");
    }

    let result = call(&client, "ask", json!({"message": "my points"}), Some("t-1")).await;
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert_eq!(text_of(&result), "You have points to spend.");
    let structured = result.structured_content.clone().unwrap();
    assert_eq!(
        structured["consulted"][0]["agent_id"], "rewards",
        "{structured}"
    );
    assert_eq!(structured["footer"], "Consulted: Rewards");
    // Notifications on a call's stream come before its result: they are all in by now.
    let progress = watcher.progress.lock().unwrap().clone();
    assert!(!progress.is_empty(), "no progress notification arrived");
    // (rmcp's client puts its own token on the request and routes the notifications by it.)
    assert_eq!(
        progress[0].message.as_deref(),
        Some("Checking your points…")
    );

    let direct = call(&client, "ask_shop", json!({"message": "any deals?"}), None).await;
    assert_eq!(direct.is_error, Some(false), "{direct:?}");
    assert_eq!(text_of(&direct), "Shop's own words, exactly.");
    let structured = direct.structured_content.unwrap();
    assert_eq!(
        structured["consulted"][0]["agent_id"], "shop",
        "{structured}"
    );

    let unknown = client
        .call_tool(
            CallToolRequestParams::new("ask_nobody")
                .with_arguments(json!({"message": "hi"}).as_object().unwrap().clone()),
        )
        .await;
    assert!(
        unknown
            .unwrap_err()
            .to_string()
            .contains("no tool named `ask_nobody`"),
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn the_official_rust_sdk_uses_baton_serve_over_streamable_http() {
    baton_connectors::install_tls_provider();
    let sandbox = Sandbox::new();
    let model = sandbox.script(SCRIPT);
    let serving = Serving::start(
        &sandbox,
        &["--registry", registry(), "--model", &model],
        &[],
    );
    let config =
        StreamableHttpClientTransportConfig::with_uri(format!("http://{}/mcp", serving.addr));
    let transport = StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
    let watcher = Watcher::default();
    let client = watcher.clone().serve(transport).await.unwrap();
    exercise(client, &watcher).await;
}

#[tokio::test]
async fn the_official_rust_sdk_uses_baton_mcp_over_stdio() {
    let sandbox = Sandbox::new();
    let model = sandbox.script(SCRIPT);
    let mut command = sandbox.baton();
    command.args(["--registry", registry(), "--model", &model, "mcp"]);
    let transport = TokioChildProcess::new(tokio::process::Command::from(command)).unwrap();
    let watcher = Watcher::default();
    let client = watcher.clone().serve(transport).await.unwrap();
    exercise(client, &watcher).await;
}

/// A client that can ask its user, who approves whatever is asked (and says so).
#[derive(Clone, Default)]
struct Approver {
    asked: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for Approver {
    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        let asked = serde_json::to_value(&request).unwrap();
        self.asked
            .lock()
            .unwrap()
            .push(asked["message"].as_str().unwrap_or_default().to_owned());
        Ok(
            serde_json::from_value(json!({"action": "accept", "content": {"approved": true}}))
                .unwrap(),
        )
    }

    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut info = rmcp::model::ClientConfig::default();
        info.capabilities.elicitation = Some(serde_json::from_value(json!({"form": {}})).unwrap());
        info
    }
}

#[tokio::test]
async fn a_client_that_can_ask_its_user_answers_an_approval_by_elicitation() {
    baton_connectors::install_tls_provider();
    let sandbox = Sandbox::new();
    let (ledger, registry) = crate::approvals::with_ledger(&sandbox);
    let model = sandbox.script(crate::approvals::SCRIPT);
    let serving = Serving::start(
        &sandbox,
        &["--registry", registry.to_str().unwrap(), "--model", &model],
        &[],
    );
    let config =
        StreamableHttpClientTransportConfig::with_uri(format!("http://{}/mcp", serving.addr));
    let transport = StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
    let approver = Approver::default();
    // Multi round-trip requests come with the protocol's 2026-07-28 version, which a client
    // starts with `server/discover`.
    let lifecycle = rmcp::service::ClientLifecycleMode::Discover {
        preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
    };
    let client = rmcp::service::ClientServiceExt::serve_with_lifecycle(
        approver.clone(),
        transport,
        lifecycle,
    )
    .await
    .unwrap();
    let Value::Object(arguments) = json!({"message": "redeem 800 points for me"}) else {
        unreachable!()
    };
    // The SDK fulfils the elicitation through the handler and calls again with the answer.
    let result = client
        .call_tool(CallToolRequestParams::new("ask").with_arguments(arguments))
        .await
        .unwrap();
    assert_eq!(
        approver.asked.lock().unwrap().as_slice(),
        ["Redeem 800 points (gift_card)"]
    );
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert!(
        text_of(&result).contains("All done with your points."),
        "{result:?}"
    );
    let structured = result.structured_content.unwrap();
    assert_eq!(structured["outcome"], "answered", "{structured}");
    assert_eq!(ledger.redemptions().len(), 1, "{:?}", ledger.redemptions());
}

/// `baton mcp` answers every line as JSON-RPC says, under the line's id when it can be
/// read: not JSON is a parse error (`id: null`), a known method with params it does not
/// take is invalid params, something else invalid request; a line past the size limit is
/// refused and skipped, and the next line is served.
#[test]
fn baton_mcp_answers_every_bad_line_and_goes_on() {
    use std::io::{BufRead as _, Write as _};
    let sandbox = Sandbox::new();
    let mut child = sandbox
        .baton()
        .args(["--registry", registry(), "--model", "offline", "mcp"])
        // No pictures: a line has no room beyond `max_body_bytes` (D-42).
        .env("BATON_MAX_PICTURES", "0")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":10,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat(200 * 1024)
    );
    for line in [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        "not json",
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":"x"}"#,
        r#"{"jsonrpc":"2.0","id":8}"#,
        r#"{"id":"nine","method":5}"#,
        &huge,
        r#"{"jsonrpc":"2.0","id":11,"method":"ping"}"#,
    ] {
        writeln!(stdin, "{line}").unwrap();
    }
    drop(stdin);
    let out = std::io::BufReader::new(child.stdout.take().unwrap());
    let answers: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(&l.unwrap()).unwrap())
        .collect();
    assert!(child.wait().unwrap().success());
    let of = |id: serde_json::Value| {
        answers
            .iter()
            .filter(|a| a["id"] == id)
            .cloned()
            .collect::<Vec<_>>()
    };
    assert!(
        of(json!(1))[0]["result"]["serverInfo"].is_object(),
        "{answers:#?}"
    );
    assert_eq!(of(json!(7))[0]["error"]["code"], -32602, "{answers:#?}");
    assert_eq!(of(json!(8))[0]["error"]["code"], -32600, "{answers:#?}");
    assert_eq!(
        of(json!("nine"))[0]["error"]["code"],
        -32600,
        "{answers:#?}"
    );
    let unnamed: Vec<i64> = of(serde_json::Value::Null)
        .iter()
        .map(|a| a["error"]["code"].as_i64().unwrap())
        .collect();
    assert_eq!(
        unnamed,
        [-32700, -32600],
        "not JSON, then too long: {answers:#?}"
    );
    assert!(
        of(serde_json::Value::Null)[1]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("longer than"),
        "{answers:#?}"
    );
    assert_eq!(of(json!(10)), Vec::<serde_json::Value>::new());
    assert_eq!(of(json!(11))[0]["result"], json!({}), "{answers:#?}");
    assert_eq!(
        answers.len(),
        7,
        "one answer a line, none for the notification: {answers:#?}"
    );
}
