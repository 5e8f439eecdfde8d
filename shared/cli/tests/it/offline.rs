//! The shipped registry with the offline model: no network, deterministic.

use serde_json::Value;

use crate::support::*;

/// `baton chat` over the shipped registry with `args`.
fn chat(sandbox: &Sandbox, args: &[&str]) -> Run {
    let mut all = vec!["chat", "--registry", registry()];
    all.extend_from_slice(args);
    sandbox.run(&all)
}

/// The `agents_consulted` event of a `--json` run.
fn consulted(stdout: &str) -> Value {
    events(stdout)
        .into_iter()
        .find(|e| e["type"] == "agents_consulted")
        .unwrap()
}

#[test]
fn a_mixed_request_consults_support_and_shop() {
    let sandbox = Sandbox::new();
    let run = chat(
        &sandbox,
        &[
            "--model",
            "offline",
            "my receipt didn't scan and find me coffee deals",
        ],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let footer = run.stdout.lines().last().unwrap();
    assert!(footer.starts_with("Consulted: "), "{footer:?}");
    assert!(footer.contains("Support"), "{footer:?}");
    assert!(footer.contains("Shopping"), "{footer:?}");
}

#[test]
fn offline_is_the_default_model() {
    let sandbox = Sandbox::new();
    let run = chat(&sandbox, &["--json", "find me coffee deals"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(consulted(&run.stdout)["agents"][0]["agent_id"], "shop");
}

#[test]
fn the_direct_line_prints_the_specialists_own_answer_and_the_record() {
    let sandbox = Sandbox::new();
    let run = chat(
        &sandbox,
        &["#strategist what are three risks in my plan to save for a bike?"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.starts_with("→ Savings strategist, directly\n"),
        "{run:?}"
    );
    assert!(
        run.stdout.contains("\nSavings strategist (direct):\n"),
        "{run:?}"
    );
    let footer = run.stdout.lines().last().unwrap();
    assert!(
        footer.starts_with("Consulted: Savings strategist ·"),
        "{footer:?}"
    );
}

#[test]
fn a_required_specialist_is_consulted_and_an_unknown_one_refused() {
    let sandbox = Sandbox::new();
    let run = chat(
        &sandbox,
        &[
            "--json",
            "--must-consult",
            "rewards",
            "find me coffee deals",
        ],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let consulted = consulted(&run.stdout);
    let ids: Vec<&str> = consulted["agents"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["agent_id"].as_str())
        .collect();
    assert!(ids.contains(&"rewards"), "{ids:?}");
    assert!(ids.contains(&"shop"), "{ids:?}");

    let run = chat(
        &sandbox,
        &["--must-consult", "nobody", "find me coffee deals"],
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("no specialist called nobody"),
        "{run:?}"
    );
}
