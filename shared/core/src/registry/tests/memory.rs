//! An orchestrator's `memory` section: defaults, the summarizer's resolution, and each bad
//! value named by its field.

use super::fixtures::{
    edit, expect_error, load, load_errors, orchestration, sources, with_orchestrator_yaml,
};

#[test]
fn without_a_section_the_defaults_apply_with_the_models_summarizer() {
    let r = load(&sources());
    let m = orchestration(&r).memory.as_ref().unwrap();
    assert_eq!(
        (m.compact_after_turns, m.keep_last, m.max_batch),
        (8, 4, 40)
    );
    assert_eq!(&*m.summarizer.key, "small");
}

#[test]
fn the_section_sets_each_value_and_may_name_its_own_summarizer() {
    let mut s = with_orchestrator_yaml(
        "memory: {compact_after_turns: 12, keep_last: 2, compact_at_fraction: 0.3, \
         max_batch: 10, max_summary_chars: 800, summarizer: small}",
    );
    // Without the models.yaml alias, the card's own model would be used.
    edit(&mut s, "models.yaml", "summarizer: small\n", "");
    let r = load(&s);
    let m = orchestration(&r).memory.as_ref().unwrap();
    assert_eq!(
        (m.compact_after_turns, m.keep_last, m.max_batch),
        (12, 2, 10)
    );
    assert_eq!((m.compact_at_fraction, m.max_summary_chars), (0.3, 800));
    assert_eq!(&*m.summarizer.key, "small");
}

#[test]
fn bad_values_are_named_by_field() {
    for (yaml, field, value) in [
        ("memory: {summarizer: huge}", "memory.summarizer", "huge"),
        (
            "memory: {compact_after_turns: 0}",
            "memory.compact_after_turns",
            "0",
        ),
        (
            "memory: {compact_at_fraction: 1.5}",
            "memory.compact_at_fraction",
            "1.5",
        ),
        (
            "memory: {max_summary_chars: 20}",
            "memory.max_summary_chars",
            "20",
        ),
        ("memory: {keep_last: 8}", "memory.keep_last", "8"),
    ] {
        let e = expect_error(
            &load_errors(&with_orchestrator_yaml(yaml)),
            "agents/orchestrator.yaml",
            field,
            value,
        );
        assert!(!e.problem.is_empty(), "{yaml}: {e}");
    }
}

#[test]
fn an_unknown_key_or_memory_on_a_leaf_card_is_refused() {
    assert!(!load_errors(&with_orchestrator_yaml("memory: {keep_turns: 3}")).is_empty());
    let mut s = sources();
    edit(
        &mut s,
        "agents/shop.yaml",
        "role: native\n",
        "role: native\nmemory: {keep_last: 2}\n",
    );
    let e = expect_error(&load_errors(&s), "agents/shop.yaml", "memory", "");
    assert!(e.problem.contains("orchestrator-only"), "{e}");
}
