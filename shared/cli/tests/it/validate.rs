//! `baton validate`.

use crate::support::*;

#[test]
fn the_shipped_registry_is_valid() {
    let run = Sandbox::new().run(&["validate", registry()]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.starts_with("registry OK: 5 agents, "), "{run:?}");
    assert!(run.stdout.contains(" tools, "), "{run:?}");
}

#[test]
fn a_broken_registry_names_file_field_and_value() {
    let sandbox = Sandbox::new();
    let copy = sandbox.path().join("registry");
    copy_dir(std::path::Path::new(registry()), &copy);
    let card = copy.join("agents/shop.yaml");
    let text = std::fs::read_to_string(&card).unwrap();
    std::fs::write(&card, text.replace("- search_offers", "- search_ofers")).unwrap();

    let run = sandbox.run(&["validate", copy.to_str().unwrap()]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.starts_with("error: "), "{run:?}");
    for part in ["agents/shop.yaml", "tools", "search_ofers"] {
        assert!(run.stderr.contains(part), "missing {part:?}: {run:?}");
    }
    assert!(run.stdout.is_empty(), "{run:?}");
}

#[test]
fn a_missing_registry_is_a_plain_error() {
    let run = Sandbox::new().run(&["validate", "no/such/registry"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("no/such/registry"), "{run:?}");
    assert!(
        run.stderr.contains("--registry"),
        "it says how to give one: {run:?}"
    );
    assert!(!run.stderr.contains("panicked"), "{run:?}");
}

#[test]
fn an_unknown_subcommand_is_a_usage_error() {
    let run = Sandbox::new().run(&["frobnicate"]);
    assert_eq!(run.code, 2, "{run:?}");
}

#[test]
fn a_specialist_added_without_eval_cases_is_a_warning_and_with_strict_an_error() {
    let sandbox = Sandbox::new();
    let copy = sandbox.path().join("registry");
    copy_dir(std::path::Path::new(registry()), &copy);
    // A fifth specialist: a copy of rewards under another id, listed by the orchestrator.
    let card = std::fs::read_to_string(copy.join("agents/rewards.yaml")).unwrap();
    std::fs::write(
        copy.join("agents/perks.yaml"),
        card.replace("id: rewards", "id: perks"),
    )
    .unwrap();
    let orchestrator = copy.join("agents/orchestrator.yaml");
    let text = std::fs::read_to_string(&orchestrator).unwrap();
    let with_perks = text.replacen(
        "sub_agents: [shop, support, rewards, strategist]",
        "sub_agents: [shop, support, rewards, strategist, perks]",
        1,
    );
    assert_ne!(text, with_perks, "the orchestrator's sub-agents as shipped");
    std::fs::write(&orchestrator, with_perks).unwrap();

    let run = sandbox.run(&["validate", copy.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stderr
            .contains("warning: perks has 0 single-intent eval case(s)"),
        "{run:?}"
    );
    assert!(
        run.stderr
            .contains("no eval case switches from shop to perks"),
        "{run:?}"
    );
    let strict = sandbox.run(&["validate", "--strict", copy.to_str().unwrap()]);
    assert_eq!(strict.code, 1, "{strict:?}");
    assert!(
        strict
            .stderr
            .contains("the eval suites do not cover the specialists"),
        "{strict:?}"
    );
}
