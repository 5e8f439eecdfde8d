//! Trust-layer settings on the orchestrator card: `direct_line`, `obligations` and
//! `privacy`.

use std::sync::Arc;

use super::fixtures::{
    edit, expect_error, load, load_errors, orchestration, sources, with_orchestrator_yaml,
};
use crate::directive::{DirectLinePolicy, DirectMode};
use crate::obligation::ObligationRule;
use crate::privacy::{MaskStyle, PiiKind, PrivacyPolicy};

#[test]
fn trust_settings_default_when_the_card_has_none() {
    let r = load(&sources());
    let o = orchestration(&r);
    assert_eq!(o.direct_line, DirectLinePolicy::default());
    assert_eq!(o.direct_line.prefix, "#");
    assert_eq!(o.direct_line.mode, DirectMode::Strict);
    assert!(o.direct_line.enabled && o.direct_line.sticky);
    assert_eq!(o.direct_line.exit, "end");
    assert!(o.obligations.is_empty());
    assert_eq!(o.privacy, PrivacyPolicy::default());
    assert_eq!(o.privacy.kinds, PiiKind::ALL.to_vec());
    assert_eq!(o.privacy.mask, MaskStyle::Label);
}

#[test]
fn trust_settings_are_typed_from_the_card() {
    let r = load(&with_orchestrator_yaml(
        "\
direct_line: {prefix: '!!', mode: additive, sticky: false, exit: bye}
obligations:
  - agent: support
    keywords: [chargeback, refund]
  - agent: shop
    always: true
privacy: {kinds: [email, iban], mask: last_four}",
    ));
    let o = orchestration(&r);
    assert_eq!(
        o.direct_line,
        DirectLinePolicy {
            enabled: true,
            prefix: "!!".into(),
            mode: DirectMode::Additive,
            sticky: false,
            exit: "bye".into(),
        }
    );
    assert_eq!(
        o.obligations,
        [
            ObligationRule {
                agent: Arc::from("support"),
                keywords: vec!["chargeback".into(), "refund".into()],
                always: false,
                category: None,
            },
            ObligationRule {
                agent: Arc::from("shop"),
                keywords: Vec::new(),
                always: true,
                category: None,
            },
        ]
    );
    assert_eq!(o.privacy.kinds, [PiiKind::Email, PiiKind::Iban]);
    assert_eq!(o.privacy.mask, MaskStyle::LastFour);
}

#[test]
fn an_unknown_direct_line_field_is_named() {
    let errors = load_errors(&with_orchestrator_yaml("direct_line: {prefx: '!'}"));
    let e = expect_error(
        &errors,
        "agents/orchestrator.yaml",
        "direct_line.prefx",
        "prefx",
    );
    assert!(e.problem.contains("unknown field"), "{e}");
}

#[test]
fn a_bad_direct_line_value_is_named() {
    let errors = load_errors(&with_orchestrator_yaml(
        "direct_line: {mode: loose, sticky: maybe}",
    ));
    let e = expect_error(
        &errors,
        "agents/orchestrator.yaml",
        "direct_line.mode",
        "loose",
    );
    assert!(e.problem.contains("strict"), "{e}");
    expect_error(
        &errors,
        "agents/orchestrator.yaml",
        "direct_line.sticky",
        "maybe",
    );
}

#[test]
fn a_direct_line_that_is_not_a_mapping_is_named() {
    let errors = load_errors(&with_orchestrator_yaml("direct_line: yes-please"));
    let e = expect_error(
        &errors,
        "agents/orchestrator.yaml",
        "direct_line",
        "yes-please",
    );
    assert!(e.problem.contains("mapping"), "{e}");
}

#[test]
fn an_unquoted_hash_prefix_gets_a_hint() {
    let errors = load_errors(&with_orchestrator_yaml("direct_line:\n  prefix: #\n"));
    let e = expect_error(
        &errors,
        "agents/orchestrator.yaml",
        "direct_line.prefix",
        "",
    );
    assert!(e.problem.contains("quote"), "{e}");
}

#[test]
fn an_empty_or_spaced_prefix_is_an_error() {
    let errors = load_errors(&with_orchestrator_yaml("direct_line: {prefix: ''}"));
    let e = expect_error(
        &errors,
        "agents/orchestrator.yaml",
        "direct_line.prefix",
        "",
    );
    assert!(e.problem.contains("empty"), "{e}");
    let errors = load_errors(&with_orchestrator_yaml("direct_line: {prefix: '# '}"));
    let e = expect_error(
        &errors,
        "agents/orchestrator.yaml",
        "direct_line.prefix",
        "# ",
    );
    assert!(e.problem.contains("whitespace"), "{e}");
}

#[test]
fn an_exit_word_that_names_a_sub_agent_is_an_error() {
    // By id, whatever the case.
    let errors = load_errors(&with_orchestrator_yaml("direct_line: {exit: Support}"));
    let e = expect_error(
        &errors,
        "agents/orchestrator.yaml",
        "direct_line.exit",
        "Support",
    );
    assert!(e.problem.contains("support"), "{e}");
    // By normalised label: shop's label is \"Shopping\".
    let errors = load_errors(&with_orchestrator_yaml("direct_line: {exit: SHOPPING}"));
    let e = expect_error(
        &errors,
        "agents/orchestrator.yaml",
        "direct_line.exit",
        "SHOPPING",
    );
    assert!(e.problem.contains("shop"), "{e}");
}

