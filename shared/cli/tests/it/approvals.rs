//! `baton chat` with a turn that waits for the user's approval (D-36): the shipped
//! registry's `redeem_points` on the demo ledger. Chat asks on the terminal, and the answer
//! resumes the turn, which redeems once, or never; the ledger counts what really ran.

use std::path::PathBuf;

use baton_tests::ledger::Ledger;
use serde_json::Value;

use crate::support::*;

/// The demo ledger and a copy of the shipped registry that redeems points on it.
pub(crate) fn with_ledger(sandbox: &Sandbox) -> (Ledger, PathBuf) {
    let ledger = Ledger::start();
    let registry = ledger.registry_copy(sandbox.path());
    (ledger, registry)
}

pub(crate) const SCRIPT: &str = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      tool_calls: [{ name: ask_rewards, args: { query: "redeem 800 points", intent_count: 1 } }]
    - when: { purpose: compose }
      text: ["All done with your points."]
  rewards:
    - when: { after_tool_results: false }
      tool_calls: [{ name: redeem_points, args: { points: 800, reward_type: gift_card } }]
    - when: { after_tool_results: true }
      text: ["The redemption is through."]
"#;

/// Runs `baton chat --json` with `answer` typed at the prompt; its events, stderr and the
/// redemptions the ledger recorded.
fn chat(answer: &str) -> (Vec<Value>, String, Vec<Value>) {
    let sandbox = Sandbox::new();
    let (ledger, registry) = with_ledger(&sandbox);
    let model = sandbox.script(SCRIPT);
    let mut command = sandbox.baton();
    command
        .args(["--registry", registry.to_str().unwrap(), "--model", &model])
        .args(["chat", "--json", "redeem 800 points for me"]);
    let (events, stderr) = chat_typing(command, answer);
    (events, stderr, ledger.redemptions())
}

