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
fn the_demo_ledger_records_a_key_once_and_refuses_it_again() {
    use std::io::{Read as _, Write as _};
    let ledger = Ledger::start();
    let post = |key: &str| {
        let body = r#"{"principal":"alice","args":{"points":800,"reward_type":"gift_card"}}"#;
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
    assert!(post("k-1").starts_with("HTTP/1.0 200"));
    assert!(post("k-1").starts_with("HTTP/1.0 409"));
    assert!(post("k-2").starts_with("HTTP/1.0 200"));
    assert_eq!(ledger.redemptions().len(), 2);
}
