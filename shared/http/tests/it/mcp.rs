//! The MCP face through `oneshot`, as JSON-RPC over streamable HTTP: initialization, the
//! tool list, a call's answer, progress and consulted record, a Direct Line call,
//! protocol errors, the caller's conversations, and refusals.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use baton_http::PRINCIPAL_HEADER;
use serde_json::{Value, json};

use crate::support::*;

/// A JSON-RPC request to `/mcp` with `host`, as `principal` when given.
fn post(body: &str, principal: Option<&str>, host: &str) -> Request<Body> {
    let mut req = Request::post("/mcp")
        .header("host", host)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(p) = principal {
        req = req.header(PRINCIPAL_HEADER, p);
    }
    req.body(Body::from(body.to_owned())).unwrap()
}

fn rpc(id: u32, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// The JSON-RPC messages of a response: its SSE `data:` lines, or its JSON body.
async fn messages(state: &baton_http::AppState, req: Request<Body>) -> (StatusCode, Vec<Value>) {
    let response = send(state, req).await;
    let status = response.status();
    let body = text(response).await;
    let data: Vec<Value> = body
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    if data.is_empty() && !body.trim().is_empty() {
        return (
            status,
            vec![serde_json::from_str(&body).unwrap_or(json!(body))],
        );
    }
    (status, data)
}

/// The one response (the message with an `id`) among `messages`.
fn response(messages: &[Value]) -> &Value {
    messages
        .iter()
        .find(|m| m.get("id").is_some())
        .unwrap_or_else(|| panic!("no response in {messages:?}"))
}

async fn call(
    state: &baton_http::AppState,
    principal: Option<&str>,
    tool: &str,
    arguments: Value,
) -> Vec<Value> {
    let body = rpc(
        7,
        "tools/call",
        json!({"name": tool, "arguments": arguments, "_meta": {"progressToken": "p-1"}}),
    );
    let (status, messages) = messages(state, post(&body, principal, "127.0.0.1:8787")).await;
    assert_eq!(status, StatusCode::OK, "{messages:?}");
    messages
}

fn answer_text(result: &Value) -> String {
    result["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["type"] == "text")
        .map(|c| c["text"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn initialize_names_baton_and_offers_tools_only() {
    let state = Rig::default().state();
    let init = rpc(
        1,
        "initialize",
        json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}
        }),
    );
    let (status, messages) = messages(&state, post(&init, None, "localhost:8787")).await;
    assert_eq!(status, StatusCode::OK, "{messages:?}");
    let result = &response(&messages)["result"];
    assert_eq!(result["serverInfo"]["name"], "baton", "{result}");
    assert_eq!(result["protocolVersion"], "2025-11-25");
    assert!(result["capabilities"]["tools"].is_object(), "{result}");
    for absent in ["resources", "prompts", "logging", "completions"] {
        assert!(result["capabilities"].get(absent).is_none(), "{result}");
    }
}

#[tokio::test]
async fn the_tools_are_ask_and_one_direct_line_per_specialist() {
    let state = Rig::default().state();
    let (_, messages) = messages(
        &state,
        post(&rpc(2, "tools/list", json!({})), None, "127.0.0.1"),
    )
    .await;
    let tools = response(&messages)["result"]["tools"]
        .as_array()
        .unwrap()
        .clone();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["ask", "ask_shop", "ask_support", "ask_rewards"]);
    for tool in &tools {
        assert_eq!(
            tool["inputSchema"]["required"],
            json!(["message"]),
            "{tool}"
        );
        assert!(
            tool["outputSchema"]["properties"]["consulted"].is_object(),
            "{tool}"
        );
    }
    // Descriptions come from the cards.
    assert!(
        tools[1]["description"]
            .as_str()
            .unwrap()
            .contains("Offers, deals and product search."),
        "{}",
        tools[1]
    );
}

#[tokio::test]
async fn a_call_answers_with_the_text_and_the_consulted_record() {
    let state = Rig::default().state();
    let messages = call(&state, None, "ask", json!({"message": "coffee deals"})).await;
    let result = &response(&messages)["result"];
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(answer_text(result), format!("Let me look. \n\n{ANSWER}"));
    let structured = &result["structuredContent"];
    assert_eq!(
        structured["consulted"][0]["agent_id"], "shop",
        "{structured}"
    );
    assert_eq!(structured["consulted"][0]["status"], "ok");
    assert_eq!(structured["footer"], "Consulted: Shop");
    assert_eq!(structured["outcome"], "answered");
    assert_eq!(structured["privacy"]["total"], 0);
    assert!(structured["turn_id"].is_string() && structured["episode_id"].is_string());
}

#[tokio::test]
async fn progress_lines_arrive_as_progress_notifications_before_the_result() {
    let state = Rig {
        script: r#"
agents:
  orchestrator:
    - when: { purpose: route }
      tool_calls: [{ name: ask_rewards, args: { query: "my points", intent_count: 1 } }]
    - when: { purpose: compose }
      text: ["You have 1200 points."]
  rewards:
    - when: { after_tool_results: false }
      tool_calls: [{ name: points_balance, args: {} }]
    - when: { after_tool_results: true }
      text: ["1200 points."]
"#
        .into(),
        ..Rig::default()
    }
    .state();
    let all = call(&state, None, "ask", json!({"message": "my points"})).await;
    let progress: Vec<&Value> = all
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert!(!progress.is_empty(), "no progress in {all:?}");
    assert_eq!(progress[0]["params"]["progressToken"], "p-1");
    assert_eq!(
        progress[0]["params"]["message"],
        "Rewards is checking your points…"
    );
    let at = |m: &Value| all.iter().position(|x| x == m).unwrap();
    assert!(at(progress[0]) < at(response(&all)));
    // Without a token, no notifications.
    let body = rpc(
        8,
        "tools/call",
        json!({"name": "ask", "arguments": {"message": "my points"}}),
    );
    let (_, quiet) = messages(&state, post(&body, None, "127.0.0.1")).await;
    assert!(quiet.iter().all(|m| m.get("method").is_none()), "{quiet:?}");
}

#[tokio::test]
async fn a_direct_line_call_returns_the_specialists_words_verbatim() {
    let state = Rig {
        script: r#"
agents:
  orchestrator:
    - when: { purpose: compose }
      text: ["The orchestrator's own words."]
  shop:
    - text: ["Shop's own words, exactly."]
"#
        .into(),
        ..Rig::default()
    }
    .state();
    let messages = call(&state, None, "ask_shop", json!({"message": "any deals?"})).await;
    let result = &response(&messages)["result"];
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(answer_text(result), "Shop's own words, exactly.");
    assert_eq!(
        result["structuredContent"]["consulted"][0]["agent_id"],
        "shop"
    );
}

#[tokio::test]
async fn protocol_errors_are_json_rpc_errors_with_plain_messages() {
    let state = Rig::default().state();
    let unknown = call(&state, None, "ask_nobody", json!({"message": "hi"})).await;
    let error = &response(&unknown)["error"];
    assert_eq!(error["code"], -32602, "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("no tool named `ask_nobody`"),
        "{error}"
    );

    let bad = call(&state, None, "ask", json!({"text": "hi"})).await;
    let error = &response(&bad)["error"];
    assert_eq!(error["code"], -32602, "{error}");
    assert!(
        error["message"].as_str().unwrap().contains("`text`"),
        "{error}"
    );

    let (status, malformed) = messages(&state, post("{not json", None, "127.0.0.1")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{malformed:?}");
    let error = &malformed[0]["error"];
    assert_eq!(error["code"], -32700, "{malformed:?}");
    assert_eq!(error["message"], "the request body is not valid JSON");
    let (status, shapeless) = messages(&state, post(r#"{"method": 3}"#, None, "127.0.0.1")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{shapeless:?}");
    assert_eq!(shapeless[0]["error"]["code"], -32600, "{shapeless:?}");
}

#[tokio::test]
async fn a_refused_turn_is_a_tool_error_with_the_runtimes_words() {
    let state = Rig {
        max_message_chars: 5,
        ..Rig::default()
    }
    .state();
    let messages = call(&state, None, "ask", json!({"message": "far too long"})).await;
    let result = &response(&messages)["result"];
    assert_eq!(result["isError"], true, "{result}");
    assert!(!answer_text(result).is_empty(), "{result}");
}

#[tokio::test]
async fn without_a_principal_the_request_is_refused() {
    let state = Rig {
        default_principal: None,
        ..Rig::default()
    }
    .state();
    let response = send(
        &state,
        post(&rpc(1, "tools/list", json!({})), None, "127.0.0.1"),
    )
    .await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    let (code, message) = error_of(response).await;
    assert_eq!(code, "unauthorized");
    assert!(message.contains("principal"), "{message}");
}

#[tokio::test]
async fn a_conversation_continues_for_its_caller_and_no_one_else() {
    let state = Rig::default().state();
    let episode = |messages: Vec<Value>| {
        response(&messages)["result"]["structuredContent"]["episode_id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let args = json!({"message": "coffee deals", "conversation": "c-1"});
    let alice = episode(call(&state, Some("alice"), "ask", args.clone()).await);
    let again = episode(call(&state, Some("alice"), "ask", args.clone()).await);
    assert_eq!(alice, again, "a follow-up continues the conversation");
    let bob = episode(call(&state, Some("bob"), "ask", args).await);
    assert_ne!(
        bob, alice,
        "another caller's same id is another conversation"
    );
    let fresh = episode(
        call(
            &state,
            Some("alice"),
            "ask",
            json!({"message": "coffee deals"}),
        )
        .await,
    );
    assert_ne!(fresh, alice, "no conversation: a new one");
}

#[tokio::test]
async fn a_host_that_is_not_allowed_is_refused() {
    let state = Rig::default().state();
    let response = send(
        &state,
        post(
            &rpc(1, "tools/list", json!({})),
            Some("alice"),
            "evil.example.com",
        ),
    )
    .await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);

    let allowed = Rig::default()
        .state()
        .with_hosts(baton_http::AllowedHosts::Loopback(vec![
            "baton.internal".into(),
        ]));
    let response = send(
        &allowed,
        post(
            &rpc(1, "tools/list", json!({})),
            Some("alice"),
            "baton.internal:8787",
        ),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
}

#[tokio::test]
async fn a_page_of_another_site_is_refused_even_with_an_allowed_host() {
    let state = Rig::default().state();
    let from = |origin: &str| {
        let mut req = post(
            &rpc(1, "tools/list", json!({})),
            Some("alice"),
            "127.0.0.1:8787",
        );
        req.headers_mut().insert("origin", origin.parse().unwrap());
        req
    };
    for foreign in [
        "https://evil.example.com",
        "null",
        "file://",
        "http://127.0.0.1.evil.example",
    ] {
        let response = send(&state, from(foreign)).await;
        assert_eq!(response.status(), StatusCode::FORBIDDEN, "{foreign}");
    }
    let response = send(&state, from("http://127.0.0.1:8787")).await;
    assert_eq!(response.status(), StatusCode::OK);
}

/// Every route that acts as the configured principal has the host and origin rules of
/// `/mcp`: a page that rebinds its name to the loopback address reaches none of them.
#[tokio::test]
async fn every_route_refuses_a_foreign_host_and_a_foreign_origin() {
    let state = Rig::default().state();
    let routes = [
        ("POST", "/v1/turns", r#"{"message":"hi"}"#),
        (
            "POST",
            "/v1/chat/completions",
            r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#,
        ),
        ("POST", "/v1/agui", "{}"),
        ("POST", "/a2a", "{}"),
        ("GET", "/v1/agents", ""),
        ("GET", "/v1/episodes/ep_1", ""),
    ];
    for (method, path, body) in routes {
        let request = |host: &str, origin: Option<&str>| {
            let mut req = Request::builder()
                .method(method)
                .uri(path)
                .header("host", host)
                .header("content-type", "application/json");
            if let Some(origin) = origin {
                req = req.header("origin", origin);
            }
            req.body(Body::from(body.to_owned())).unwrap()
        };
        let rebound = send(&state, request("evil.example.com", None)).await;
        assert_eq!(rebound.status(), StatusCode::FORBIDDEN, "{method} {path}");
        assert!(text(rebound).await.contains("forbidden_host"));
        let foreign = send(
            &state,
            request("127.0.0.1:8787", Some("https://evil.example.com")),
        )
        .await;
        assert_eq!(foreign.status(), StatusCode::FORBIDDEN, "{method} {path}");
        let own = send(
            &state,
            request("127.0.0.1:8787", Some("http://127.0.0.1:8787")),
        )
        .await;
        assert_ne!(own.status(), StatusCode::FORBIDDEN, "{method} {path}");
    }
}

#[tokio::test]
async fn a_body_over_the_limit_is_refused_as_on_every_route() {
    // No pictures: a turn's body has no room beyond the limit (D-42).
    let state = Rig {
        max_body_bytes: Some(64),
        pictures: baton_core::picture::PictureLimits {
            max_pictures: 0,
            ..Default::default()
        },
        ..Rig::default()
    }
    .state();
    let big = call_body(&"x".repeat(200));
    let response = send(&state, post(&big, None, "127.0.0.1")).await;
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
}

fn call_body(message: &str) -> String {
    rpc(
        3,
        "tools/call",
        json!({"name": "ask", "arguments": {"message": message}}),
    )
}

#[tokio::test]
async fn a_waiting_turn_says_how_to_answer_and_the_next_call_in_the_conversation_answers() {
    let state = crate::resume::state();
    let args = json!({"message": "redeem my points", "conversation": "c-wait"});
    let first = call(&state, Some("alice"), "ask", args).await;
    let result = &response(&first)["result"];
    assert_eq!(
        result["structuredContent"]["outcome"], "awaiting_user",
        "{result}"
    );
    assert_eq!(
        result["structuredContent"]["interruption"]["kind"],
        "approval"
    );
    assert_eq!(
        result["structuredContent"]["interruption"]["asks"],
        "Redeem 800 points"
    );
    let said = answer_text(result);
    assert!(said.contains("call this tool again"), "{said}");

    let yes = json!({"message": "yes", "conversation": "c-wait"});
    let second = call(&state, Some("alice"), "ask", yes).await;
    let result = &response(&second)["result"];
    assert_eq!(
        result["structuredContent"]["outcome"], "answered",
        "{result}"
    );
    assert!(answer_text(result).contains("All done."), "{result}");
    let episode = result["structuredContent"]["episode_id"].as_str().unwrap();
    let history = send(
        &state,
        get(&format!("/v1/episodes/{episode}"), Some("alice")),
    )
    .await;
    let history: Value = serde_json::from_str(&text(history).await).unwrap();
    let last = history["turns"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["answered"]["face"], "mcp", "{last}");
}

#[tokio::test]
async fn a_question_is_answered_by_the_next_call_in_the_conversation() {
    let state = crate::resume::asking_state();
    let args = json!({"message": "redeem my points", "conversation": "c-q"});
    let first = call(&state, Some("alice"), "ask", args).await;
    let result = &response(&first)["result"];
    assert_eq!(
        result["structuredContent"]["interruption"]["kind"],
        "question"
    );
    let reply = json!({"message": "cash out", "conversation": "c-q"});
    let second = call(&state, Some("alice"), "ask", reply).await;
    let result = &response(&second)["result"];
    assert_eq!(
        result["structuredContent"]["outcome"], "answered",
        "{result}"
    );
}
