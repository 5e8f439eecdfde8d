//! `baton eval`: the shipped suite with the offline model, JSON, and a malformed suite.

use crate::support::*;

#[test]
fn the_shipped_suite_runs_in_routing_mode_and_reports() {
    let sandbox = Sandbox::new();
    let suite = routing_suite();
    let run = sandbox.run(&["eval", "--registry", registry(), &suite]);
    // The offline model is a lexical stand-in: it misses a few cases (exit 3, not 1).
    assert!(matches!(run.code, 0 | 3), "{run:?}");
    assert!(run.stdout.starts_with("Suite routing ("), "{run:?}");
    assert!(run.stdout.contains("Routing accuracy "), "{run:?}");
    assert!(run.stdout.contains("Intent switches: 30 pairs"), "{run:?}");
    assert!(
        run.stdout
            .contains("Confusion (rows expected, columns consulted):"),
        "{run:?}"
    );
    let json = sandbox.run(&["eval", "--registry", registry(), "--json", &suite]);
    let runs: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let m = &runs[0]["metrics"];
    assert_eq!(m["cases"], 60, "{m}");
    assert_eq!(runs[0]["mode"], "routing");
    let passed = m["passed"].as_u64().unwrap();
    assert_eq!(run.code == 0, passed == 60, "exit status and figures agree");
    // Every switch pair and every single-intent case routes with the offline model.
    assert_eq!(m["by_tag"]["switch"]["accuracy"], 1.0, "{m}");
    assert_eq!(m["by_tag"]["single"]["accuracy"], 1.0, "{m}");
}

/// The shipped routing suite's path.
fn routing_suite() -> String {
    format!("{}/evals/routing.yaml", registry())
}

