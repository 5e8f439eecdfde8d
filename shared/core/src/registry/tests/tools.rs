//! `tools.yaml`: argument schemas that are not valid, or not objects.

use super::fixtures::{edit, expect_error, load_errors, sources};

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
fn a_tool_can_ask_for_approval_always_or_by_a_rule() {
    let mut s = sources();
    edit(
        &mut s,
        "tools.yaml",
        "    connector: {kind: fixture, file: fixtures/offers.yaml}\n",
        "    connector: {kind: fixture, file: fixtures/offers.yaml}\n    approval: {when: \"limit > 5\", action: \"Search {query}\"}\n",
    );
    let registry = super::fixtures::load(&s);
    let tool = registry.tool("search_offers").unwrap();
    let policy = tool.approval.as_ref().unwrap();
    assert!(policy.when.holds(&serde_json::json!({ "limit": 6 })));
    assert!(!policy.when.holds(&serde_json::json!({ "limit": 5 })));
    assert_eq!(
        policy.describe(&serde_json::json!({ "query": "coffee" })),
        "Search coffee"
    );
}

#[test]
fn a_bad_approval_rule_or_a_missing_action_is_named() {
    let mut s = sources();
    edit(
        &mut s,
        "tools.yaml",
        "    connector: {kind: fixture, file: fixtures/offers.yaml}\n",
        "    connector: {kind: fixture, file: fixtures/offers.yaml}\n    approval: {when: \"limit is big\", action: \"Search\"}\n",
    );
    expect_error(
        &load_errors(&s),
        "tools.yaml",
        "tools.search_offers.approval.when",
        "limit is big",
    );
    let mut s = sources();
    edit(
        &mut s,
        "tools.yaml",
        "    connector: {kind: fixture, file: fixtures/offers.yaml}\n",
        "    connector: {kind: fixture, file: fixtures/offers.yaml}\n    approval: {action: \" \"}\n",
    );
    expect_error(
        &load_errors(&s),
        "tools.yaml",
        "tools.search_offers.approval.action",
        "",
    );
}
