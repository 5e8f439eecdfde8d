//! The A2A face driven by the official A2A SDKs, Python's `a2a-sdk`
//! (`tests/clients/a2a_client.py`) and JavaScript's `@a2a-js/sdk`
//! (`tests/clients/a2a_client.mjs`), against a real `baton serve` with the shipped
//! registry: discovery, a streamed turn, a follow-up in the same context, a specialist's
//! skill (the Direct Line), cancel, and another principal's task.

use std::process::Command;

use serde_json::{Value, json};

use crate::support::*;

/// Routes to `shop`, composes in chunks; a message that says "slowly" never finishes
/// routing, so it can be canceled. The specialist's words differ from the composed answer.
const SCRIPT: &str = r#"
agents:
  orchestrator:
    - when: { purpose: route, user_contains: slowly }
      delay_ms: 600000
      text: ["Never sent."]
    - when: { purpose: route }
      tool_calls: [{ name: ask_shop, args: { query: "coffee deals", intent_count: 1 } }]
    - when: { purpose: compose }
      chunk_delay_ms: 5
      text: ["Bean Street ", "coffee earns ", "1,000 points."]
  shop:
    - when: { after_tool_results: false }
      tool_calls: [{ name: search_offers, args: { query: "coffee" } }]
    - when: { after_tool_results: true }
      text: ["Shop here: Bean Street coffee earns 1,000 points."]
"#;

/// What both clients must have seen, whatever their language calls things.
fn check(out: &Value, not_found: &str) {
    let card = &out["card"];
    assert_eq!(card["name"], "Tally assistant", "{out:#}");
    assert_eq!(card["streaming"], true, "{out:#}");
    let skills = card["skills"].as_array().unwrap();
    assert!(
        skills.contains(&json!("orchestrator")) && skills.contains(&json!("shop")),
        "{out:#}"
    );
    assert!(card["url"].as_str().unwrap().ends_with("/a2a"), "{out:#}");

    let streamed = &out["streamed"];
    let kinds: Vec<&str> = streamed["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    assert_eq!(kinds.first(), Some(&"task"), "{out:#}");
    assert!(
        kinds.iter().filter(|k| k.starts_with("artifact")).count() > 1,
        "the answer did not stream: {out:#}"
    );
    assert_eq!(
        streamed["answer"], "Bean Street coffee earns 1,000 points.",
        "{out:#}"
    );
    assert_eq!(streamed["state"], "TASK_STATE_COMPLETED", "{out:#}");
    assert_eq!(streamed["consulted"], json!(["shop"]), "{out:#}");

    let follow_up = &out["follow_up"];
    assert_eq!(follow_up["context"], streamed["context"], "{out:#}");
    assert_eq!(follow_up["episode"], streamed["episode"], "{out:#}");
    assert_ne!(follow_up["task_id"], streamed["task_id"], "{out:#}");
    assert_eq!(follow_up["state"], "TASK_STATE_COMPLETED", "{out:#}");

    let direct = &out["direct"];
    assert_eq!(
        direct["answer"], "Shop here: Bean Street coffee earns 1,000 points.",
        "{out:#}"
    );
    assert_eq!(direct["consulted"], json!(["shop"]), "{out:#}");

    let cancel = &out["cancel"];
    assert_eq!(cancel["started"], "TASK_STATE_WORKING", "{out:#}");
    assert_eq!(cancel["canceled"], "TASK_STATE_CANCELED", "{out:#}");
    assert_eq!(cancel["read_back"], "TASK_STATE_CANCELED", "{out:#}");
    assert_eq!(cancel["outcome"], "canceled", "{out:#}");

    assert_eq!(out["other_principal"], not_found, "{out:#}");
}

fn run(command: &mut Command) -> Value {
    let output = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the SDK's client failed: {stderr}");
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stdout)))
}

#[test]
fn the_official_a2a_sdks_discover_stream_continue_address_and_cancel() {
    let sandbox = Sandbox::new();
    let model = sandbox.script(SCRIPT);
    let serving = Serving::start(
        &sandbox,
        &["--registry", registry(), "--model", &model],
        &[],
    );
    let base = format!("http://{}", serving.addr);

    let python = baton_testkit::crate_dir().join("tests/clients/a2a_client.py");
    let out = run(Command::new(baton_testkit::a2a_python())
        .arg(&python)
        .args([&base, "alice@example.com", "mallory@example.com"]));
    check(&out, "TaskNotFoundError");

    let (_work, script) = js_client("a2a_client.mjs", "@a2a-js/sdk");
    let out = run(Command::new("node").arg(&script).args([
        &base,
        "alice@example.com",
        "mallory@example.com",
    ]));
    check(&out, "JsonRpcTaskNotFoundError");
    serving.kill();
}
