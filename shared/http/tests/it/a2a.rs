//! The A2A face through `oneshot`: the agent card, a streamed and a plain `SendMessage`,
//! a follow-up in the same context, `GetTask` from the journal, `CancelTask` of a running
//! turn, the Direct Line as a skill, another principal's task, and every refusal in
//! JSON-RPC's shape.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use baton_http::PRINCIPAL_HEADER;
use serde_json::{Value, json};

use crate::support::*;

fn rpc(method: &str, params: &Value, principal: Option<&str>) -> Request<Body> {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    raw(&body.to_string(), principal)
}

fn raw(body: &str, principal: Option<&str>) -> Request<Body> {
    let mut req = Request::post("/a2a")
        .header("content-type", "application/json")
        .header("a2a-version", "1.0");
    if let Some(p) = principal {
        req = req.header(PRINCIPAL_HEADER, p);
    }
    req.body(Body::from(body.to_owned())).unwrap()
}

fn message(id: &str, text: &str, context: Option<&str>) -> Value {
    let mut message = json!({ "messageId": id, "role": "ROLE_USER", "parts": [{ "text": text }] });
    if let Some(c) = context {
        message["contextId"] = json!(c);
    }
    json!({ "message": message })
}

/// The JSON-RPC response of a call that is not streamed.
async fn call(state: &baton_http::AppState, req: Request<Body>) -> Value {
    let response = send(state, req).await;
    assert_eq!(response.status(), StatusCode::OK);
    serde_json::from_str(&text(response).await).unwrap()
}

fn frames(stream: &str) -> Vec<Value> {
    stream
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str::<Value>(d).unwrap())
        .collect()
}