fn kinds(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

fn redeemed(events: &[Value]) -> usize {
    events
        .iter()
        .filter(|e| e["type"] == "tool_call_start" && e["tool"] == "redeem_points")
        .count()
}

#[test]
fn chat_asks_for_approval_and_an_approved_redemption_runs_once() {
    let (events, stderr, ledger) = chat("y\n");
    assert!(stderr.contains("Approve? [y/N]"), "{stderr}");
    let kinds = kinds(&events);
    let asked = events
        .iter()
        .find(|e| e["type"] == "interruption")
        .unwrap_or_else(|| panic!("{kinds:?}"));
    assert_eq!(asked["action"], "Redeem 800 points (gift_card)");
    assert_eq!(asked["agent"], "rewards");
    let completed: Vec<&Value> = events.iter().filter(|e| e["type"] == "completed").collect();
    assert_eq!(completed.len(), 2, "{kinds:?}");
    assert_eq!(completed[0]["outcome"], "awaiting_user");
    assert_eq!(completed[1]["outcome"], "answered");
    assert_eq!(redeemed(&events), 1, "{kinds:?}");
    let consulted = events
        .iter()
        .rfind(|e| e["type"] == "agents_consulted")
        .unwrap();
    assert_eq!(consulted["agents"][0]["agent_id"], "rewards");
    assert_eq!(consulted["agents"][0]["status"], "ok");
    assert_eq!(ledger.len(), 1, "{ledger:?}");
    assert_eq!(ledger[0]["points"], 800);
    assert_eq!(ledger[0]["principal"], "local-user");
}

#[test]
fn a_declined_redemption_never_runs() {
    let (events, _, ledger) = chat("n\n");
    assert_eq!(redeemed(&events), 0);
    assert!(ledger.is_empty(), "{ledger:?}");
    let last = events.iter().rfind(|e| e["type"] == "completed").unwrap();
    assert_eq!(last["outcome"], "answered");
}

#[test]
fn with_no_answer_the_turn_is_left_waiting() {
    let (events, stderr, ledger) = chat("");
    assert_eq!(redeemed(&events), 0);
    assert!(ledger.is_empty(), "{ledger:?}");
    let last = events.iter().rfind(|e| e["type"] == "completed").unwrap();
    assert_eq!(last["outcome"], "awaiting_user");
    assert!(stderr.contains("left waiting"), "{stderr}");
}

#[test]
fn a_waiting_turn_survives_sigkill_and_resumes_after_a_restart() {
    let sandbox = Sandbox::new();
    survives_sigkill(&sandbox, || sandbox.baton(), &[]);
}

/// A turn waits for approval in `baton serve` (made by `baton`, on the store `store`
/// selects), which is killed with SIGKILL; after a restart the approval resumes it, the
/// redemption runs once, and the same approval again runs nothing.
pub(crate) fn survives_sigkill(
    sandbox: &Sandbox,
    baton: impl Fn() -> std::process::Command,
    store: &[&str],
) {
    let (ledger, registry) = with_ledger(sandbox);
    let model = sandbox.script(SCRIPT);
    let mut args = vec!["--registry", registry.to_str().unwrap(), "--model", &model];
    args.extend_from_slice(store);
    let first = Serving::spawn(baton(), &args, &[]);
    let paused = first.turn(
        "alice",
        r#"{"message":"redeem 800 points","turn_id":"t-wait"}"#,
    );
    let episode = header(&paused, "x-baton-episode-id").unwrap().to_owned();
    let asked = sse_events(&paused)
        .into_iter()
        .find(|e| e["type"] == "interruption")
        .unwrap_or_else(|| panic!("{paused}"));
    first.kill();

    let second = Serving::spawn(baton(), &args, &[]);
    let body = serde_json::json!({
        "episode_id": episode,
        "interruption_id": asked["id"],
        "decision": "approve",
    });
    let head = "POST /v1/turns/t-wait/resume HTTP/1.1\r\nContent-Type: application/json\r\nx-baton-principal: alice";
    let resumed = second.request(head, &body.to_string());
    let events = sse_events(&resumed);
    assert_eq!(redeemed(&events), 1, "{resumed}");
    assert_eq!(events.last().unwrap()["outcome"], "answered", "{resumed}");
    // The same answer again replays the resumed turn: the ledger is not asked twice.
    let again = second.request(head, &body.to_string());
    assert!(again.starts_with("HTTP/1.1 200"), "{again}");
    assert_eq!(redeemed(&sse_events(&again)), 0, "{again}");
    assert_eq!(ledger.redemptions().len(), 1, "{:?}", ledger.redemptions());
}

#[test]
fn the_demo_ledger_answers_a_repeated_key_with_its_first_result() {
    use std::io::{Read as _, Write as _};
    let ledger = Ledger::start();
    let post = |key: &str, points: u32| {
        let body = format!(
            r#"{{"principal":"alice","args":{{"points":{points},"reward_type":"gift_card"}}}}"#
        );
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", ledger.port())).unwrap();
        write!(
            stream,
            "POST /redemptions HTTP/1.1\r\nHost: ledger\r\nConnection: close\r\nIdempotency-Key: {key}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        response
    };
    let body = |response: &str| response.split_once("\r\n\r\n").unwrap().1.to_owned();
    let first = post("k-1", 800);
    assert!(first.starts_with("HTTP/1.0 200"), "{first}");
    assert!(!first.contains("Idempotent-Replayed"), "{first}");
    // The same act again: nothing spent, the first answer given back, marked so.
    let again = post("k-1", 800);
    assert!(again.starts_with("HTTP/1.0 200"), "{again}");
    assert!(again.contains("Idempotent-Replayed: true"), "{again}");
    assert_eq!(body(&again), body(&first));
    // The key of another request: refused, nothing spent.
    assert!(post("k-1", 900).starts_with("HTTP/1.0 422"));
    assert!(post("k-2", 800).starts_with("HTTP/1.0 200"));
    assert_eq!(ledger.redemptions().len(), 2);
}

/// Sends `request` (a whole HTTP request) to `addr` on a thread of its own and reads
/// whatever comes back until the connection ends: a server killed mid-answer ends it.
fn send_in_background(addr: &str, request: String) -> std::thread::JoinHandle<String> {
    use std::io::{Read as _, Write as _};
    let addr = addr.to_owned();
    std::thread::spawn(move || {
        let mut response = Vec::new();
        if let Ok(mut stream) = std::net::TcpStream::connect(&addr) {
            let _ = stream.write_all(request.as_bytes());
            let _ = stream.read_to_end(&mut response);
        }
        String::from_utf8_lossy(&response).into_owned()
    })
}

/// How one face pauses a redemption and carries the user's approval.
pub(crate) struct Face {
    /// The request that asks to redeem: (head, body).
    ask: fn() -> (String, String),
    /// The approval of what the paused response asks: (head, body).
    approve: fn(&str) -> (String, String),
    /// The answer's words in a response.
    said: fn(&str) -> String,
}

/// An approved act through `face`: the server is killed with SIGKILL after the ledger
/// acted, while the answer is composed; after a restart the same approval is sent again.
/// The ledger acts once, and the user is told it went through. On the embedded store.
fn approved_act_survives_a_crash_after_it_ran(face: &Face) {
    let sandbox = Sandbox::new();
    approved_act_survives_a_crash_on(&sandbox, || sandbox.baton(), &[], face);
}

/// [`approved_act_survives_a_crash_after_it_ran`] with `baton serve` made by `baton`, on
/// the store `store` selects.
pub(crate) fn approved_act_survives_a_crash_on(
    sandbox: &Sandbox,
    baton: impl Fn() -> std::process::Command,
    store: &[&str],
    face: &Face,
) {
    let (ledger, registry) = with_ledger(sandbox);
    // Composing takes ten minutes in the first process: it is killed before.
    let slow = SCRIPT.replace(
        "    - when: { purpose: compose }\n",
        "    - when: { purpose: compose }\n      delay_ms: 600000\n",
    );
    assert_ne!(slow, SCRIPT);
    let model = sandbox.script(&slow);
    let mut args = vec!["--registry", registry.to_str().unwrap(), "--model", &model];
    args.extend_from_slice(store);
    let first = Serving::spawn(baton(), &args, &[]);
    let (head, body) = (face.ask)();
    let paused = first.request(&head, &body);
    assert!(ledger.redemptions().is_empty());
    let (head, body) = (face.approve)(&paused);
    let request = format!(
        "{head}\r\nHost: {}\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        first.addr,
        body.len()
    );
    let cut = send_in_background(&first.addr, request);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while ledger.redemptions().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the approved act never ran"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    first.kill();
    let _ = cut.join();

    // The same approval after a restart, with a model that composes at once.
    let model = sandbox.script(SCRIPT);
    let mut args = vec!["--registry", registry.to_str().unwrap(), "--model", &model];
    args.extend_from_slice(store);
    let second = Serving::spawn(baton(), &args, &[]);
    // A store shared by many processes (DynamoDB) frees the dead process's turn only when
    // its lease ends: until then the retry is told, truly, that a turn is in flight.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let again = loop {
        let again = second.request(&head, &body);
        if !in_flight(&again) || std::time::Instant::now() > deadline {
            break again;
        }
        assert_eq!(ledger.redemptions().len(), 1);
        std::thread::sleep(std::time::Duration::from_millis(500));
    };
    assert!(again.starts_with("HTTP/1.1 200"), "{again}");
    let redemptions = ledger.redemptions();
    assert_eq!(redemptions.len(), 1, "{redemptions:?}\n{again}");
    // The user hears that it went through, from the act's own result.
    let said = (face.said)(&again);
    assert!(
        said.contains("All done with your points."),
        "{said}\n{again}"
    );
    assert!(!said.contains("could not"), "{said}");
}

/// `baton chat`: approved at its prompt, killed with SIGKILL after the ledger acted while
/// the answer is composed; a "yes" in the episode from the next `baton chat` acts under the
/// same key, and the user hears that it went through.
#[test]
fn an_act_approved_in_baton_chat_runs_once_through_a_crash_after_it_ran() {
    let sandbox = Sandbox::new();
    let (ledger, registry) = with_ledger(&sandbox);
    let slow = SCRIPT.replace(
        "    - when: { purpose: compose }\n",
        "    - when: { purpose: compose }\n      delay_ms: 600000\n",
    );
    let model = sandbox.script(&slow);
    let mut command = sandbox.baton();
    command
        .args(["--registry", registry.to_str().unwrap(), "--model", &model])
        .args(["chat", "--json", "redeem 800 points for me"]);
    let mut client = LineClient::spawn(command);
    let mut episode = String::new();
    loop {
        let event = client.next();
        if event["type"] == "response_id" {
            episode = event["episode_id"].as_str().unwrap().to_owned();
        }
        if event["type"] == "interruption" {
            break;
        }
    }
    client.say("y");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while ledger.redemptions().is_empty() {
        assert!(std::time::Instant::now() < deadline, "the act never ran");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    client.kill();

    let model = sandbox.script(SCRIPT);
    let mut command = sandbox.baton();
    command
        .args(["--registry", registry.to_str().unwrap(), "--model", &model])
        .args(["chat", "--json", "--episode", &episode, "yes"]);
    let (events, stderr) = chat_typing(command, "");
    assert_eq!(ledger.redemptions().len(), 1, "{:?}", ledger.redemptions());
    let said: String = events
        .iter()
        .filter(|e| e["type"] == "text")
        .filter_map(|e| e["text"].as_str())
        .collect();
    assert!(
        said.contains("All done with your points."),
        "{said}\n{stderr}\n{events:?}"
    );
    assert_eq!(events.last().unwrap()["outcome"], "answered", "{events:?}");
}

#[test]
fn an_act_approved_on_the_turns_api_runs_once_through_a_crash_after_it_ran() {
    approved_act_survives_a_crash_after_it_ran(&TURNS_API);
}

#[test]
fn an_act_approved_in_words_on_chat_completions_runs_once_through_a_crash_after_it_ran() {
    approved_act_survives_a_crash_after_it_ran(&CHAT_COMPLETIONS);
}

#[test]
fn an_act_approved_on_an_a2a_task_runs_once_through_a_crash_after_it_ran() {
    approved_act_survives_a_crash_after_it_ran(&A2A);
}

#[test]
fn an_act_approved_by_an_ag_ui_resume_runs_once_through_a_crash_after_it_ran() {
    approved_act_survives_a_crash_after_it_ran(&AG_UI);
}

#[test]
fn an_act_approved_in_an_mcp_conversation_runs_once_through_a_crash_after_it_ran() {
    approved_act_survives_a_crash_after_it_ran(&MCP);
}

/// The `x-baton-episode-id` of a response.
fn episode_of(response: &str) -> String {
    header(response, "x-baton-episode-id")
        .unwrap_or_else(|| panic!("{response}"))
        .to_owned()
}

/// Whether a response says, in its face's own way (an HTTP 409, a JSON-RPC error, a
/// `RUN_ERROR`), that a turn is in flight: the same turn id, or a fresh one (a "yes")
/// while the dead turn holds the episode.
fn in_flight(response: &str) -> bool {
    ["has not finished yet", "Another turn is in progress"]
        .iter()
        .any(|words| response.contains(words))
}

/// The text of every `data:` frame's `delta` (AG-UI) in a stream.
fn deltas(response: &str) -> String {
    sse_events(response)
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .filter_map(|e| e["delta"].as_str().map(str::to_owned))
        .collect()
}

/// The JSON body of a response.
fn json_body(response: &str) -> Value {
    let body = response.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    serde_json::from_str(body).unwrap_or_else(|_| panic!("{response}"))
}

/// `/v1/turns`, approved with its resume endpoint.
pub(crate) const TURNS_API: Face = Face {
    ask: || {
        (
            "POST /v1/turns HTTP/1.1\r\nContent-Type: application/json\r\nx-baton-principal: alice"
                .into(),
            r#"{"message":"redeem 800 points","turn_id":"t-wait"}"#.into(),
        )
    },
    approve: |paused| {
        let asked = sse_events(paused)
            .into_iter()
            .find(|e| e["type"] == "interruption")
            .unwrap_or_else(|| panic!("{paused}"));
        let body = serde_json::json!({
            "episode_id": episode_of(paused),
            "interruption_id": asked["id"],
            "decision": "approve",
        });
        (
            "POST /v1/turns/t-wait/resume HTTP/1.1\r\nContent-Type: application/json\r\nx-baton-principal: alice".into(),
            body.to_string(),
        )
    },
    said: |response| response.to_owned(),
};

/// Chat completions, approved with a "yes" in words.
pub(crate) const CHAT_COMPLETIONS: Face = Face {
    ask: || {
        (
            "POST /v1/chat/completions HTTP/1.1\r\nContent-Type: application/json\r\nx-baton-principal: alice".into(),
            r#"{"model":"baton","messages":[{"role":"user","content":"redeem 800 points"}]}"#.into(),
        )
    },
    // A "yes" in the episode, under a turn id the face makes fresh each time.
    approve: |paused| {
        assert!(paused.contains("needs your approval"), "{paused}");
        (
            format!(
                "POST /v1/chat/completions HTTP/1.1\r\nContent-Type: application/json\r\nx-baton-principal: alice\r\nx-baton-episode-id: {}",
                episode_of(paused)
            ),
            r#"{"model":"baton","messages":[{"role":"user","content":"yes"}]}"#.into(),
        )
    },
    said: |response| {
        json_body(response)["choices"][0]["message"]["content"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    },
};

const A2A_HEAD: &str = "POST /a2a HTTP/1.1\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nx-baton-principal: alice";

/// A2A, approved by a "yes" on the waiting task: a client that lost the answer sends the
/// same message again.
pub(crate) const A2A: Face = Face {
    ask: || {
        let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
            "message": {"messageId": "m-ask", "role": "ROLE_USER", "parts": [{"text": "redeem 800 points"}]}
        }});
        (A2A_HEAD.into(), body.to_string())
    },
    approve: |paused| {
        let task = &json_body(paused)["result"]["task"];
        assert_eq!(
            task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
            "{paused}"
        );
        let body = serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "SendMessage", "params": {
            "message": {"messageId": "m-yes", "role": "ROLE_USER", "parts": [{"text": "yes"}],
                        "taskId": task["id"], "contextId": task["contextId"]}
        }});
        (A2A_HEAD.into(), body.to_string())
    },
    said: |response| {
        let task = &json_body(response)["result"]["task"];
        assert_eq!(
            task["status"]["state"], "TASK_STATE_COMPLETED",
            "{response}"
        );
        task["artifacts"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|a| a["parts"].as_array().cloned().unwrap_or_default())
            .filter_map(|p| p["text"].as_str().map(str::to_owned))
            .collect()
    },
};

