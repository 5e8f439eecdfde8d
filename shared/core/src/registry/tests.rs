//! Loader tests: every D-2 error names file, field and value; the shipped registry loads;
//! a new specialist needs data only.

use super::*;
use crate::directive::{Addressable, DirectLinePolicy, DirectMode};
use crate::obligation::ObligationRule;
use crate::ports::model::ReasoningEffort;
use crate::privacy::{MaskStyle, PiiKind, PrivacyPolicy};

const MODELS: &str = "\
summarizer: small
models:
  small:
    provider: offline
    model_id: small-1
    context_window: 100000
    prices: {input: 1.0, output: 2.0, cache_read: 0.1, cache_write: 1.25}
    capabilities: {tool_choice: true, cache_points: true, parallel_tool_calls: true}
";

const TOOLS: &str = "\
tools:
  search_offers:
    description: Search current offers by product words.
    connector: {kind: fixture, file: fixtures/offers.yaml}
    schema:
      type: object
      properties:
        query: {type: string, description: Product words.}
      required: [query]
      additionalProperties: false
    timeout_ms: 5000
    status: searching_offers
    result_template: '{title} ({reward})'
  lookup_receipts:
    description: Find the user's receipts.
    connector: {kind: fixture, file: fixtures/receipts.yaml}
    schema:
      type: object
      properties:
        query: {type: string, description: Store or problem words.}
      additionalProperties: false
    status: matching_receipt
";

const ORCHESTRATOR: &str = "\
id: orchestrator
description: Routes requests to the specialists.
role: orchestrator
model: small
prompt_blocks: [routing]
sub_agents: [support, shop]
fastpath: {allow: [greeting, acknowledgement], fallback: shop}
status_messages:
  codes:
    searching_offers: {text: Looking for offers…, policy: batch}
";

const SHOP: &str = "\
id: shop
label: Shopping
description: Finds offers and deals by product.
role: native
model: small
tools: [search_offers]
prompt_blocks: [persona-shop, instructions-shop]
routing:
  examples: [find me coffee deals]
  keywords: [deals]
";

const SUPPORT: &str = "\
id: support
description: Fixes receipt problems and missing points.
role: native
model: small
tools: [lookup_receipts]
prompt_blocks: [persona-support]
ask_args:
  support_category: {type: string, enum: [receipt_not_scanning, missing_points]}
";

fn block(owner: &str, category: &str, required: bool, body: &str) -> String {
    format!("---\nowner: {owner}\ncategory: {category}\nrequired: {required}\n---\n{body}\n")
}

fn file(path: &str, text: &str) -> SourceFile {
    SourceFile {
        path: path.to_owned(),
        text: text.to_owned(),
    }
}

/// A small valid registry: an orchestrator over `support` and `shop`.
fn sources() -> RegistrySources {
    RegistrySources {
        agents: vec![
            file("agents/orchestrator.yaml", ORCHESTRATOR),
            file("agents/shop.yaml", SHOP),
            file("agents/support.yaml", SUPPORT),
        ],
        blocks: vec![
            // Named so that alphabetical order is not the required order.
            file(
                "blocks/a-safety.md",
                &block("platform", "safety", true, "SAFETY"),
            ),
            file(
                "blocks/b-format.md",
                &block("platform", "format", true, "FORMAT"),
            ),
            file(
                "blocks/c-persona.md",
                &block("platform", "persona", true, "PERSONA"),
            ),
            file(
                "blocks/routing.md",
                &block("platform", "instructions", false, "ROUTING"),
            ),
            file(
                "blocks/persona-shop.md",
                &block("vertical", "persona", false, "SHOP PERSONA"),
            ),
            file(
                "blocks/instructions-shop.md",
                &block("vertical", "instructions", false, "SHOP RULES"),
            ),
            file(
                "blocks/persona-support.md",
                &block("vertical", "persona", false, "SUPPORT PERSONA"),
            ),
        ],
        models: Some(file("models.yaml", MODELS)),
        tools: Some(file("tools.yaml", TOOLS)),
    }
}

