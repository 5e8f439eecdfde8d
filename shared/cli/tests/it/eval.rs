//! `baton eval`: the shipped suite with the offline model, JSON, and a malformed suite.

use crate::support::*;

#[test]
fn the_shipped_suite_runs_in_routing_mode_and_reports() {
    let sandbox = Sandbox::new();
    let run = sandbox.run(&["eval", "--registry", registry()]);
    // The offline model is a lexical stand-in: it misses a few cases (exit 3, not 1).
    assert!(matches!(run.code, 0 | 3), "{run:?}");
    assert!(run.stdout.starts_with("Suite routing ("), "{run:?}");
    assert!(run.stdout.contains("Routing accuracy "), "{run:?}");
    assert!(run.stdout.contains("Intent switches: 12 pairs"), "{run:?}");
    assert!(
        run.stdout
            .contains("Confusion (rows expected, columns consulted):"),
        "{run:?}"
    );
    let json = sandbox.run(&["eval", "--registry", registry(), "--json"]);
    let runs: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let m = &runs[0]["metrics"];
    assert_eq!(m["cases"], 31, "{m}");
    assert_eq!(runs[0]["mode"], "routing");
    let passed = m["passed"].as_u64().unwrap();
    assert_eq!(run.code == 0, passed == 31, "exit status and figures agree");
    // Every switch pair and every single-intent case routes with the offline model.
    assert_eq!(m["by_tag"]["switch"]["accuracy"], 1.0, "{m}");
    assert_eq!(m["by_tag"]["single"]["accuracy"], 1.0, "{m}");
}

#[test]
fn a_malformed_suite_names_its_file_line_and_field() {
    let sandbox = Sandbox::new();
    let file = sandbox.path().join("bad.yaml");
    std::fs::write(
        &file,
        "cases:\n  - id: a\n    turn: hi\n    expect: { route: { agents: [chef] } }\n",
    )
    .unwrap();
    let run = sandbox.run(&["eval", "--registry", registry(), file.to_str().unwrap()]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("bad.yaml"), "{run:?}");
    assert!(
        run.stderr.contains("cases[0].expect.route.agents"),
        "{run:?}"
    );
    assert!(
        run.stderr.contains("\"chef\" is not a specialist"),
        "{run:?}"
    );
}