const AG_UI_HEAD: &str = "POST /v1/agui HTTP/1.1\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nx-baton-principal: alice";

/// AG-UI, approved by the next run's `resume`: a client that lost the run sends it again.
pub(crate) const AG_UI: Face = Face {
    ask: || {
        let body = serde_json::json!({
            "threadId": "th-1", "runId": "run-1", "state": {}, "tools": [], "context": [],
            "forwardedProps": {},
            "messages": [{"id": "msg-1", "role": "user", "content": "redeem 800 points"}],
        });
        (AG_UI_HEAD.into(), body.to_string())
    },
    approve: |paused| {
        let events = sse_events(paused);
        let finished = events
            .iter()
            .find(|e| e["type"] == "RUN_FINISHED")
            .unwrap_or_else(|| panic!("{paused}"));
        let interrupt = &finished["outcome"]["interrupts"][0];
        let body = serde_json::json!({
            "threadId": "th-1", "runId": "run-2", "state": {}, "tools": [], "context": [],
            "forwardedProps": {}, "messages": [],
            "resume": [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": true}}],
        });
        (AG_UI_HEAD.into(), body.to_string())
    },
    said: deltas,
};

const MCP_HEAD: &str = "POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nx-baton-principal: alice";

/// MCP, a client without elicitation: the next call in the conversation says "yes".
pub(crate) const MCP: Face = Face {
    ask: || {
        let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "ask", "arguments": {"message": "redeem 800 points", "conversation": "c-wait"}
        }});
        (MCP_HEAD.into(), body.to_string())
    },
    approve: |paused| {
        assert!(paused.contains("awaiting_user"), "{paused}");
        let body = serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "ask", "arguments": {"message": "yes", "conversation": "c-wait"}
        }});
        (MCP_HEAD.into(), body.to_string())
    },
    said: |response| {
        let result = mcp_result(response);
        result["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["text"].as_str().map(str::to_owned))
            .collect()
    },
};

/// The result of an MCP response, sent as JSON or as the SSE frame that holds it.
fn mcp_result(response: &str) -> Value {
    let body = response.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    serde_json::from_str::<Value>(body)
        .ok()
        .into_iter()
        .chain(sse_events(response))
        .find(|m| m.get("id").is_some())
        .map(|m| m["result"].clone())
        .unwrap_or(Value::Null)
}
