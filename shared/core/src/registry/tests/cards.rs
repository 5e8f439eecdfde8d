//! Agent cards: the test registry loads; references to models, tools and cards resolve;
//! ids are unique; cycles and bad YAML are named; the entry orchestrator.

use super::fixtures::{SHOP, edit, expect_error, file, load, load_errors, sources};
use crate::directive::Addressable;

#[test]
fn the_test_registry_loads_cleanly() {
    let r = load(&sources());
    assert!(r.warnings().is_empty(), "{:?}", r.warnings());
    assert_eq!(r.summarizer().map(|m| &*m.key), Some("small"));
}

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

#[test]
fn a_card_of_one_tool_may_borrow_the_tools_description() {
    let mut s = sources();
    edit(
        &mut s,
        "agents/shop.yaml",
        "description: Finds offers and deals by product.\n",
        "",
    );
    let r = load(&s);
    let shop = r.agent("shop").unwrap();
    assert_eq!(
        &*shop.description,
        "Search current offers by product words."
    );
    assert_eq!(
        &*shop.ask_tool.description,
        "Search current offers by product words."
    );
    // With two tools there is nothing to borrow from.
    edit(
        &mut s,
        "agents/shop.yaml",
        "tools: [search_offers]",
        "tools: [search_offers, lookup_receipts]",
    );
    let e = expect_error(&load_errors(&s), "agents/shop.yaml", "description", "");
    assert!(e.problem.contains("routing signal"), "{e}");
}
