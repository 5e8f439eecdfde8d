//! Tools declared in YAML only, reached through the engine: an HTTP tool (the envelope
//! over HTTP, from a local server of this test's own) and an MCP tool whose description and
//! schema come from the server's listing (the `mcp` package's server over stdio). The
//! principal reaches both; their data reaches the specialists; the consulted record is
//! what ran.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::http::HeaderMap;
use axum::routing::get;
use baton_connectors::ConfiguredConnector;
use baton_core::Principal;
use baton_core::events::{Event, WireEvent};
use baton_core::message::Content;
use baton_core::ports::connector::Connector;
use baton_core::registry::Registry;
use baton_inproc::HeapStore;
use baton_inproc::scripted::ScriptedModel;
use baton_runtime::metrics::LocalMetrics;
use baton_runtime::registry_folder::{discover_tools, load_discovered};
use baton_runtime::{Runtime, TurnRequest};
use baton_testkit::registry::TestRegistry;
use baton_tests::local_model::installed;
use futures::StreamExt;
use serde_json::{Value, json};

const SCRIPT: &str = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      tool_calls:
        - { name: ask_rewards, args: { query: "my balance", intent_count: 2 } }
        - { name: ask_support, args: { query: "my receipt is missing points", intent_count: 2 } }
    - when: { purpose: compose }
      text: ["Done."]
  rewards:
    - { when: { after_tool_results: false }, tool_calls: [{ name: partner_points, args: { member: "m 1/2" } }] }
    - { when: { after_tool_results: true }, text: ["You have points."] }
  support:
    - { when: { after_tool_results: false }, tool_calls: [{ name: mcp_whoami, args: {} }] }
    - { when: { after_tool_results: true }, text: ["You are you."] }
"#;