fn load(sources: &RegistrySources) -> Registry {
    Registry::load(sources, &LoadOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn load_errors(sources: &RegistrySources) -> Vec<LoadError> {
    match Registry::load(sources, &LoadOptions::default()) {
        Ok(_) => panic!("the registry loaded, but a problem was expected"),
        Err(LoadErrors(errors)) => errors,
    }
}

/// Replaces `from` with `to` in the file at `path`; fails if `from` is not there, so a
/// test cannot pass by editing nothing.
fn edit(sources: &mut RegistrySources, path: &str, from: &str, to: &str) {
    let all = sources
        .agents
        .iter_mut()
        .chain(sources.blocks.iter_mut())
        .chain(sources.models.iter_mut())
        .chain(sources.tools.iter_mut());
    let target = all
        .into_iter()
        .find(|f| f.path == path)
        .unwrap_or_else(|| panic!("no file {path}"));
    assert!(target.text.contains(from), "{path} has no {from:?}");
    target.text = target.text.replacen(from, to, 1);
}

/// The one error naming `file` and `field`, checked to carry `value`.
fn expect_error(errors: &[LoadError], file: &str, field: &str, value: &str) -> LoadError {
    let found: Vec<&LoadError> = errors
        .iter()
        .filter(|e| e.file == file && e.field == field)
        .collect();
    match found.as_slice() {
        [one] => {
            assert_eq!(one.value, value, "{one}");
            let shown = one.to_string();
            assert!(shown.contains(file) && shown.contains(field), "{shown}");
            (*one).clone()
        }
        _ => panic!(
            "expected one error at {file} {field}, got:\n{}",
            LoadErrors(errors.to_vec())
        ),
    }
}

// ---- the small registry is valid ------------------------------------------------------

#[test]
fn the_test_registry_loads_cleanly() {
    let r = load(&sources());
    assert!(r.warnings().is_empty(), "{:?}", r.warnings());
    assert_eq!(r.summarizer().map(|m| &*m.key), Some("small"));
}

// ---- D-2 load errors ------------------------------------------------------------------

#[test]
fn an_unknown_model_is_named() {
    let mut s = sources();
    edit(&mut s, "agents/shop.yaml", "model: small", "model: gpt-9");
    let e = expect_error(&load_errors(&s), "agents/shop.yaml", "model", "gpt-9");
    assert!(e.problem.contains("models.yaml"), "{e}");
}

#[test]
fn an_unknown_tool_is_named() {
    let mut s = sources();
    edit(
        &mut s,
        "agents/shop.yaml",
        "tools: [search_offers]",
        "tools: [search_offers, search_ofers]",
    );
    expect_error(
        &load_errors(&s),
        "agents/shop.yaml",
        "tools[1]",
        "search_ofers",
    );
}

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
fn an_unknown_sub_agent_is_named() {
    let mut s = sources();
    edit(
        &mut s,
        "agents/orchestrator.yaml",
        "sub_agents: [support, shop]",
        "sub_agents: [support, shop, travel]",
    );
    expect_error(
        &load_errors(&s),
        "agents/orchestrator.yaml",
        "sub_agents[2]",
        "travel",
    );
}

#[test]
fn a_cycle_in_sub_agents_is_named() {
    let mut s = sources();
    s.agents.push(file(
        "agents/team-a.yaml",
        "id: team-a\ndescription: A.\nrole: orchestrator\nmodel: small\nsub_agents: [team-b]\n",
    ));
    s.agents.push(file(
        "agents/team-b.yaml",
        "id: team-b\ndescription: B.\nrole: orchestrator\nmodel: small\nsub_agents: [shop, team-a]\n",
    ));
    let errors = load_errors(&s);
    let e = expect_error(&errors, "agents/team-b.yaml", "sub_agents[1]", "team-a");
    assert!(e.problem.contains("team-a -> team-b -> team-a"), "{e}");
    assert_eq!(errors.len(), 1, "one cycle, one error: {errors:?}");
}

#[test]
fn a_duplicate_id_across_two_files_names_both() {
    let mut s = sources();
    s.agents.push(file(
        "agents/shop-v2.yaml",
        &SHOP.replace("Shopping", "Shop 2"),
    ));
    let e = expect_error(&load_errors(&s), "agents/shop-v2.yaml", "id", "shop");
    assert!(e.problem.contains("agents/shop.yaml"), "{e}");
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
fn an_invalid_tool_schema_is_named() {
    let mut s = sources();
    edit(
        &mut s,
        "tools.yaml",
        "query: {type: string, description: Product words.}",
        "query: {type: strnig, description: Product words.}",
    );
    let errors = load_errors(&s);
    let e = errors
        .iter()
        .find(|e| e.file == "tools.yaml" && e.field == "tools.search_offers.schema")
        .unwrap_or_else(|| panic!("{errors:?}"));
    assert!(e.problem.contains("not a valid JSON Schema"), "{e}");
    // The tool is gone, so the card listing it is named too.
    expect_error(&errors, "agents/shop.yaml", "tools[0]", "search_offers");
}

#[test]
fn a_tool_schema_that_is_not_an_object_is_named() {
    let mut s = sources();
    edit(
        &mut s,
        "tools.yaml",
        "    schema:\n      type: object\n      properties:\n        query: {type: string, description: Store",
        "    schema:\n      type: array\n      properties:\n        query: {type: string, description: Store",
    );
    expect_error(
        &load_errors(&s),
        "tools.yaml",
        "tools.lookup_receipts.schema.type",
        "\"array\"",
    );
}

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
fn an_unknown_field_in_a_card_is_an_error_naming_it() {
    let mut s = sources();
    edit(
        &mut s,
        "agents/shop.yaml",
        "role: native\n",
        "role: native\ncolour: blue\n",
    );
    let e = expect_error(&load_errors(&s), "agents/shop.yaml", "colour", "colour");
    assert!(e.problem.contains("unknown field `colour`"), "{e}");
}

#[test]
fn two_ids_that_make_the_same_tool_name_are_an_error() {
    let mut s = sources();
    let shop = s
        .agents
        .iter()
        .find(|f| f.path == "agents/shop.yaml")
        .cloned()
        .unwrap();
    s.agents.push(SourceFile {
        path: "agents/shop_x.yaml".into(),
        text: shop.text.replace("id: shop", "id: shop_x"),
    });
    s.agents.push(SourceFile {
        path: "agents/shop-x.yaml".into(),
        text: shop.text.replace("id: shop", "id: shop-x"),
    });
    let errors = load_errors(&s);
    assert!(
        errors
            .iter()
            .any(|e| e.field == "id" && e.problem.contains("ask_shop_x")),
        "{}",
        LoadErrors(errors.clone())
    );
}

#[test]
fn malformed_yaml_is_an_error_naming_the_file() {
    let mut s = sources();
    edit(
        &mut s,
        "agents/support.yaml",
        "tools: [lookup_receipts]",
        "tools: [lookup_receipts",
    );
    let errors = load_errors(&s);
    let e = expect_error(&errors, "agents/support.yaml", "(card)", "");
    assert!(e.problem.contains("not a valid agent card"), "{e}");
    // The card is missing, so the orchestrator's reference to it fails too.
    expect_error(
        &errors,
        "agents/orchestrator.yaml",
        "sub_agents[0]",
        "support",
    );
}

#[test]
fn malformed_tools_and_models_files_are_named() {
    let mut s = sources();
    edit(&mut s, "tools.yaml", "tools:\n", "tools: [\n");
    edit(&mut s, "models.yaml", "models:\n", "modles:\n");
    let errors = load_errors(&s);
    expect_error(&errors, "tools.yaml", "(file)", "");
    let e = expect_error(&errors, "models.yaml", "(file)", "");
    assert!(e.problem.contains("modles"), "{e}");
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

// ---- trust-layer settings: direct_line, obligations, privacy ---------------------------

/// Adds `yaml` (top-level keys) to the test orchestrator card.
fn with_orchestrator_yaml(yaml: &str) -> RegistrySources {
    let mut s = sources();
    edit(
        &mut s,
        "agents/orchestrator.yaml",
        "fastpath:",
        &format!("{yaml}\nfastpath:"),
    );
    s
}

fn orchestration(r: &Registry) -> &Orchestration {
    r.agent("orchestrator")
        .and_then(|a| a.orchestration.as_ref())
        .unwrap()
}

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
fn sub_agents_are_addressable_by_id_and_label() {
    let r = load(&sources());
    let subs = r.sub_agents(r.agent("orchestrator").unwrap());
    let addressable: Vec<Addressable<'_>> = subs.iter().map(|a| a.addressable()).collect();
    assert_eq!(
        addressable,
        [
            Addressable {
                id: "support",
                label: "Support"
            },
            Addressable {
                id: "shop",
                label: "Shopping"
            },
        ]
    );
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

// ---- what a valid registry gives the runtime ------------------------------------------

#[test]
fn ask_tools_are_named_for_the_card_and_described_by_it() {
    let r = load(&sources());
    let support = r.agent("support").unwrap();
    assert_eq!(support.ask_tool_name(), "ask_support");
    assert_eq!(
        &*support.ask_tool.description,
        "Fixes receipt problems and missing points."
    );
    let schema = &support.ask_tool.input_schema;
    assert_eq!(
        schema["required"],
        serde_json::json!(["query", "intent_count"])
    );
    for field in ["query", "prior_context", "intent_count", "support_category"] {
        assert!(schema["properties"].get(field).is_some(), "{field}");
    }
    assert!(support
        .check_ask_args(&serde_json::json!({"query": "q", "intent_count": 1, "support_category": "missing_points"}))
        .is_ok());
    assert!(
        support
            .check_ask_args(
                &serde_json::json!({"query": "q", "intent_count": 1, "support_category": "refund"})
            )
            .is_err()
    );
    assert!(
        support
            .check_ask_args(&serde_json::json!({"query": "q"}))
            .is_err(),
        "intent_count is required"
    );
}

#[test]
fn the_orchestrator_sees_exactly_its_sub_agents_ask_tools_in_declared_order() {
    let r = load(&sources());
    let orchestrator = r.agent("orchestrator").unwrap();
    let names: Vec<&str> = orchestrator.model_tools.iter().map(|t| &*t.name).collect();
    assert_eq!(names, ["ask_support", "ask_shop"]);
    let shop = r.agent("shop").unwrap();
    let names: Vec<&str> = shop.model_tools.iter().map(|t| &*t.name).collect();
    assert_eq!(names, ["search_offers"], "a leaf sees only its own tools");
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
    assert_eq!(
        &*r.agent("orchestrator").unwrap().prompt.prefix,
        "PERSONA\n\nFORMAT\n\nSAFETY\n\nROUTING"
    );
}

#[test]
fn the_entry_is_the_orchestrator_no_card_lists() {
    let mut s = sources();
    // A nested orchestrator under the top one.
    s.agents.push(file(
        "agents/care.yaml",
        "id: care\ndescription: Support desk.\nrole: orchestrator\nmodel: small\nsub_agents: [support]\n",
    ));
    edit(
        &mut s,
        "agents/orchestrator.yaml",
        "sub_agents: [support, shop]",
        "sub_agents: [care, shop]",
    );
    let r = load(&s);
    assert_eq!(&*r.entry(None).unwrap().id, "orchestrator");
    assert_eq!(&*r.entry(Some("care")).unwrap().id, "care");
    assert!(r.entry(Some("shop")).is_err(), "a leaf cannot be the entry");
    assert!(r.entry(Some("nobody")).is_err());
}

// ---- tuning the card's model must be able to take ---------------------------------------

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
    let request = shop.request(crate::ports::model::CallPurpose::Agent, Vec::new());
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

#[test]
fn an_unknown_reasoning_capability_is_named() {
    let mut s = sources();
    edit(
        &mut s,
        "models.yaml",
        "parallel_tool_calls: true}",
        "parallel_tool_calls: true, reasoning_effort: telepathy}",
    );
    let errors = load_errors(&s);
    assert!(
        errors.iter().any(|e| e.file == "models.yaml"),
        "{}",
        LoadErrors(errors.clone())
    );
}

// ---- the shipped registry -------------------------------------------------------------

const SHIPPED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../registry");

fn shipped_sources() -> RegistrySources {
    let read_dir = |dir: &str, ext: &str| {
        let mut files: Vec<SourceFile> = std::fs::read_dir(format!("{SHIPPED}/{dir}"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == ext))
            .map(|p| {
                file(
                    &format!("{dir}/{}", p.file_name().unwrap().to_str().unwrap()),
                    &std::fs::read_to_string(&p).unwrap(),
                )
            })
            .collect();
        files.sort_by(|a, b| a.path.cmp(&b.path));
        files
    };
    let read_one = |name: &str| {
        Some(file(
            name,
            &std::fs::read_to_string(format!("{SHIPPED}/{name}")).unwrap(),
        ))
    };
    RegistrySources {
        agents: read_dir("agents", "yaml"),
        blocks: read_dir("blocks", "md"),
        models: read_one("models.yaml"),
        tools: read_one("tools.yaml"),
    }
}

fn shipped_options() -> LoadOptions {
    LoadOptions {
        connector_kinds: vec!["fixture".into(), "rate_table".into()],
        providers: vec!["bedrock".into(), "offline".into()],
    }
}

fn load_shipped(sources: &RegistrySources) -> Registry {
    Registry::load(sources, &shipped_options()).unwrap_or_else(|e| panic!("{e}"))
}

fn ask_names(agent: &Agent) -> Vec<&str> {
    agent.model_tools.iter().map(|t| &*t.name).collect()
}

#[test]
fn the_shipped_registry_loads_with_no_problems() {
    let r = load_shipped(&shipped_sources());
    assert!(r.warnings().is_empty(), "{:?}", r.warnings());
    let entry = r.entry(None).unwrap();
    assert_eq!(&*entry.id, "orchestrator");
    assert_eq!(
        ask_names(entry),
        ["ask_shop", "ask_support", "ask_rewards", "ask_strategist"]
    );
    assert_eq!(r.summarizer().map(|m| &*m.provider), Some("bedrock"));
    // The strategist thinks before it answers; the lookup cards do not.
    let effort = |id: &str| r.agent(id).unwrap().tuning.inference.reasoning_effort;
    assert_eq!(effort("strategist"), Some(ReasoningEffort::Medium));
    assert_eq!(effort("shop"), None);
    assert!(
        r.model("offline").is_some(),
        "local runs need the offline model"
    );
    for tool in r.tools() {
        assert!(
            tool.envelope_major.is_some(),
            "{} has no envelope_major",
            tool.id
        );
        assert!(
            tool.result_template.is_some(),
            "{} has no result_template",
            tool.id
        );
    }
    for agent in r.agents() {
        assert!(
            agent.routing.examples.len() >= 6 || agent.orchestration.is_some(),
            "{} needs routing examples",
            agent.id
        );
    }
}

#[test]
fn the_shipped_orchestrator_has_words_for_every_tool_status_code() {
    let r = load_shipped(&shipped_sources());
    let codes = &r
        .entry(None)
        .unwrap()
        .orchestration
        .as_ref()
        .unwrap()
        .status
        .codes;
    for tool in r.tools() {
        let code = tool
            .status_code
            .as_deref()
            .unwrap_or_else(|| panic!("{} emits no status code", tool.id));
        assert!(
            codes.contains_key(code),
            "no words for {code} ({})",
            tool.id
        );
    }
}

#[test]
fn the_shipped_orchestrator_declares_its_trust_settings() {
    let r = load_shipped(&shipped_sources());
    let o = r.entry(None).unwrap().orchestration.as_ref().unwrap();
    assert_eq!(o.direct_line, DirectLinePolicy::default());
    let support = o
        .obligations
        .iter()
        .find(|rule| &*rule.agent == "support")
        .unwrap();
    assert!(support.fires("Can I get a refund for this?"));
    assert!(support.fires("I filed a CHARGEBACK"));
    assert_eq!(o.privacy.kinds, PiiKind::ALL.to_vec());
    assert_eq!(o.privacy.mask, MaskStyle::Label);
}

#[test]
fn the_shipped_demo_sentence_splits_between_support_and_shop() {
    let r = load_shipped(&shipped_sources());
    let hints = |id: &str| {
        let a = r.agent(id).unwrap();
        let mut text = a.routing.keywords.join(" ");
        text.push(' ');
        text.push_str(&a.routing.examples.join(" "));
        text.to_lowercase()
    };
    let (support, shop) = (hints("support"), hints("shop"));
    for word in ["receipt", "scan"] {
        assert!(support.contains(word) && !shop.contains(word), "{word}");
    }
    for word in ["coffee", "deals"] {
        assert!(shop.contains(word) && !support.contains(word), "{word}");
    }
}

#[test]
fn a_fifth_specialist_needs_only_data() {
    let mut s = shipped_sources();
    s.agents.push(file(
        "agents/meals.yaml",
        "\
id: meals
label: Meal planner
description: Plans a week of dinners around the user's budget and current offers.
role: native
model: claude-haiku
tools: [find_recipes]
prompt_blocks: [persona-meals, instructions-meals]
routing:
  examples: [plan my dinners for this week under $60]
  keywords: [dinner, recipe, meal plan]
",
    ));
    s.blocks.push(file(
        "blocks/persona-meals.md",
        &block(
            "vertical",
            "persona",
            false,
            "You plan cheap, tasty dinners.",
        ),
    ));
    s.blocks.push(file(
        "blocks/instructions-meals.md",
        &block(
            "vertical",
            "instructions",
            false,
            "Call find_recipes, then propose three dinners.",
        ),
    ));
    edit(
        &mut s,
        "tools.yaml",
        "  find_savings_playbooks:\n",
        "  find_recipes:
    description: Find recipes by ingredient or budget.
    connector: {kind: fixture, file: fixtures/meals/recipes.yaml}
    schema:
      type: object
      properties:
        query: {type: string, description: Ingredients or dish words.}
      required: [query]
      additionalProperties: false
  find_savings_playbooks:
",
    );
    edit(
        &mut s,
        "agents/orchestrator.yaml",
        "sub_agents: [shop, support, rewards, strategist]",
        "sub_agents: [shop, support, rewards, strategist, meals]",
    );
    let r = load_shipped(&s);
    let entry = r.entry(None).unwrap();
    assert_eq!(
        ask_names(entry),
        [
            "ask_shop",
            "ask_support",
            "ask_rewards",
            "ask_strategist",
            "ask_meals"
        ]
    );
    let meals = r.agent("meals").unwrap();
    assert_eq!(&*meals.label, "Meal planner");
    assert!(
        meals
            .prompt
            .prefix
            .ends_with("Call find_recipes, then propose three dinners.")
    );
}