#[test]
fn an_exit_word_that_cannot_be_typed_is_an_error() {
    let errors = load_errors(&with_orchestrator_yaml("direct_line: {exit: 'good bye'}"));
    expect_error(
        &errors,
        "agents/orchestrator.yaml",
        "direct_line.exit",
        "good bye",
    );
}

#[test]
fn an_obligation_on_a_card_that_is_not_a_sub_agent_is_named() {
    let errors = load_errors(&with_orchestrator_yaml(
        "obligations:\n  - {agent: rewards, keywords: [points]}",
    ));
    let e = expect_error(
        &errors,
        "agents/orchestrator.yaml",
        "obligations[0].agent",
        "rewards",
    );
    assert!(e.problem.contains("support, shop"), "{e}");
}

#[test]
fn a_category_rule_names_a_declared_argument() {
    let r = load(&with_orchestrator_yaml(
        "obligations:\n  - {agent: shop, category: {field: support_category, values: [missing_points]}}",
    ));
    let rule = &orchestration(&r).obligations[0];
    assert_eq!(&*rule.agent, "shop");
    assert_eq!(
        rule.category.as_ref().map(|c| c.field.as_str()),
        Some("support_category")
    );
    let errors = load_errors(&with_orchestrator_yaml(
        "obligations:\n  - {agent: shop, category: {field: colour, values: [red]}}",
    ));
    expect_error(
        &errors,
        "agents/orchestrator.yaml",
        "obligations[0].category.field",
        "colour",
    );
    let errors = load_errors(&with_orchestrator_yaml(
        "obligations:\n  - {agent: shop, category: {field: support_category, values: []}}",
    ));
    expect_error(
        &errors,
        "agents/orchestrator.yaml",
        "obligations[0].category.values",
        "",
    );
}

#[test]
fn an_obligation_that_can_never_fire_is_named() {
    let errors = load_errors(&with_orchestrator_yaml(
        "obligations:\n  - {agent: support, keywords: [refund]}\n  - {agent: shop}",
    ));
    let e = expect_error(
        &errors,
        "agents/orchestrator.yaml",
        "obligations[1]",
        "shop",
    );
    assert!(e.problem.contains("keywords, a category or always"), "{e}");
    let errors = load_errors(&with_orchestrator_yaml(
        "obligations:\n  - {agent: support, keywords: [refund, ' ']}",
    ));
    expect_error(
        &errors,
        "agents/orchestrator.yaml",
        "obligations[0].keywords[1]",
        " ",
    );
}

#[test]
fn a_malformed_obligation_is_named() {
    let errors = load_errors(&with_orchestrator_yaml(
        "obligations:\n  - {keywords: [refund]}\n  - {agent: shop, when: always}",
    ));
    expect_error(
        &errors,
        "agents/orchestrator.yaml",
        "obligations[0].agent",
        "",
    );
    let e = expect_error(
        &errors,
        "agents/orchestrator.yaml",
        "obligations[1].when",
        "when",
    );
    assert!(e.problem.contains("unknown field"), "{e}");
    let errors = load_errors(&with_orchestrator_yaml("obligations: {agent: shop}"));
    expect_error(
        &errors,
        "agents/orchestrator.yaml",
        "obligations",
        "{\"agent\":\"shop\"}",
    );
}

#[test]
fn an_unknown_privacy_kind_is_named() {
    let errors = load_errors(&with_orchestrator_yaml(
        "privacy: {kinds: [email, ssn, email]}",
    ));
    let e = expect_error(
        &errors,
        "agents/orchestrator.yaml",
        "privacy.kinds[1]",
        "ssn",
    );
    assert!(e.problem.contains("card_number"), "{e}");
    let e = expect_error(
        &errors,
        "agents/orchestrator.yaml",
        "privacy.kinds[2]",
        "email",
    );
    assert!(e.problem.contains("twice"), "{e}");
}

#[test]
fn a_bad_privacy_field_is_named() {
    let errors = load_errors(&with_orchestrator_yaml(
        "privacy: {mask: blur, colour: red}",
    ));
    expect_error(&errors, "agents/orchestrator.yaml", "privacy.mask", "blur");
    expect_error(
        &errors,
        "agents/orchestrator.yaml",
        "privacy.colour",
        "colour",
    );
}

#[test]
fn trust_settings_on_a_leaf_card_are_orchestrator_only() {
    let mut s = sources();
    edit(
        &mut s,
        "agents/shop.yaml",
        "role: native\n",
        "role: native\nprivacy: {mask: stars}\ndirect_line: {mode: strict}\nobligations: []\n",
    );
    let errors = load_errors(&s);
    for field in ["privacy", "direct_line", "obligations"] {
        let e = expect_error(&errors, "agents/shop.yaml", field, "");
        assert!(e.problem.contains("orchestrator-only"), "{e}");
    }
}
