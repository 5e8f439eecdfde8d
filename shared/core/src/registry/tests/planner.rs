//! `orchestration: planner`: skills grouped by domain from the specialists' tools, the
//! worker template, the planner's tools, and every misconfiguration named.

use super::fixtures::{block, edit, expect_error, file, load, load_errors, sources};
use crate::registry::RegistrySources;

const PLANNER: &str = "\
id: planner
description: Plans multi-step requests.
role: orchestrator
model: small
orchestration: planner
prompt_blocks: [routing]
planner:
  worker_blocks: [worker]
  agent_tool_calls: 3
";

fn with_planner() -> RegistrySources {
    let mut s = sources();
    s.agents.push(file("agents/planner.yaml", PLANNER));
    s.blocks.push(file(
        "blocks/worker.md",
        &block("platform", "instructions", false, "WORKER RULES"),
    ));
    s
}

#[test]
fn a_planner_grants_every_specialists_tools_as_skills_by_domain() {
    let r = load(&with_planner());
    let planner = r.agent("planner").unwrap();
    let p = planner
        .orchestration
        .as_ref()
        .unwrap()
        .mode
        .planner()
        .unwrap();
    let domains: Vec<&str> = p.catalog.domains.iter().map(|d| &*d.id).collect();
    assert_eq!(domains, ["shop", "support"]);
    let skills: Vec<&str> = p.catalog.skills().map(|s| &*s.name).collect();
    assert_eq!(skills, ["shop.search_offers", "support.lookup_receipts"]);
    assert_eq!(
        &*p.catalog.domain("shop").unwrap().description,
        "Finds offers and deals by product."
    );
    let tools: Vec<&str> = planner.model_tools.iter().map(|t| &*t.name).collect();
    assert_eq!(tools, ["get_skill", "dispatch_agent", "get_agent_results"]);
    // Workers start with the platform blocks, then the card's worker blocks.
    assert_eq!(
        &*p.worker.prompt.prefix,
        "PERSONA\n\nFORMAT\n\nSAFETY\n\nWORKER RULES"
    );
    assert_eq!(p.worker.limits.max_tool_calls, 3);
    assert_eq!(p.max_agent_tool_calls, 10);
    // With a router beside it, the router stays the default entry; the planner by name.
    assert_eq!(&*r.entry(None).unwrap().id, "orchestrator");
    assert_eq!(&*r.entry(Some("planner")).unwrap().id, "planner");
}

#[test]
fn skills_narrow_the_grant_to_domains_and_single_skills() {
    let mut s = with_planner();
    edit(
        &mut s,
        "agents/planner.yaml",
        "planner:\n",
        "skills: [support.lookup_receipts]\nplanner:\n",
    );
    let r = load(&s);
    let p = r
        .agent("planner")
        .unwrap()
        .orchestration
        .as_ref()
        .unwrap()
        .mode
        .planner()
        .unwrap()
        .clone();
    let skills: Vec<&str> = p.catalog.skills().map(|s| &*s.name).collect();
    assert_eq!(skills, ["support.lookup_receipts"]);
}

#[test]
fn planner_misconfigurations_are_named() {
    let mut s = with_planner();
    edit(
        &mut s,
        "agents/planner.yaml",
        "planner:\n",
        "skills: [weather, shop]\nsub_agents: [shop]\nfastpath: {allow: [greeting], fallback: shop}\nplanner:\n  worker_model: huge\n",
    );
    edit(&mut s, "agents/planner.yaml", "[worker]", "[nope]");
    let errors = load_errors(&s);
    let f = "agents/planner.yaml";
    expect_error(&errors, f, "skills[0]", "weather");
    expect_error(&errors, f, "sub_agents", "");
    expect_error(&errors, f, "fastpath", "");
    expect_error(&errors, f, "planner.worker_model", "huge");
    expect_error(&errors, f, "planner.worker_blocks[0]", "nope");

    let mut s = with_planner();
    edit(
        &mut s,
        "agents/planner.yaml",
        "orchestration: planner",
        "orchestration: swarm",
    );
    expect_error(
        &load_errors(&s),
        "agents/planner.yaml",
        "orchestration",
        "swarm",
    );

    let mut s = with_planner();
    edit(
        &mut s,
        "agents/planner.yaml",
        "agent_tool_calls: 3",
        "agent_tool_calls: 30",
    );
    expect_error(
        &load_errors(&s),
        "agents/planner.yaml",
        "planner.agent_tool_calls",
        "30",
    );

    let mut s = sources();
    edit(
        &mut s,
        "agents/shop.yaml",
        "role: native\n",
        "role: native\nskills: [support]\n",
    );
    expect_error(&load_errors(&s), "agents/shop.yaml", "skills", "");
}
