//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, npm) drives the
//! `mcp` connector as the client under test: every client scenario runs against the
//! suite's own test servers, and every one outside `tests/conformance/mcp-baseline.yml`
//! must pass (a listed one that passes fails the run too, so the baseline only shrinks).
//!
//! The suite is installed by `./infra/mcp-conformance.sh` (npm; cached), which this test
//! runs. The client is the `mcp_conformance_client` example, which `cargo test` builds.

use std::path::PathBuf;
use std::process::Command;

/// The example program the suite runs, beside this test binary's build.
fn client() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(|deps| deps.parent()).unwrap();
    let client = profile_dir.join("examples/mcp_conformance_client");
    assert!(
        client.exists(),
        "{} is missing: `cargo test -p baton-connectors` builds it (a run of one test target alone does not)",
        client.display()
    );
    client
}

#[test]
fn the_connector_passes_the_mcp_conformance_suite_outside_its_baseline() {
    let root = baton_testkit::crate_dir().join("../..");
    let install = Command::new(root.join("infra/mcp-conformance.sh"))
        .output()
        .expect("run infra/mcp-conformance.sh");
    assert!(
        install.status.success(),
        "installing the MCP conformance suite failed: {}",
        String::from_utf8_lossy(&install.stderr)
    );
    let line = String::from_utf8(install.stdout).unwrap();
    let mut suite = line.split_whitespace();
    let (node, script) = (suite.next().unwrap(), suite.next().unwrap());
    let work = tempfile::tempdir().unwrap();
    let baseline = baton_testkit::crate_dir().join("tests/conformance/mcp-baseline.yml");
    let run = Command::new(node)
        .arg(script)
        .args(["client", "--suite", "all", "--command"])
        .arg(client())
        .arg("--expected-failures")
        .arg(&baseline)
        .arg("-o")
        .arg(work.path().join("results"))
        .current_dir(work.path())
        .output()
        .expect("run the MCP conformance suite");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.success(),
        "the MCP conformance suite failed outside its baseline:\n{stdout}\n{stderr}"
    );
    // The suite itself says so; and the scenarios this connector must pass did run.
    let said = format!("{stdout}{stderr}");
    assert!(said.contains("Baseline check passed"), "{said}");
    for scenario in [
        "initialize",
        "tools_call",
        "sse-retry",
        "auth/pre-registration",
        "auth/client-credentials-basic",
        "auth/client-credentials-jwt",
        "auth/resource-mismatch",
        // A user's sign-in: the authorization-code grant with PKCE.
        "auth/metadata-default",
        "auth/metadata-var1",
        "auth/metadata-var2",
        "auth/metadata-var3",
        "auth/basic-cimd",
        "auth/scope-from-www-authenticate",
        "auth/scope-from-scopes-supported",
        "auth/scope-omitted-when-undefined",
        "auth/scope-step-up",
        "auth/scope-retry-limit",
        "auth/token-endpoint-auth-basic",
        "auth/token-endpoint-auth-post",
        "auth/token-endpoint-auth-none",
        "auth/2025-03-26-oauth-metadata-backcompat",
        "auth/2025-03-26-oauth-endpoint-fallback",
        "auth/offline-access-scope",
        "auth/offline-access-not-supported",
    ] {
        assert!(
            said.contains(&format!("✓ {scenario}:")),
            "{scenario} did not pass:\n{said}"
        );
    }
    elicitation_is_relayed_with_its_defaults(&work.path().join("results"));
}

/// The elicitation scenario stays in the baseline for one check: its server wants the
/// answer within the first call, and Baton answers `cancel` there, asks the user within the
/// turn, then makes the call again with the answer. That second call must pass every
/// default check of the scenario, and the first-call check must be the only failure.
fn elicitation_is_relayed_with_its_defaults(results: &std::path::Path) {
    let dir = std::fs::read_dir(results)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("elicitation-sep1034-client-defaults"))
        })
        .expect("the elicitation scenario's results");
    let checks: Vec<serde_json::Value> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| {
            serde_json::from_str::<serde_json::Value>(&std::fs::read_to_string(e.path()).ok()?).ok()
        })
        .flat_map(|doc| match doc {
            serde_json::Value::Array(checks) => checks,
            other => other["checks"].as_array().cloned().unwrap_or_default(),
        })
        .collect();
    let status = |id: &str| {
        checks
            .iter()
            .find(|c| c["id"] == id)
            .map(|c| c["status"].as_str().unwrap_or_default().to_owned())
    };
    for kind in ["string", "integer", "number", "enum", "boolean"] {
        let id = format!("client-elicitation-sep1034-{kind}-default");
        assert_eq!(status(&id).as_deref(), Some("SUCCESS"), "{id}: {checks:#?}");
    }
    let failed: Vec<&serde_json::Value> =
        checks.iter().filter(|c| c["status"] == "FAILURE").collect();
    assert_eq!(failed.len(), 1, "{failed:#?}");
    assert_eq!(failed[0]["id"], "client-elicitation-sep1034-general");
    assert!(
        failed[0]["errorMessage"]
            .as_str()
            .unwrap_or_default()
            .contains("got 'cancel'"),
        "{failed:#?}"
    );
}
