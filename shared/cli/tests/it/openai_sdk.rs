//! The chat completions face driven by the official OpenAI SDK for Python
//! (`tests/clients/openai_chat.py`) against a real `baton serve` with the shipped registry
//! and the offline model: a whole answer, a streamed follow-up in the same episode, the
//! consulted record in the extension field and header, usage, and a refusal the SDK
//! raises as its own error.

use std::process::Command;

use serde_json::Value;

use crate::support::*;

#[test]
fn the_official_openai_sdk_runs_turns_and_sees_who_was_consulted() {
    let sandbox = Sandbox::new();
    let serving = Serving::start(
        &sandbox,
        &["--registry", registry(), "--model", "offline"],
        &[],
    );
    let script = baton_testkit::crate_dir().join("tests/clients/openai_chat.py");
    let output = Command::new(baton_testkit::a2a_python())
        .arg(&script)
        .arg(format!("http://{}", serving.addr))
        .arg("alice@example.com")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the SDK's client failed: {stderr}");
    let out: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stdout)));

    assert_eq!(
        out["models"],
        serde_json::json!(["orchestrator"]),
        "{out:#}"
    );
    assert_eq!(out["retrieved"], "orchestrator", "{out:#}");
    // A refusal at any address is one the SDK reads as its own error, with OpenAI's body.
    for (case, error, status, kind) in [
        ("missing_model", "NotFoundError", 404, "not_found_error"),
        ("no_route", "NotFoundError", 404, "not_found_error"),
        (
            "wrong_method",
            "APIStatusError",
            405,
            "invalid_request_error",
        ),
    ] {
        assert_eq!(out[case]["type"], error, "{case}: {out:#}");
        assert_eq!(out[case]["status"], status, "{case}: {out:#}");
        assert_eq!(out[case]["error_type"], kind, "{case}: {out:#}");
    }

    let whole = &out["whole"];
    assert_eq!(whole["finish_reason"], "stop", "{out:#}");
    assert!(
        whole["content"].as_str().is_some_and(|c| c.len() > 20),
        "{out:#}"
    );
    assert_eq!(whole["consulted"], serde_json::json!(["shop"]), "{out:#}");
    assert_eq!(whole["consulted_header"], "shop", "{out:#}");
    assert!(
        whole["usage"]["total_tokens"].as_u64().unwrap_or(0) > 0,
        "{out:#}"
    );

    let streamed = &out["streamed"];
    assert!(
        streamed["chunks_with_text"].as_u64().unwrap_or(0) > 1,
        "the answer did not stream: {out:#}"
    );
    assert_eq!(streamed["finish_reason"], "stop", "{out:#}");
    assert_eq!(
        streamed["consulted"],
        serde_json::json!(["support"]),
        "{out:#}"
    );
    assert_eq!(streamed["episode"], whole["episode_header"], "{out:#}");
    assert!(
        streamed["usage"]["total_tokens"].as_u64().unwrap_or(0) > 0,
        "{out:#}"
    );

    let refusal = &out["refusal"];
    assert_eq!(refusal["type"], "BadRequestError", "{out:#}");
    assert!(
        refusal["message"]
            .as_str()
            .is_some_and(|m| m.contains("role `user`")),
        "{out:#}"
    );
    serving.kill();
}
