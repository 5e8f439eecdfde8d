//! The `ask_<id>` tools: one name per card, the card's schema, and the tools each model
//! sees.

use super::fixtures::{load, load_errors, sources};
use crate::registry::{LoadErrors, SourceFile};

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
fn a_description_over_its_budget_is_an_error_that_names_it() {
    let mut s = sources();
    let shop = s
        .agents
        .iter_mut()
        .find(|f| f.path == "agents/shop.yaml")
        .unwrap();
    let long = "Finds offers for the products the user names. ".repeat(40);
    shop.text = shop
        .text
        .lines()
        .map(|l| {
            if l.starts_with("description:") {
                format!("description: {long}")
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let errors = load_errors(&s);
    assert!(
        errors.iter().any(|e| e.file == "agents/shop.yaml"
            && e.field == "description"
            && e.problem.contains("budget of 400 tokens")),
        "{}",
        LoadErrors(errors.clone())
    );
}
