//! The `ask_<id>` tools: one name per card, the card's schema, and the tools each model
//! sees.

use super::fixtures::{edit, expect_error, load, load_errors, sources, with_orchestrator_yaml};
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

#[test]
fn a_card_that_takes_pictures_gets_the_pictures_argument_and_others_do_not() {
    let mut s = sources();
    edit(
        &mut s,
        "agents/support.yaml",
        "ask_args:",
        "takes_pictures: true\nask_args:",
    );
    let r = load(&s);
    let support = r.agent("support").unwrap();
    assert!(support.takes_pictures);
    let pictures = &support.ask_tool.input_schema["properties"]["pictures"];
    assert_eq!(pictures["type"], "array");
    assert_eq!(pictures["items"]["type"], "integer");
    assert_eq!(pictures["items"]["minimum"], 1);
    let args = |pictures: serde_json::Value| serde_json::json!({"query": "q", "intent_count": 1, "pictures": pictures});
    assert!(
        support
            .check_ask_args(&args(serde_json::json!([1, 2])))
            .is_ok()
    );
    for bad in [
        serde_json::json!([0]),
        serde_json::json!(["1"]),
        serde_json::json!([1, 1]),
        serde_json::json!(1),
    ] {
        assert!(support.check_ask_args(&args(bad.clone())).is_err(), "{bad}");
    }
    let shop = r.agent("shop").unwrap();
    assert!(!shop.takes_pictures);
    assert!(
        shop.ask_tool.input_schema["properties"]
            .get("pictures")
            .is_none()
    );
    // The orchestrator sees the argument on the card's tool, as the card's tool has it.
    let orchestrator = r.agent("orchestrator").unwrap();
    let ask_support = orchestrator
        .model_tools
        .iter()
        .find(|t| &*t.name == "ask_support")
        .unwrap();
    assert_eq!(
        &ask_support.input_schema["properties"]["pictures"],
        pictures
    );
}

#[test]
fn the_pictures_a_call_passes_are_numbers_of_the_messages_pictures() {
    let mut s = sources();
    edit(
        &mut s,
        "agents/support.yaml",
        "ask_args:",
        "takes_pictures: true\nask_args:",
    );
    let r = load(&s);
    let support = r.agent("support").unwrap();
    let call = |pictures: serde_json::Value| serde_json::json!({"query": "q", "intent_count": 1, "pictures": pictures});
    assert_eq!(
        support.pictures_passed(&call(serde_json::json!([2, 1])), 2),
        Ok(vec![1, 0])
    );
    assert_eq!(
        support.pictures_passed(&call(serde_json::json!([])), 2),
        Ok(vec![])
    );
    assert_eq!(
        support.pictures_passed(&serde_json::json!({"query": "q"}), 2),
        Ok(vec![])
    );
    let out_of_range = support
        .pictures_passed(&call(serde_json::json!([1, 3])), 2)
        .unwrap_err();
    assert!(
        out_of_range.contains("3 names no picture"),
        "{out_of_range}"
    );
    assert!(out_of_range.contains("numbered 1 to 2"), "{out_of_range}");
    let none = support
        .pictures_passed(&call(serde_json::json!([1])), 0)
        .unwrap_err();
    assert!(none.contains("has none"), "{none}");
    assert!(
        support
            .pictures_passed(&call(serde_json::json!([0])), 2)
            .is_err()
    );
    // A card that takes none is passed none, whatever the call says.
    let shop = r.agent("shop").unwrap();
    assert_eq!(
        shop.pictures_passed(&call(serde_json::json!([1])), 1),
        Ok(vec![])
    );
}

#[test]
fn pictures_is_reserved_and_only_a_specialist_takes_pictures() {
    let mut s = sources();
    edit(
        &mut s,
        "agents/support.yaml",
        "ask_args:\n",
        "ask_args:\n  pictures: {type: string}\n",
    );
    let errors = load_errors(&s);
    expect_error(
        &errors,
        "agents/support.yaml",
        "ask_args.pictures",
        "pictures",
    );
    let s = with_orchestrator_yaml("takes_pictures: true");
    let errors = load_errors(&s);
    let e = expect_error(
        &errors,
        "agents/orchestrator.yaml",
        "takes_pictures",
        "true",
    );
    assert!(e.problem.contains("only a specialist"), "{e}");
}
