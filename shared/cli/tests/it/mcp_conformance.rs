//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, npm) drives
//! `baton serve`'s `/mcp` as the server under test: every server scenario runs, and every
//! one outside `tests/conformance/mcp-server-baseline.yml` must pass (a listed one that
//! passes fails the run too, so the baseline only shrinks).
//!
//! The suite is installed by `./infra/mcp-conformance.sh` (npm; cached), which this test
//! runs.

use std::process::Command;

use crate::support::*;

#[test]
fn baton_serve_passes_the_mcp_conformance_suite_outside_its_baseline() {
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

    let sandbox = Sandbox::new();
    let serving = Serving::start(
        &sandbox,
        &["--registry", registry(), "--model", "offline"],
        &[],
    );
    let work = tempfile::tempdir().unwrap();
    let baseline = baton_testkit::crate_dir().join("tests/conformance/mcp-server-baseline.yml");
    let run = Command::new(node)
        .arg(script)
        .args(["server", "--suite", "all", "--url"])
        .arg(format!("http://{}/mcp", serving.addr))
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
    // The suite itself says so; and the scenarios a tools-only server must pass did run.
    let said = format!("{stdout}{stderr}");
    assert!(said.contains("Baseline check passed"), "{said}");
    for scenario in [
        "server-initialize",
        "ping",
        "tools-list",
        "dns-rebinding-protection",
    ] {
        assert!(
            said.contains(&format!("✓ {scenario}:")),
            "{scenario} did not pass:\n{said}"
        );
    }
}