#[tokio::test]
async fn the_agent_card_lists_the_specialists_as_skills_and_how_to_authenticate() {
    let state = Rig::default()
        .state()
        .with_hosts(baton_http::AllowedHosts::Loopback(vec![
            "agents.example".into(),
        ]));
    let req = Request::get("/.well-known/agent-card.json")
        .header("host", "agents.example:8080")
        .body(Body::empty())
        .unwrap();
    let response = send(&state, req).await;
    assert_eq!(response.status(), StatusCode::OK);
    // Cacheable, one copy per host it names.
    let head = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    assert!(head("cache-control").contains("max-age"));
    assert!(
        head("last-modified").ends_with(" GMT"),
        "{}",
        head("last-modified")
    );
    assert!(head("vary").contains("Host"));
    let etag = head("etag");
    assert!(etag.starts_with('"') && etag.len() > 10, "{etag}");
    let card: Value = serde_json::from_str(&text(response).await).unwrap();
    let again = Request::get("/.well-known/agent-card.json")
        .header("host", "agents.example:8080")
        .header("if-none-match", etag.as_str())
        .body(Body::empty())
        .unwrap();
    assert_eq!(send(&state, again).await.status(), StatusCode::NOT_MODIFIED);
    let interface = &card["supportedInterfaces"][0];
    assert_eq!(interface["url"], "http://agents.example:8080/a2a");
    assert_eq!(interface["protocolBinding"], "JSONRPC");
    assert_eq!(interface["protocolVersion"], "1.0");
    assert_eq!(card["capabilities"]["streaming"], true);
    let skills: Vec<&str> = card["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(skills, ["orchestrator", "shop", "support", "rewards"]);
    assert!(
        card["skills"][1]["tags"]
            .as_array()
            .unwrap()
            .contains(&json!("direct-line"))
    );
    let scheme = &card["securitySchemes"]["principal"]["apiKeySecurityScheme"];
    assert_eq!(scheme["location"], "header");
    assert_eq!(scheme["name"], PRINCIPAL_HEADER);

    // With a public URL configured the card names it, whatever host it is asked under, and
    // no longer varies by host.
    let public = state.with_public_url(Some("https://assistant.example.com/".into()));
    let req = Request::get("/.well-known/agent-card.json")
        .header("host", "agents.example:8080")
        .body(Body::empty())
        .unwrap();
    let response = send(&public, req).await;
    let vary = response.headers()["vary"].to_str().unwrap().to_owned();
    assert!(!vary.contains("Host"), "{vary}");
    let card: Value = serde_json::from_str(&text(response).await).unwrap();
    assert_eq!(
        card["supportedInterfaces"][0]["url"],
        "https://assistant.example.com/a2a"
    );
}

#[tokio::test]
async fn a_streamed_message_is_a_task_with_working_updates_an_answer_artifact_and_the_record() {
    let state = Rig::default().state();
    let response = send(
        &state,
        rpc(
            "SendStreamingMessage",
            &message("m-1", "coffee deals", Some("ctx-1")),
            None,
        ),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let frames = frames(&text(response).await);
    let results: Vec<&Value> = frames.iter().map(|f| &f["result"]).collect();
    assert!(frames.iter().all(|f| f["jsonrpc"] == "2.0" && f["id"] == 1));
    let task = &results[0]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_SUBMITTED");
    assert_eq!(task["contextId"], "ctx-1");
    let task_id = task["id"].as_str().unwrap();
    assert_eq!(
        results[1]["statusUpdate"]["status"]["state"],
        "TASK_STATE_WORKING"
    );
    let chunks: Vec<&Value> = results
        .iter()
        .filter_map(|r| r.get("artifactUpdate"))
        .collect();
    let answer: String = chunks
        .iter()
        .flat_map(|c| c["artifact"]["parts"].as_array().unwrap())
        .map(|p| p["text"].as_str().unwrap())
        .collect();
    assert!(answer.contains(ANSWER), "{answer}");
    assert_eq!(chunks[0]["append"], false);
    assert_eq!(chunks.last().unwrap()["lastChunk"], true);
    // Every chunk holds a part with text, the last one too; only the last is last.
    for (i, chunk) in chunks.iter().enumerate() {
        let parts = chunk["artifact"]["parts"].as_array().unwrap();
        assert!(
            !parts.is_empty()
                && parts
                    .iter()
                    .all(|p| p["text"].as_str().is_some_and(|t| !t.is_empty())),
            "{chunk}"
        );
        assert_eq!(chunk["lastChunk"], i + 1 == chunks.len(), "{chunk}");
    }
    let last = &results.last().unwrap()["statusUpdate"];
    assert_eq!(last["taskId"], task_id);
    assert_eq!(last["status"]["state"], "TASK_STATE_COMPLETED");
    let record = &last["metadata"]["baton"];
    assert_eq!(record["consulted"][0]["agent_id"], "shop");
    assert_eq!(record["footer"], "Consulted: Shop");
    assert!(record["privacy"].is_object());
}

#[tokio::test]
async fn a_plain_message_answers_the_task_and_a_follow_up_continues_its_context() {
    let state = Rig::default().state();
    let first = call(
        &state,
        rpc(
            "SendMessage",
            &message("m-1", "coffee deals", Some("ctx-9")),
            None,
        ),
    )
    .await;
    let task = &first["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{first}");
    let answer = task["artifacts"][0]["parts"][0]["text"].as_str().unwrap();
    assert!(answer.ends_with(ANSWER), "{answer}");
    assert_eq!(
        task["metadata"]["baton"]["consulted"][0]["agent_id"],
        "shop"
    );
    let episode = task["metadata"]["baton"]["episode_id"].clone();

    let second = call(
        &state,
        rpc(
            "SendMessage",
            &message("m-2", "and tea?", Some("ctx-9")),
            None,
        ),
    )
    .await;
    let again = &second["result"]["task"];
    assert_eq!(again["metadata"]["baton"]["episode_id"], episode);
    assert_ne!(again["id"], task["id"]);

    // The same message again is the same task, replayed: the episode still has two turns.
    let retried = call(
        &state,
        rpc(
            "SendMessage",
            &message("m-1", "coffee deals", Some("ctx-9")),
            None,
        ),
    )
    .await;
    assert_eq!(retried["result"]["task"]["id"], task["id"]);
    let history = send(
        &state,
        get(&format!("/v1/episodes/{}", episode.as_str().unwrap()), None),
    )
    .await;
    let history: Value = serde_json::from_str(&text(history).await).unwrap();
    assert_eq!(history["turns"].as_array().unwrap().len(), 2);

    // GetTask reads it back from the journal; another principal finds nothing.
    let got = call(&state, rpc("GetTask", &json!({ "id": task["id"] }), None)).await;
    assert_eq!(got["result"]["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(got["result"]["artifacts"][0]["parts"][0]["text"], answer);
    assert_eq!(
        got["result"]["metadata"]["baton"]["footer"],
        "Consulted: Shop"
    );
    assert_eq!(got["result"]["history"].as_array().map(Vec::len), Some(1));
    // historyLength bounds the history it sends back; below 0 is refused.
    let none = call(
        &state,
        rpc(
            "GetTask",
            &json!({ "id": task["id"], "historyLength": 0 }),
            None,
        ),
    )
    .await;
    let kept = none["result"]["history"].as_array().map_or(0, Vec::len);
    assert_eq!(kept, 0, "{none}");
    let negative = call(
        &state,
        rpc(
            "GetTask",
            &json!({ "id": task["id"], "historyLength": -1 }),
            None,
        ),
    )
    .await;
    assert_eq!(negative["error"]["code"], -32602, "{negative}");
    let theirs = call(
        &state,
        rpc("GetTask", &json!({ "id": task["id"] }), Some("mallory")),
    )
    .await;
    assert_eq!(theirs["error"]["code"], -32001, "{theirs}");
    // Nor can they continue the context: theirs is another conversation.
    let other = call(
        &state,
        rpc(
            "SendMessage",
            &message("m-3", "coffee deals", Some("ctx-9")),
            Some("mallory"),
        ),
    )
    .await;
    assert_ne!(
        other["result"]["task"]["metadata"]["baton"]["episode_id"],
        episode
    );
}

#[tokio::test]
async fn cancel_stops_a_running_task_and_the_journal_says_canceled() {
    let state = Rig {
        script: script(60_000, 0),
        ..Rig::default()
    }
    .state();
    let mut params = message("m-1", "coffee deals", Some("ctx-c"));
    params["configuration"] = json!({ "returnImmediately": true });
    let started = call(&state, rpc("SendMessage", &params, None)).await;
    let task = &started["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_WORKING", "{started}");
    let id = json!({ "id": task["id"] });
    let working = call(&state, rpc("GetTask", &id, None)).await;
    assert_eq!(working["result"]["status"]["state"], "TASK_STATE_WORKING");

    let theirs = call(&state, rpc("CancelTask", &id, Some("mallory"))).await;
    assert_eq!(theirs["error"]["code"], -32001, "{theirs}");
    let canceled = call(&state, rpc("CancelTask", &id, None)).await;
    assert_eq!(
        canceled["result"]["status"]["state"], "TASK_STATE_CANCELED",
        "{canceled}"
    );
    assert_eq!(
        canceled["result"]["metadata"]["baton"]["outcome"],
        "canceled"
    );
    let got = call(&state, rpc("GetTask", &id, None)).await;
    assert_eq!(got["result"]["status"]["state"], "TASK_STATE_CANCELED");
    let again = call(&state, rpc("CancelTask", &id, None)).await;
    assert_eq!(again["error"]["code"], -32002, "{again}");
}

/// The specialist's own words differ from anything the orchestrator would compose.
const DIRECT_SCRIPT: &str = r#"
agents:
  orchestrator:
    - when: { purpose: compose }
      text: ["The orchestrator's summary."]
  shop:
    - text: ["Shop's own words, verbatim."]
"#;

#[tokio::test]
async fn a_specialist_skill_is_its_direct_line_and_its_words_arrive_verbatim() {
    let state = Rig {
        script: DIRECT_SCRIPT.to_owned(),
        ..Rig::default()
    }
    .state();
    for (id, params) in [
        ("m-skill", {
            let mut p = message("m-skill", "what's on offer?", Some("ctx-d1"));
            p["message"]["metadata"] = json!({ "skillId": "shop" });
            p
        }),
        (
            "m-hash",
            message("m-hash", "#shop what's on offer?", Some("ctx-d2")),
        ),
    ] {
        let reply = call(&state, rpc("SendMessage", &params, None)).await;
        let task = &reply["result"]["task"];
        assert_eq!(
            task["status"]["state"], "TASK_STATE_COMPLETED",
            "{id}: {reply}"
        );
        assert_eq!(
            task["artifacts"][0]["parts"][0]["text"], "Shop's own words, verbatim.",
            "{id}"
        );
        assert_eq!(
            task["metadata"]["baton"]["consulted"][0]["agent_id"],
            "shop"
        );
    }
    let mut unknown = message("m-x", "hello", None);
    unknown["message"]["metadata"] = json!({ "skillId": "nobody" });
    let refused = call(&state, rpc("SendMessage", &unknown, None)).await;
    assert_eq!(refused["error"]["code"], -32602);
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("nobody")
    );
}

#[tokio::test]
async fn malformed_calls_are_refused_in_json_rpc_shape_with_plain_words() {
    let state = Rig::default().state();
    let cases: Vec<(Request<Body>, i64)> = vec![
        (raw("{not json", None), -32700),
        (raw("[1, 2]", None), -32600),
        (raw(r#"{"jsonrpc":"2.0","id":1}"#, None), -32600),
        (rpc("Nonsense", &json!({}), None), -32601),
        (rpc("SendMessage", &json!({ "message": 3 }), None), -32602),
        (
            rpc(
                "SendMessage",
                &json!({ "message": { "messageId": "m", "role": "ROLE_USER", "parts": [{ "url": "https://x/y.png" }] } }),
                None,
            ),
            -32005,
        ),
        (
            rpc(
                "SendMessage",
                &json!({ "message": { "messageId": "m", "role": "ROLE_AGENT", "parts": [{ "text": "hi" }] } }),
                None,
            ),
            -32602,
        ),
        (
            rpc(
                "SendMessage",
                &json!({ "message": { "messageId": "m", "role": "ROLE_USER", "taskId": "t", "parts": [{ "text": "hi" }] } }),
                None,
            ),
            -32001,
        ),
        (
            rpc("SendMessage", &message("m-e", "   ", None), None),
            -32602,
        ),
        (rpc("GetTask", &json!({ "id": "not-a-task" }), None), -32001),
        // Tasks are listed one context at a time.
        (rpc("ListTasks", &json!({}), None), -32602),
        (
            rpc("CreateTaskPushNotificationConfig", &json!({}), None),
            -32003,
        ),
        // Push is not supported, also when a message asks for it.
        (
            rpc(
                "SendMessage",
                &json!({
                    "message": { "messageId": "m-p", "role": "ROLE_USER", "parts": [{ "text": "hi" }] },
                    "configuration": { "taskPushNotificationConfig": { "url": "https://hooks.example/x" } }
                }),
                None,
            ),
            -32003,
        ),
        // The card declares no extended card.
        (rpc("GetExtendedAgentCard", &json!({}), None), -32004),
    ];
    for (req, code) in cases {
        let reply = call(&state, req).await;
        assert_eq!(reply["jsonrpc"], "2.0");
        assert_eq!(reply["error"]["code"], code, "{reply}");
        let words = reply["error"]["message"].as_str().unwrap();
        assert!(!words.is_empty() && !words.contains("panicked"), "{words}");
    }
    // Another protocol version is refused; no principal is refused before any JSON-RPC.
    let mut old = rpc("GetTask", &json!({ "id": "x" }), None);
    old.headers_mut()
        .insert("a2a-version", "0.3".parse().unwrap());
    assert_eq!(call(&state, old).await["error"]["code"], -32009);
    // An empty version reads as 0.3; the patch number does not matter; the version may
    // come in the query string; a method name is echoed bounded.
    let with_version = |version: &str| {
        let mut req = rpc("GetTask", &json!({ "id": "x" }), None);
        req.headers_mut()
            .insert("a2a-version", version.parse().unwrap());
        req
    };
    assert_eq!(
        call(&state, with_version("")).await["error"]["code"],
        -32009
    );
    for patch in ["1.0.0", "1.0.3"] {
        assert_eq!(
            call(&state, with_version(patch)).await["error"]["code"],
            -32001,
            "{patch}"
        );
    }
    let mut queried = rpc("GetTask", &json!({ "id": "x" }), None);
    queried.headers_mut().remove("a2a-version");
    *queried.uri_mut() = "/a2a?A2A-Version=0.3".parse().unwrap();
    assert_eq!(call(&state, queried).await["error"]["code"], -32009);
    let long = rpc(&format!("No\u{0}{}", "x".repeat(5000)), &json!({}), None);
    let refused = call(&state, long).await;
    let words = refused["error"]["message"].as_str().unwrap();
    assert!(words.len() < 300 && !words.contains('\0'), "{words}");
    // A body not sent as JSON is a content type this agent does not take.
    let mut plain = rpc("GetTask", &json!({ "id": "x" }), None);
    plain
        .headers_mut()
        .insert("content-type", "text/plain".parse().unwrap());
    assert_eq!(call(&state, plain).await["error"]["code"], -32005);
    // `/a2a/` is `/a2a`.
    let mut slash = rpc("GetTask", &json!({ "id": "x" }), None);
    *slash.uri_mut() = "/a2a/".parse().unwrap();
    assert_eq!(call(&state, slash).await["error"]["code"], -32001);
    let nobody = Rig {
        default_principal: None,
        ..Rig::default()
    }
    .state();
    let response = send(&nobody, rpc("GetTask", &json!({ "id": "x" }), None)).await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    // A streamed call's refusal is the one event of its stream.
    let response = send(&state, rpc("SendStreamingMessage", &json!({}), None)).await;
    let frames = frames(&text(response).await);
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0]["error"]["code"], -32602);
}

#[tokio::test]
async fn a_task_waits_for_approval_in_input_required_and_the_next_message_on_it_answers() {
    let state = crate::resume::state();
    let on_task = |id: &str, text: &str, task: &Value| {
        let mut params = message(id, text, Some("ctx-r"));
        params["message"]["taskId"] = task.clone();
        rpc("SendMessage", &params, None)
    };
    let first = call(
        &state,
        rpc(
            "SendMessage",
            &message("m-1", "redeem my points", Some("ctx-r")),
            None,
        ),
    )
    .await;
    let task = &first["result"]["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{first}"
    );
    let task_id = task["id"].clone();

    // Words that are neither a yes nor a no leave it waiting, with a plain message.
    let unclear = call(&state, on_task("m-2", "what would it cost?", &task_id)).await;
    assert_eq!(unclear["error"]["code"], -32602, "{unclear}");
    assert!(
        unclear["error"]["message"]
            .as_str()
            .unwrap()
            .contains("yes or a no"),
        "{unclear}"
    );

    let approved = call(&state, on_task("m-3", "yes", &task_id)).await;
    let done = &approved["result"]["task"];
    assert_eq!(done["id"], task_id, "the same task goes on");
    assert_eq!(
        done["status"]["state"], "TASK_STATE_COMPLETED",
        "{approved}"
    );
    let answer = done["artifacts"][0]["parts"][0]["text"].as_str().unwrap();
    assert!(answer.contains("All done."), "{answer}");

    // The task reads back as completed; the record names the face.
    let got = call(&state, rpc("GetTask", &json!({ "id": task_id }), None)).await;
    assert_eq!(
        got["result"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{got}"
    );
    let episode = done["metadata"]["baton"]["episode_id"].as_str().unwrap();
    let history = send(&state, get(&format!("/v1/episodes/{episode}"), None)).await;
    let history: Value = serde_json::from_str(&text(history).await).unwrap();
    let last = history["turns"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["answered"]["face"], "a2a", "{last}");
    assert_eq!(last["answered"]["answer"], "approve", "{last}");

    // Answered, it waits no more.
    let late = call(&state, on_task("m-4", "yes", &task_id)).await;
    assert!(
        late["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not waiting"),
        "{late}"
    );
}

#[tokio::test]
async fn a_question_waits_in_input_required_and_any_words_on_the_task_answer_it() {
    let state = crate::resume::asking_state();
    let first = call(
        &state,
        rpc(
            "SendMessage",
            &message("q-1", "redeem my points", Some("ctx-q")),
            None,
        ),
    )
    .await;
    let task = &first["result"]["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{first}"
    );
    let mut params = message("q-2", "the gift card", Some("ctx-q"));
    params["message"]["taskId"] = task["id"].clone();
    let answered = call(&state, rpc("SendMessage", &params, None)).await;
    let done = &answered["result"]["task"];
    assert_eq!(done["id"], task["id"]);
    assert_eq!(
        done["status"]["state"], "TASK_STATE_COMPLETED",
        "{answered}"
    );
}

/// `ListTasks` lists the caller's tasks in a context, most recently updated first, a page
/// at a time (`nextPageToken` empty on the last), without artifacts unless asked; another
/// principal's list of the same context is empty, and a call without a context, with a
/// page size out of range or a token it was not given is refused.
#[tokio::test]
async fn list_tasks_pages_the_callers_tasks_in_a_context_newest_first() {
    let state = Rig::default().state();
    let mut ids = Vec::new();
    for (i, text) in ["coffee deals", "my receipt", "coffee again"]
        .iter()
        .enumerate()
    {
        let sent = call(
            &state,
            rpc(
                "SendMessage",
                &message(&format!("m-l{i}"), text, Some("ctx-l")),
                None,
            ),
        )
        .await;
        ids.push(sent["result"]["task"]["id"].clone());
    }
    let list = |params: Value, principal: Option<&'static str>| {
        let state = state.clone();
        async move { call(&state, rpc("ListTasks", &params, principal)).await }
    };
    let first = list(json!({"contextId": "ctx-l", "pageSize": 2}), None).await;
    let page = &first["result"];
    assert_eq!(page["totalSize"], 3, "{first}");
    assert_eq!(page["pageSize"], 2, "{first}");
    let listed: Vec<&Value> = page["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["id"])
        .collect();
    assert_eq!(listed, [&ids[2], &ids[1]], "newest first");
    assert!(
        page["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t.get("artifacts").is_none()),
        "no artifacts unless asked: {first}"
    );
    let token = page["nextPageToken"].as_str().unwrap();
    assert!(!token.is_empty());
    let second = list(
        json!({"contextId": "ctx-l", "pageSize": 2, "pageToken": token, "includeArtifacts": true}),
        None,
    )
    .await;
    let page = &second["result"];
    assert_eq!(page["nextPageToken"], "", "the last page: {second}");
    assert_eq!(page["tasks"][0]["id"], ids[0]);
    // The user's message is named by the client's own id.
    assert_eq!(
        page["tasks"][0]["history"][0]["messageId"], "m-l0",
        "{second}"
    );
    assert!(page["tasks"][0]["artifacts"].is_array(), "{second}");
    assert_eq!(page["tasks"][0]["status"]["state"], "TASK_STATE_COMPLETED");
    assert!(
        page["tasks"][0]["status"]["timestamp"].is_string(),
        "{second}"
    );
    // A state filter, and history cut to its length.
    let failed = list(
        json!({"contextId": "ctx-l", "status": "TASK_STATE_FAILED"}),
        None,
    )
    .await;
    assert_eq!(failed["result"]["tasks"], json!([]), "{failed}");
    let short = list(json!({"contextId": "ctx-l", "historyLength": 0}), None).await;
    assert_eq!(short["result"]["tasks"][0]["history"], json!([]), "{short}");
    // Another principal's view of the same context id: their own, empty.
    let other = list(json!({"contextId": "ctx-l"}), Some("mallory")).await;
    assert_eq!(other["result"]["tasks"], json!([]), "{other}");
    assert_eq!(other["result"]["totalSize"], 0);
    for bad in [
        json!({}),
        json!({"contextId": "ctx-l", "pageSize": 0}),
        json!({"contextId": "ctx-l", "pageSize": 101}),
        json!({"contextId": "ctx-l", "pageToken": "not-ours"}),
    ] {
        let refused = list(bad.clone(), None).await;
        assert_eq!(refused["error"]["code"], -32602, "{bad}: {refused}");
    }
}

/// `SubscribeToTask` streams a task running in this process from now to its end, for a
/// client that lost its stream; a task that ended cannot be subscribed to, and an unknown
/// or another principal's task is not found, each refused before any stream.
#[tokio::test]
async fn subscribe_to_task_streams_a_running_task_to_its_end() {
    let state = Rig {
        script: script(300, 0),
        ..Rig::default()
    }
    .state();
    let mut params = message("m-s", "coffee deals", Some("ctx-s"));
    params["configuration"] = json!({ "returnImmediately": true });
    let started = call(&state, rpc("SendMessage", &params, None)).await;
    let id = json!({ "id": started["result"]["task"]["id"] });
    let streamed = frames(&text(send(&state, rpc("SubscribeToTask", &id, None)).await).await);
    assert_eq!(
        streamed[0]["result"]["task"]["status"]["state"], "TASK_STATE_WORKING",
        "{streamed:#?}"
    );
    let last = streamed.last().unwrap();
    assert_eq!(
        last["result"]["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{streamed:#?}"
    );
    let said: String = streamed
        .iter()
        .filter_map(|f| f["result"]["artifactUpdate"]["artifact"]["parts"].as_array())
        .flatten()
        .filter_map(|p| p["text"].as_str())
        .collect();
    assert!(said.contains("500 points"), "{streamed:#?}");
    // Ended: read it back instead.
    let ended = call(&state, rpc("SubscribeToTask", &id, None)).await;
    assert_eq!(ended["error"]["code"], -32004, "{ended}");
    for (params, principal) in [
        (json!({ "id": "not-a-task" }), None),
        (id.clone(), Some("mallory")),
    ] {
        let refused = call(&state, rpc("SubscribeToTask", &params, principal)).await;
        assert_eq!(refused["error"]["code"], -32001, "{refused}");
    }
}
