//! The AG-UI face driven by the official client, `@ag-ui/client`'s `HttpAgent`
//! (`tests/clients/agui_run.mjs`, installed by `./infra/js-clients.sh`), against a real
//! `baton serve` with the shipped registry and the offline model: two runs on one thread,
//! the messages the client rebuilds, and the consulted record it receives.

use std::process::Command;

use serde_json::Value;

use crate::support::*;

#[test]
fn the_official_ag_ui_client_runs_a_thread_and_rebuilds_its_messages() {
    let sandbox = Sandbox::new();
    let serving = Serving::start(
        &sandbox,
        &["--registry", registry(), "--model", "offline"],
        &[],
    );
    // The script resolves the client from beside it, as an ES module does.
    let (_work, script) = js_client("agui_run.mjs", "@ag-ui/client");
    let output = Command::new("node")
        .arg(&script)
        .arg(format!("http://{}", serving.addr))
        .arg("alice@example.com")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the AG-UI client failed: {stderr}");
    let out: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stdout)));

    // Each run's new messages: the answer, the delegation as a tool call, and its result.
    for (run, agent) in [("first", "shop"), ("second", "support")] {
        let messages = out[run].as_array().unwrap();
        let answer = messages
            .iter()
            .find(|m| m["role"] == "assistant" && m["content"].is_string())
            .unwrap_or_else(|| panic!("{run}: no answer in {messages:#?}"));
        assert!(answer["content"].as_str().unwrap().len() > 20, "{answer:#}");
        let call = messages
            .iter()
            .flat_map(|m| m["toolCalls"].as_array().cloned().unwrap_or_default())
            .find(|c| c["function"]["name"] == format!("ask_{agent}"))
            .unwrap_or_else(|| panic!("{run}: no ask_{agent} call in {messages:#?}"));
        let result = messages
            .iter()
            .find(|m| m["role"] == "tool" && m["toolCallId"] == call["id"])
            .unwrap_or_else(|| panic!("{run}: no result for {call:#} in {messages:#?}"));
        let outcome: Value = serde_json::from_str(result["content"].as_str().unwrap()).unwrap();
        assert_eq!(outcome["status"], "ok", "{outcome:#}");
    }
    // The client keeps the whole thread: both user messages and both answers.
    let all = out["messages"].as_array().unwrap();
    assert_eq!(
        all.iter().filter(|m| m["role"] == "user").count(),
        2,
        "{all:#?}"
    );

    // The consulted record, as custom events and in the state.
    let consulted: Vec<&str> = out["custom"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "baton.consulted")
        .map(|e| e["value"]["agents"][0]["agent_id"].as_str().unwrap())
        .collect();
    assert_eq!(consulted, ["shop", "support"], "{out:#}");
    let state = &out["state"]["baton"];
    assert_eq!(state["consulted"][0]["agent_id"], "support", "{out:#}");
    assert_eq!(state["outcome"], "answered");
    let kinds: Vec<&str> = out["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(kinds.first(), Some(&"RUN_STARTED"));
    assert_eq!(kinds.last(), Some(&"RUN_FINISHED"));
    serving.kill();
}

#[test]
fn the_official_client_answers_an_interrupt_and_the_redemption_runs_once() {
    let sandbox = Sandbox::new();
    let (ledger, registry) = crate::approvals::with_ledger(&sandbox);
    let model = sandbox.script(crate::approvals::SCRIPT);
    let serving = Serving::start(
        &sandbox,
        &["--registry", registry.to_str().unwrap(), "--model", &model],
        &[],
    );
    let (_work, script) = js_client("agui_interrupt.mjs", "@ag-ui/client");
    let output = Command::new("node")
        .arg(&script)
        .arg(format!("http://{}", serving.addr))
        .arg("alice@example.com")
        .arg("redeem 800 points for me")
        .arg(r#"{"approved": true}"#)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the AG-UI client failed: {stderr}");
    let out: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stdout)));

    // The first run ends in the interrupt, as the client reads it.
    assert_eq!(out["outcomes"][0]["outcome"], "interrupt", "{out:#}");
    let pending = out["pending"].as_array().unwrap();
    assert_eq!(pending.len(), 1, "{out:#}");
    assert_eq!(pending[0]["reason"], "approval");
    assert_eq!(pending[0]["message"], "Redeem 800 points (gift_card)");
    assert_eq!(pending[0]["metadata"]["agent"], "rewards");
    assert!(
        pending[0]["expiresAt"].as_str().unwrap().ends_with('Z'),
        "{out:#}"
    );
    // The resume completes the turn, and the client has nothing left to answer.
    assert_eq!(out["outcomes"][1]["outcome"], "success", "{out:#}");
    assert_eq!(out["pendingAfter"], serde_json::json!([]), "{out:#}");
    let answer = out["second"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "assistant" && m["content"].is_string())
        .unwrap_or_else(|| panic!("no answer in {out:#}"));
    assert!(
        answer["content"]
            .as_str()
            .unwrap()
            .contains("All done with your points."),
        "{answer:#}"
    );
    let redemptions = ledger.redemptions();
    assert_eq!(redemptions.len(), 1, "{redemptions:?}");
}
