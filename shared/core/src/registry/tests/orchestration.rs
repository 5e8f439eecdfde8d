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

#[test]
fn transform_fills_the_calls_fields_and_forward_shows_the_words_as_written() {
    let mut s = sources();
    edit(
        &mut s,
        "agents/orchestrator.yaml",
        "searching_offers: {text: Looking for offers…, policy: batch}",
        "searching_offers: {text: '{agent} is looking for {query}…', policy: transform}\n    matching_receipt: {text: Finding your receipt…, policy: forward}",
    );
    let r = load(&s);
    let codes = &super::fixtures::orchestration(&r).status.codes;
    let fields = serde_json::json!({ "query": "coffee" });
    assert_eq!(
        codes["searching_offers"].line("Shopping", &fields),
        "Shopping is looking for coffee…"
    );
    assert_eq!(
        codes["matching_receipt"].line("Support", &fields),
        "Finding your receipt…"
    );
}

#[test]
fn placeholders_outside_transform_or_naming_no_required_argument_are_refused() {
    let mut s = sources();
    edit(
        &mut s,
        "agents/orchestrator.yaml",
        "searching_offers: {text: Looking for offers…, policy: batch}",
        "searching_offers: {text: '{agent} is looking…', policy: forward}\n    matching_receipt: {text: 'Finding {query}…', policy: transform}",
    );
    let errors = load_errors(&s);
    let e = expect_error(
        &errors,
        "agents/orchestrator.yaml",
        "status_messages.codes.searching_offers.text",
        "{agent} is looking…",
    );
    assert!(e.problem.contains("only under policy: transform"), "{e}");
    // lookup_receipts' `query` is optional: a call may not have it.
    let e = expect_error(
        &errors,
        "agents/orchestrator.yaml",
        "status_messages.codes.matching_receipt.text",
        "{query}",
    );
    assert!(e.problem.contains("required argument"), "{e}");
}

#[test]
fn a_routing_orchestrator_is_told_its_fanout_cap_and_to_choose_the_most_relevant() {
    let r = load(&sources());
    let prefix = &r.agent("orchestrator").unwrap().prompt.prefix;
    assert!(prefix.contains("at most 3 specialists"), "{prefix}");
    assert!(prefix.contains("most relevant"), "{prefix}");
    let mut s = sources();
    edit(
        &mut s,
        "agents/orchestrator.yaml",
        "fastpath:",
        "fanout_cap: 1\nfastpath:",
    );
    let r = load(&s);
    let prefix = &r.agent("orchestrator").unwrap().prompt.prefix;
    assert!(prefix.contains("at most 1 specialist for"), "{prefix}");
    // A specialist is told nothing of it.
    assert!(!r.agent("shop").unwrap().prompt.prefix.contains("at most"));
}