/// A partner API answering envelopes for whoever the principal header names.
async fn partner() -> (String, Arc<Mutex<Vec<(String, String)>>>) {
    let seen: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let log = seen.clone();
    let app = Router::new().route(
        "/members/{member}/points",
        get(
            move |axum::extract::Path(member): axum::extract::Path<String>, headers: HeaderMap| {
                let log = log.clone();
                async move {
                    let principal = headers
                        .get("x-baton-principal")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_owned();
                    log.lock().unwrap().push((member, principal.clone()));
                    axum::Json(json!({
                        "status": "ok", "payload": {"points": 4321}, "partial": [],
                        "principal": principal, "version": "1.0.0",
                        "domain_type": "points", "enricher_id": "partner", "cache_meta": {}
                    }))
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), seen)
}

/// The `partner_points` tool: the member's points from `partner` over HTTP.
fn http_tool(partner: &str) -> String {
    format!(
        r#"  partner_points:
    description: The member's points at the partner.
    connector:
      kind: http
      url: "{partner}/members/{{member}}/points"
    schema: {{ type: object, properties: {{ member: {{ type: string }} }}, required: [member], additionalProperties: false }}
"#
    )
}

/// The tool `id`: the test MCP server's tool `tool` over stdio, with no description or
/// schema of its own (the server's listing gives them).
fn mcp_tool(id: &str, tool: &str) -> String {
    let (python, _) = installed();
    let server = baton_testkit::workspace_root().join("tests/mcp/server.py");
    format!(
        r#"  {id}:
    connector:
      kind: mcp
      server: {{ command: ["{python}", "{server}", "stdio"] }}
      tool: {tool}
      domain_type: {tool}
      enricher_id: test-mcp
      version: 1.0.0
"#,
        python = python.display(),
        server = server.display(),
    )
}

/// The test registry with `rewards` on `partner_points` and `support` on `support_tool`,
/// its tools' descriptions and schemas asked of their backends as `baton` does, and a
/// runtime over it with a recording scripted model.
async fn rig(
    extra_tools: String,
    support_tool: &str,
    script: &str,
    metrics: Arc<LocalMetrics>,
) -> (Runtime, Arc<ScriptedModel>, Registry) {
    let registry = TestRegistry {
        rewards_tool: "partner_points",
        extra_tools,
        ..TestRegistry::default()
    }
    .file(
        "agents/support.yaml",
        format!(
            "id: support\ndescription: Receipt problems and missing points.\nrole: native\n\
             model: m1\ntools: [{support_tool}]\nprompt_blocks: [support-instructions]\n\
             limits: {{ timeout_ms: 20000 }}\n"
        ),
    );
    let root = baton_testkit::workspace_root();
    let mut connectors = baton_connectors::default_connectors(&root);
    connectors.insert(
        "test".into(),
        Arc::new(ConfiguredConnector) as Arc<dyn Connector>,
    );
    let sources = registry.sources();
    let discovered = discover_tools(&sources, &connectors).await.unwrap();
    let registry = load_discovered(&sources, &connectors, &Default::default(), discovered).unwrap();
    let model = Arc::new(ScriptedModel::from_yaml(script).unwrap().recording());
    let runtime = Runtime::builder(Arc::new(registry.clone()))
        .model_override(model.clone())
        .store(Arc::new(HeapStore::new()))
        .metrics(metrics)
        .connectors(connectors)
        .build()
        .unwrap();
    (runtime, model, registry)
}

#[tokio::test]
async fn an_http_tool_and_an_mcp_tool_declared_in_yaml_serve_specialists() {
    let (partner, seen) = partner().await;
    let tools = http_tool(&partner) + &mcp_tool("mcp_whoami", "whoami");
    let (runtime, model, registry) = rig(
        tools,
        "mcp_whoami",
        SCRIPT,
        Arc::new(LocalMetrics::default()),
    )
    .await;
    // The MCP tool's description and schema are the server's.
    let tool = registry.tools().find(|t| &*t.id == "mcp_whoami").unwrap();
    assert_eq!(&*tool.description, "The Baton metadata this call carried.");
    assert_eq!(tool.schema["type"], "object");

    let alice = Principal::new("alice").unwrap();
    let stream = runtime
        .run_turn(TurnRequest::new(
            alice,
            "my balance, and my receipt is missing points",
        ))
        .await
        .unwrap();
    let events: Vec<WireEvent> = stream.collect().await;

    // The partner saw the principal and the encoded path argument.
    assert_eq!(
        *seen.lock().unwrap(),
        vec![("m 1/2".to_owned(), "alice".to_owned())]
    );
    // What each specialist's model got back from its tool.
    let results: Vec<(String, Value)> = model
        .requests()
        .iter()
        .flat_map(|r| {
            let agent = r.agent_id.to_string();
            r.messages
                .iter()
                .flat_map(|m| m.content.clone())
                .filter_map(move |c| match c {
                    Content::ToolResult { content, .. } => Some((agent.clone(), content)),
                    _ => None,
                })
        })
        .collect();
    let text = |agent: &str| {
        results
            .iter()
            .filter(|(a, _)| a == agent)
            .map(|(_, c)| c.to_string())
            .collect::<String>()
    };
    assert!(text("rewards").contains("4321"), "{results:?}");
    assert!(
        text("support").contains("alice"),
        "the MCP server got the principal: {results:?}"
    );
    let consulted = events
        .iter()
        .find_map(|e| match &e.event {
            Event::AgentsConsulted { agents, .. } => Some(agents.clone()),
            _ => None,
        })
        .unwrap();
    let ids: Vec<&str> = consulted.iter().map(|c| c.agent_id.as_str()).collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(consulted.iter().all(|c| c.tool_calls == 1), "{consulted:?}");
}

const FAULT_SCRIPT: &str = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      tool_calls:
        - { name: ask_rewards, args: { query: "my balance", intent_count: 2 } }
        - { name: ask_support, args: { query: "my receipt is missing points", intent_count: 2 } }
    - when: { purpose: compose }
      text: ["Part of this is unavailable right now."]
  rewards:
    - { when: { after_tool_results: false }, tool_calls: [{ name: partner_points, args: { member: "m1" } }] }
    - { when: { after_tool_results: true }, text: ["Balance unavailable."] }
  support:
    - { when: { after_tool_results: false }, tool_calls: [{ name: mcp_crash, args: {} }] }
    - { when: { after_tool_results: true }, text: ["Receipts unavailable."] }
"#;

/// A partner API that is down and an MCP server that dies mid-call: each specialist gets
/// the plain "unavailable", the turn is answered, the user sees none of the backends'
/// words, and the metrics count both.
#[tokio::test]
async fn a_backend_that_is_down_and_a_server_that_crashes_become_plain_unavailable() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let down = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let metrics = Arc::new(LocalMetrics::default());
    let tools = http_tool(&down) + &mcp_tool("mcp_crash", "crash");
    let (runtime, model, _) = rig(tools, "mcp_crash", FAULT_SCRIPT, metrics.clone()).await;
    let alice = Principal::new("alice").unwrap();
    let stream = runtime
        .run_turn(TurnRequest::new(
            alice,
            "my balance, and my receipt is missing points",
        ))
        .await
        .unwrap();
    let events: Vec<WireEvent> = stream.collect().await;
    let completed = events
        .iter()
        .any(|e| matches!(e.event, Event::Completed { .. }));
    assert!(completed, "the turn is answered");
    let results: Vec<String> = model
        .requests()
        .iter()
        .filter(|r| &*r.agent_id != "orchestrator")
        .flat_map(|r| r.messages.iter().flat_map(|m| m.content.clone()))
        .filter_map(|c| match c {
            Content::ToolResult { content, .. } => Some(content.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(
        results.iter().all(|r| r.contains("unavailable")),
        "{results:?}"
    );
    let everything = format!("{events:?}{results:?}");
    for leak in [
        "refused",
        "os error",
        "exited",
        "EOF",
        "transport",
        "Traceback",
    ] {
        assert!(!everything.contains(leak), "{leak:?} leaked: {everything}");
    }
    let counted = metrics.snapshot();
    assert_eq!(
        counted.get("tool_calls_total,tool=partner_points,outcome=unavailable"),
        Some(&1),
        "{counted:?}"
    );
    assert_eq!(
        counted.get("tool_calls_total,tool=mcp_crash,outcome=unavailable"),
        Some(&1),
        "{counted:?}"
    );
}
