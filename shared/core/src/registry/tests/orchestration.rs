//! Orchestrator settings: orchestrator-only fields, the fastpath fallback, turn limits.

use super::fixtures::{edit, expect_error, load, load_errors, sources};

#[test]
fn an_orchestrator_only_field_on_a_leaf_card_is_named() {
    let mut s = sources();
    edit(
        &mut s,
        "agents/shop.yaml",
        "role: native\n",
        "role: native\nfanout_cap: 2\n",
    );
    let e = expect_error(&load_errors(&s), "agents/shop.yaml", "fanout_cap", "");
    assert!(e.problem.contains("orchestrator-only"), "{e}");
}

#[test]
fn a_fastpath_fallback_outside_the_sub_agents_is_named() {
    let mut s = sources();
    edit(
        &mut s,
        "agents/orchestrator.yaml",
        "fallback: shop",
        "fallback: rewards",
    );
    expect_error(
        &load_errors(&s),
        "agents/orchestrator.yaml",
        "fastpath.fallback",
        "rewards",
    );
}

#[test]
fn a_huge_episode_window_does_not_panic_the_loader() {
    let mut s = sources();
    edit(
        &mut s,
        "agents/orchestrator.yaml",
        "fastpath:",
        "turn_limits: {episode_window_s: 18446744073709551615}\nfastpath:",
    );
    let r = load(&s);
    let limits = r
        .agent("orchestrator")
        .unwrap()
        .orchestration
        .as_ref()
        .unwrap()
        .limits;
    assert_eq!(limits.episode_window_ms, u64::MAX);
}
