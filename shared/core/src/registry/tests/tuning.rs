//! Tuning the card's model must be able to take: reasoning effort, text verbosity and
//! temperature.

use super::fixtures::{edit, expect_error, load, load_errors, sources};
use crate::model::ReasoningEffort;
use crate::registry::{ReasoningSupport, RegistrySources};

/// The test registry with a second model, `thinker`, that takes a reasoning effort.
fn with_thinker() -> RegistrySources {
    let mut s = sources();
    edit(
        &mut s,
        "models.yaml",
        "models:\n",
        "models:\n  thinker:\n    provider: offline\n    model_id: thinker-1\n    \
         context_window: 100000\n    prices: {input: 1.0, output: 2.0}\n    \
         capabilities: {tool_choice: true, reasoning_effort: thinking}\n",
    );
    s
}

#[test]
fn a_reasoning_effort_the_model_takes_is_typed_onto_its_requests() {
    let mut s = with_thinker();
    edit(
        &mut s,
        "agents/shop.yaml",
        "model: small",
        "model: thinker\ntuning: {max_output_tokens: 600, reasoning_effort: high}",
    );
    let r = load(&s);
    let shop = r.agent("shop").unwrap();
    assert_eq!(
        shop.model.capabilities.reasoning_effort,
        Some(ReasoningSupport::Thinking)
    );
    let request = shop.request(crate::model::CallPurpose::Agent, Vec::new());
    assert_eq!(
        request.inference.reasoning_effort,
        Some(ReasoningEffort::High)
    );
    assert_eq!(request.inference.max_output_tokens, Some(600));
    assert_eq!(request.inference.text_verbosity, None);
}

#[test]
fn a_reasoning_effort_the_model_cannot_take_is_named() {
    let mut s = sources();
    edit(
        &mut s,
        "agents/shop.yaml",
        "model: small",
        "model: small\ntuning: {reasoning_effort: medium}",
    );
    let e = expect_error(
        &load_errors(&s),
        "agents/shop.yaml",
        "tuning.reasoning_effort",
        "medium",
    );
    assert!(e.problem.contains("small"), "{e}");
}

#[test]
fn a_text_verbosity_the_model_cannot_take_is_named() {
    let mut s = with_thinker();
    edit(
        &mut s,
        "agents/shop.yaml",
        "model: small",
        "model: thinker\ntuning: {text_verbosity: low}",
    );
    let e = expect_error(
        &load_errors(&s),
        "agents/shop.yaml",
        "tuning.text_verbosity",
        "low",
    );
    assert!(e.problem.contains("thinker"), "{e}");
}

#[test]
fn an_unknown_effort_or_verbosity_is_named() {
    let mut s = with_thinker();
    edit(
        &mut s,
        "agents/shop.yaml",
        "model: small",
        "model: thinker\ntuning: {reasoning_effort: extreme, text_verbosity: chatty}",
    );
    let errors = load_errors(&s);
    let e = expect_error(
        &errors,
        "agents/shop.yaml",
        "tuning.reasoning_effort",
        "extreme",
    );
    assert!(e.problem.contains("low, medium, high"), "{e}");
    expect_error(
        &errors,
        "agents/shop.yaml",
        "tuning.text_verbosity",
        "chatty",
    );
}

#[test]
fn extended_thinking_with_a_temperature_is_named() {
    // Claude's extended thinking runs at its own temperature; a card cannot ask for both.
    let mut s = with_thinker();
    edit(
        &mut s,
        "agents/shop.yaml",
        "model: small",
        "model: thinker\ntuning: {temperature: 0.3, reasoning_effort: low}",
    );
    let e = expect_error(
        &load_errors(&s),
        "agents/shop.yaml",
        "tuning.temperature",
        "0.3",
    );
    assert!(e.problem.contains("reasoning_effort"), "{e}");
}
