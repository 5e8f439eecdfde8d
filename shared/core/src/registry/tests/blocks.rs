//! Prompt blocks: which a card may list, the order a prompt is assembled in, and how much
//! of the model's context window it may use.

use super::fixtures::{block, edit, expect_error, file, load, load_errors, sources};
use crate::registry::RegistrySources;

#[test]
fn an_unknown_block_is_named() {
    let mut s = sources();
    edit(
        &mut s,
        "agents/support.yaml",
        "prompt_blocks: [persona-support]",
        "prompt_blocks: [persona-support, tone-support]",
    );
    expect_error(
        &load_errors(&s),
        "agents/support.yaml",
        "prompt_blocks[1]",
        "tone-support",
    );
}

#[test]
fn a_vertical_card_cannot_list_a_platform_block() {
    let mut s = sources();
    edit(
        &mut s,
        "agents/shop.yaml",
        "prompt_blocks: [persona-shop, instructions-shop]",
        "prompt_blocks: [persona-shop, routing]",
    );
    let e = expect_error(
        &load_errors(&s),
        "agents/shop.yaml",
        "prompt_blocks[1]",
        "routing",
    );
    assert!(e.problem.contains("platform-owned"), "{e}");
}

#[test]
fn a_required_block_cannot_be_listed() {
    let mut s = sources();
    edit(
        &mut s,
        "agents/orchestrator.yaml",
        "prompt_blocks: [routing]",
        "prompt_blocks: [a-safety, routing]",
    );
    let e = expect_error(
        &load_errors(&s),
        "agents/orchestrator.yaml",
        "prompt_blocks[0]",
        "a-safety",
    );
    assert!(e.problem.contains("automatically"), "{e}");
}

#[test]
fn a_registry_without_a_safety_block_names_the_missing_category() {
    let mut s = sources();
    s.blocks.retain(|f| f.path != "blocks/a-safety.md");
    let e = expect_error(&load_errors(&s), "blocks/", "category", "safety");
    assert!(
        e.problem.contains("safety") && e.problem.contains("required: true"),
        "{e}"
    );
}

#[test]
fn a_platform_format_block_marked_not_required_is_an_error() {
    let mut s = sources();
    edit(
        &mut s,
        "blocks/b-format.md",
        "required: true",
        "required: false",
    );
    let e = expect_error(&load_errors(&s), "blocks/b-format.md", "required", "false");
    assert!(e.problem.contains("format"), "{e}");
}

#[test]
fn a_persona_block_that_does_not_say_required_is_not_required_and_is_named() {
    let mut s = sources();
    edit(&mut s, "blocks/c-persona.md", "required: true\n", "");
    let e = expect_error(&load_errors(&s), "blocks/c-persona.md", "required", "false");
    assert!(e.problem.contains("persona"), "{e}");
}

#[test]
fn a_vertical_block_cannot_stand_in_for_the_platforms_safety_block() {
    let mut s = sources();
    edit(
        &mut s,
        "blocks/a-safety.md",
        "owner: platform",
        "owner: vertical",
    );
    let errors = load_errors(&s);
    expect_error(&errors, "blocks/a-safety.md", "required", "true");
    expect_error(&errors, "blocks/", "category", "safety");
}

#[test]
fn more_platform_blocks_of_a_required_category_may_stay_optional() {
    let mut s = sources();
    s.blocks.push(file(
        "blocks/safety-points.md",
        &block("platform", "safety", false, "POINTS SAFETY"),
    ));
    edit(
        &mut s,
        "agents/orchestrator.yaml",
        "prompt_blocks: [routing]",
        "prompt_blocks: [routing, safety-points]",
    );
    let r = load(&s);
    let prefix = &*r.agent("orchestrator").unwrap().prompt.prefix;
    assert!(
        prefix.starts_with("PERSONA\n\nFORMAT\n\nSAFETY\n\nROUTING\n\nPOINTS SAFETY\n\n"),
        "{prefix}"
    );
}

/// Shop's prompt grows to ~1,000 estimated tokens; the model's window decides.
fn with_big_shop_prompt(context_window: u64) -> RegistrySources {
    let mut s = sources();
    s.blocks.push(file(
        "blocks/context-shop.md",
        &block("vertical", "context", false, &"catalog ".repeat(500)),
    ));
    edit(
        &mut s,
        "agents/shop.yaml",
        "prompt_blocks: [persona-shop, instructions-shop]",
        "prompt_blocks: [persona-shop, instructions-shop, context-shop]\n",
    );
    edit(&mut s, "agents/shop.yaml", "model: small", "model: narrow");
    edit(
        &mut s,
        "models.yaml",
        "models:\n",
        &format!(
            "models:\n  narrow: {{provider: offline, model_id: n, context_window: {context_window}, prices: {{input: 0, output: 0}}}}\n"
        ),
    );
    s
}

#[test]
fn a_prompt_over_half_the_context_window_is_an_error() {
    let errors = load_errors(&with_big_shop_prompt(1_500));
    let e = errors
        .iter()
        .find(|e| e.file == "agents/shop.yaml" && e.field == "prompt_blocks")
        .unwrap_or_else(|| panic!("{errors:?}"));
    assert!(
        e.value.starts_with('~') && e.value.ends_with("tokens"),
        "{e}"
    );
    assert!(
        e.problem.contains("narrow") && e.problem.contains("50%"),
        "{e}"
    );
}

#[test]
fn a_prompt_over_a_quarter_of_the_context_window_is_a_warning() {
    let r = load(&with_big_shop_prompt(3_000));
    let shop = r.agent("shop").unwrap();
    let share = shop.prompt.estimated_tokens as f64 / 3_000.0;
    assert!((0.25..0.5).contains(&share), "share {share}");
    match r.warnings() {
        [w] => assert!(
            w.contains("agents/shop.yaml") && w.contains("narrow"),
            "{w}"
        ),
        other => panic!("expected one warning, got {other:?}"),
    }
}

#[test]
fn required_blocks_lead_the_prompt_then_the_cards_blocks_in_declared_order() {
    let mut s = sources();
    // Declared order differs from file and alphabetical order on purpose.
    edit(
        &mut s,
        "agents/shop.yaml",
        "prompt_blocks: [persona-shop, instructions-shop]",
        "prompt_blocks: [instructions-shop, persona-shop]",
    );
    let r = load(&s);
    assert_eq!(
        &*r.agent("shop").unwrap().prompt.prefix,
        "PERSONA\n\nFORMAT\n\nSAFETY\n\nSHOP RULES\n\nSHOP PERSONA"
    );
    // An orchestrator's prompt ends with the runtime's note of its fan-out cap.
    let prefix = &*r.agent("orchestrator").unwrap().prompt.prefix;
    assert!(
        prefix.starts_with("PERSONA\n\nFORMAT\n\nSAFETY\n\nROUTING\n\nYou can consult at most 3"),
        "{prefix}"
    );
}