/// The context suite needs the whole turn: in a routing run it runs end to end, beside the
/// routing suite in routing mode, and reports its four figures, which the gate holds.
#[test]
fn the_context_suite_runs_end_to_end_in_a_routing_run_and_the_gate_holds_its_figures() {
    let sandbox = Sandbox::new();
    let run = sandbox.run(&["eval", "--registry", registry(), "--json"]);
    let runs: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let by_name = |name: &str| {
        runs.as_array()
            .unwrap()
            .iter()
            .find(|r| r["suite"] == name)
            .unwrap_or_else(|| panic!("no suite {name} in {runs}"))
            .clone()
    };
    assert_eq!(by_name("routing")["mode"], "routing");
    let context = by_name("context");
    assert_eq!(context["mode"], "end-to-end");
    let m = &context["metrics"];
    for figure in [
        "prior_context_recall",
        "reference_resolution",
        "compaction_recall",
        "failure_acknowledged",
    ] {
        assert_eq!(m[figure], 1.0, "{figure}: {m}");
    }
    // The partial-failure cases really failed a specialist, and the answer said so.
    let down = context["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "failure-support-down-alone")
        .unwrap();
    assert_eq!(down["observed"]["failed"][0][0], "support", "{down}");
    assert!(
        down["observed"]["answer"]
            .as_str()
            .unwrap()
            .contains("couldn't get an answer from Support"),
        "{down}"
    );

    // A baseline that says the context figures were higher refuses this run.
    let path = baseline(&sandbox, |text| {
        text.replace("\"compaction_recall\": 1.0", "\"compaction_recall\": 1.5")
    });
    let gated = sandbox.run(&[
        "eval",
        "--registry",
        registry(),
        "--baseline",
        "--baseline-file",
        &path,
    ]);
    assert_eq!(gated.code, 4, "{gated:?}");
    assert!(
        gated
            .stderr
            .contains("context: compaction recall fell from 150.0% to 100.0%"),
        "{gated:?}"
    );
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

/// The shipped baseline, with `edit` applied to its text, in the sandbox.
fn baseline(sandbox: &Sandbox, edit: impl Fn(String) -> String) -> String {
    let shipped = std::path::Path::new(registry()).join("evals/baseline.json");
    let text = edit(std::fs::read_to_string(shipped).unwrap());
    let path = sandbox.path().join("baseline.json");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn the_gate_passes_on_the_shipped_baseline_and_catches_a_regression() {
    let sandbox = Sandbox::new();
    let gate = |file: &str| {
        sandbox.run(&[
            "eval",
            "--registry",
            registry(),
            "--baseline",
            "--baseline-file",
            file,
        ])
    };
    let same = baseline(&sandbox, |t| t);
    let run = gate(&same);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stderr.contains("the baseline gate passes"), "{run:?}");

    // A baseline where the three-way case passed: today's run is a regression.
    let better = baseline(&sandbox, |t| {
        t.replace(
            "\"mixed-three-way\": \"failed\"",
            "\"mixed-three-way\": \"passed\"",
        )
    });
    let run = gate(&better);
    assert_eq!(run.code, 4, "{run:?}");
    assert!(
        run.stderr
            .contains("case mixed-three-way passed in the baseline and now failed"),
        "{run:?}"
    );

    // A baseline where a passing case had failed: the improvement is accepted.
    let worse = baseline(&sandbox, |t| {
        t.replace("\"shop-1\": \"passed\"", "\"shop-1\": \"failed\"")
            .replace("0.9393939393939394", "0.9090909090909091")
    });
    assert_eq!(gate(&worse).code, 0);

    // No baseline: a plain error saying how to write one.
    let run = gate(&sandbox.path().join("none.json").display().to_string());
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("--update-baseline"), "{run:?}");
}

#[test]
fn update_baseline_writes_a_whole_file() {
    let sandbox = Sandbox::new();
    let file = sandbox.path().join("new-baseline.json");
    let run = sandbox.run(&[
        "eval",
        "--registry",
        registry(),
        "--update-baseline",
        "--baseline-file",
        file.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(
        written["suites"]["routing"]["cases"]
            .as_object()
            .unwrap()
            .len(),
        60
    );
    assert!(!file.with_extension("json.tmp").exists());
}

#[test]
fn a_stored_turn_becomes_a_case_that_passes_in_one_command() {
    let sandbox = Sandbox::new();
    let chat = |extra: &[&str], text: &str| -> Run {
        let mut args = vec!["chat", "--registry", registry(), "--json"];
        args.extend_from_slice(extra);
        args.push(text);
        sandbox.run(&args)
    };
    let first = chat(&[], "my receipt didn't scan");
    let episode = episode_of(&events(&first.stdout));
    chat(&["--episode", &episode], "find me coffee deals");

    let run = sandbox.run(&["eval", "--registry", registry(), "capture", &episode]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("turn: find me coffee deals"), "{run:?}");
    // Appended under a suite's cases, it is a regression test that passes today.
    let suite = sandbox.path().join("captured.yaml");
    std::fs::write(&suite, format!("cases:\n{}", run.stdout)).unwrap();
    let check = sandbox.run(&[
        "eval",
        "--registry",
        registry(),
        "--json",
        suite.to_str().unwrap(),
    ]);
    assert_eq!(check.code, 0, "{check:?}");
    let report: serde_json::Value = serde_json::from_str(&check.stdout).unwrap();
    let case = &report[0]["results"][0];
    assert_eq!(case["outcome"], "passed", "{case}");
    assert_eq!(case["expected"], serde_json::json!(["shop"]));
    assert!(
        case["tags"].as_array().unwrap().contains(&"switch".into()),
        "{case}"
    );

    let missing = sandbox.run(&["eval", "--registry", registry(), "capture", &episode, "9"]);
    assert_eq!(missing.code, 1, "{missing:?}");
    assert!(missing.stderr.contains("has no turn 9"), "{missing:?}");
}

#[test]
fn repeated_runs_report_a_flaky_case_as_flaky() {
    let sandbox = Sandbox::new();
    // Routes coffee to support the first time only, then to shop.
    let model = sandbox.script(
        r#"
agents:
  orchestrator:
    - when: { purpose: route, user_contains: "coffee" }
      once: true
      tool_calls: [{ name: ask_support, args: { query: "coffee", intent_count: 1 } }]
    - when: { purpose: route, user_contains: "coffee" }
      tool_calls: [{ name: ask_shop, args: { query: "coffee", intent_count: 1 } }]
    - when: { purpose: route }
      text: ["Hello!"]
"#,
    );
    let suite = sandbox.path().join("flaky.yaml");
    std::fs::write(
        &suite,
        "cases:\n  - { id: coffee, turn: find me coffee deals, expect: { route: { agents: [shop] } } }\n  \
         - { id: hello, turn: hi there, expect: { route: fastpath } }\n",
    )
    .unwrap();
    let run = sandbox.run(&[
        "eval",
        "--registry",
        registry(),
        "--model",
        &model,
        "--repeat",
        "3",
        "--concurrency",
        "1",
        suite.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 3, "the first run failed a case: {run:?}");
    assert!(
        run.stdout
            .contains("Over 3 runs: pass@3 100.0%, pass^3 50.0%"),
        "{run:?}"
    );
    assert!(run.stdout.contains("flaky: coffee (2/3)"), "{run:?}");
}
