//! The plan's pure parts: refused step shapes, waves, splitting at a budget, what
//! dependents are told, and the scoped `use_skill`.

use std::sync::Arc;

use proptest::prelude::*;
use serde_json::json;

use super::graph::{Dispatch, StepLimits, accept_step, run_order, split_at_room};
use super::outcome::{NodeResult, NodeStatus, blocked, inputs, results_document};
use super::record::{PlanCheckpoint, PlanRecord};
use super::tools::{planner_tools, skill_document, use_skill_tool};
use crate::registry::{Skill, SkillCatalog, SkillDomain, Tool};

fn tool(id: &str) -> Arc<Tool> {
    let schema = json!({"type": "object", "properties": {"query": {"type": "string"}}});
    Arc::new(Tool {
        id: Arc::from(id),
        description: Arc::from(format!("Does {id}.")),
        connector_kind: Arc::from("fixture"),
        connector_config: Arc::new(json!({})),
        validator: Arc::new(jsonschema::validator_for(&schema).unwrap()),
        schema: Arc::new(schema),
        timeout_ms: 1_000,
        status_code: None,
        result_template: None,
        envelope_major: None,
        payload_type: None,
        approval: None,
    })
}

fn catalog() -> SkillCatalog {
    let domain = |id: &str, tools: &[&str]| SkillDomain {
        id: Arc::from(id),
        description: Arc::from(format!("All about {id}.")),
        skills: tools
            .iter()
            .map(|t| {
                Arc::new(Skill {
                    name: Arc::from(format!("{id}.{t}")),
                    domain: Arc::from(id),
                    tool: tool(t),
                })
            })
            .collect(),
    };
    SkillCatalog {
        domains: vec![
            domain("rewards", &["balance", "history"]),
            domain("support", &["receipts", "ticket"]),
        ],
    }
}

const LIMITS: StepLimits = StepLimits {
    default_tool_calls: 5,
    max_tool_calls: 10,
};

fn d(id: &str, skills: &[&str], deps: &[&str]) -> Dispatch {
    Dispatch {
        agent_id: id.to_owned(),
        mission: format!("do {id}"),
        skills: skills.iter().map(|s| (*s).to_owned()).collect(),
        context: None,
        depends_on: deps.iter().map(|s| (*s).to_owned()).collect(),
        max_tool_calls: None,
    }
}

fn calls(ds: Vec<Dispatch>) -> Vec<(String, Result<Dispatch, String>)> {
    ds.into_iter()
        .enumerate()
        .map(|(i, d)| (format!("c{i}"), Ok(d)))
        .collect()
}

fn waves_of(nodes: &[super::PlanNode]) -> Vec<(String, u32)> {
    nodes.iter().map(|n| (n.id.clone(), n.wave)).collect()
}

#[test]
fn a_diamond_runs_in_three_waves() {
    let nodes = accept_step(
        &calls(vec![
            d("d", &["support.ticket"], &["b", "c"]),
            d("a", &["rewards.history"], &[]),
            d("b", &["rewards.balance"], &["a"]),
            d("c", &["support.receipts"], &["a"]),
        ]),
        &[],
        &catalog(),
        LIMITS,
        1,
    )
    .unwrap();
    assert_eq!(
        waves_of(&nodes),
        [("d", 3), ("a", 1), ("b", 2), ("c", 2)].map(|(i, w)| (i.to_owned(), w))
    );
    let order: Vec<&str> = run_order(&nodes).iter().map(|n| n.id.as_str()).collect();
    assert_eq!(order, ["a", "b", "c", "d"]);
    assert_eq!(nodes[0].call_id, "c0");
    assert_eq!(nodes[0].max_tool_calls, 5);
}

#[test]
fn a_later_step_continues_the_wave_count_and_may_depend_on_earlier_nodes() {
    let first = accept_step(
        &calls(vec![d("a", &["rewards.balance"], &[])]),
        &[],
        &catalog(),
        LIMITS,
        1,
    )
    .unwrap();
    let second = accept_step(
        &calls(vec![
            d("b", &["support.ticket"], &["a"]),
            d("c", &["support.ticket"], &["b"]),
        ]),
        &first,
        &catalog(),
        LIMITS,
        2,
    )
    .unwrap();
    assert_eq!(
        waves_of(&second),
        [("b".to_owned(), 2), ("c".to_owned(), 3)]
    );
}

fn problems(ds: Vec<Dispatch>) -> Vec<String> {
    accept_step(&calls(ds), &[], &catalog(), LIMITS, 1)
        .unwrap_err()
        .into_iter()
        .map(|p| format!("{}: {}", p.agent_id.unwrap_or_default(), p.problem))
        .collect()
}

#[test]
fn every_refused_shape_is_named_before_anything_runs() {
    let cycle = problems(vec![
        d("a", &["rewards.balance"], &["c"]),
        d("b", &["rewards.balance"], &["a"]),
        d("c", &["rewards.balance"], &["b"]),
    ]);
    assert_eq!(cycle.len(), 1, "{cycle:?}");
    assert!(cycle[0].contains("cycle (a → c → b → a)"), "{cycle:?}");

    let dangling = problems(vec![d("a", &["rewards.balance"], &["ghost"])]);
    assert_eq!(
        dangling,
        ["a: it depends on \"ghost\", which was never dispatched"]
    );

    let selfish = problems(vec![d("a", &["rewards.balance"], &["a"])]);
    assert_eq!(selfish, ["a: it depends on itself"]);

    let twice = problems(vec![
        d("a", &["rewards.balance"], &[]),
        d("a", &["rewards.history"], &[]),
    ]);
    assert_eq!(twice.len(), 1);
    assert!(twice[0].contains("two dispatches"), "{twice:?}");

    let unknown = problems(vec![d("a", &["rewards.teleport", "shop.offers"], &[])]);
    assert_eq!(unknown.len(), 2);
    assert!(
        unknown[0].contains("the rewards skills are rewards.balance, rewards.history"),
        "{unknown:?}"
    );
    assert!(
        unknown[1].contains("the domains are rewards, support"),
        "{unknown:?}"
    );

    let bare = problems(vec![Dispatch {
        mission: "  ".into(),
        max_tool_calls: Some(0),
        ..d("9lives", &[], &[])
    }]);
    assert_eq!(bare.len(), 4, "{bare:?}");

    let huge = problems(vec![Dispatch {
        mission: "x".repeat(4_001),
        ..d("a", &["rewards.balance"], &[])
    }]);
    assert!(huge[0].contains("longer than 4000"), "{huge:?}");

    let garbage = accept_step(
        &[("c0".into(), Dispatch::parse(&json!({"agent_id": 3})))],
        &[],
        &catalog(),
        LIMITS,
        1,
    )
    .unwrap_err();
    assert!(
        garbage[0].problem.contains("do not fit dispatch_agent"),
        "{garbage:?}"
    );
}

#[test]
fn an_id_used_by_an_earlier_step_is_refused() {
    let first = accept_step(
        &calls(vec![d("a", &["rewards.balance"], &[])]),
        &[],
        &catalog(),
        LIMITS,
        1,
    )
    .unwrap();
    let err = accept_step(
        &calls(vec![d("a", &["rewards.balance"], &[])]),
        &first,
        &catalog(),
        LIMITS,
        2,
    )
    .unwrap_err();
    assert!(
        err[0].problem.contains("already used in this turn"),
        "{err:?}"
    );
}

#[test]
fn tool_calls_are_clamped_to_the_cards_most_and_skills_sorted() {
    let nodes = accept_step(
        &calls(vec![Dispatch {
            max_tool_calls: Some(99),
            ..d(
                "a",
                &["support.ticket", "rewards.balance", "support.ticket"],
                &[],
            )
        }]),
        &[],
        &catalog(),
        LIMITS,
        1,
    )
    .unwrap();
    assert_eq!(nodes[0].max_tool_calls, 10);
    assert_eq!(nodes[0].skills, ["rewards.balance", "support.ticket"]);
}

#[test]
fn a_budget_splits_the_plan_so_that_what_runs_never_waits_for_what_does_not() {
    let nodes = accept_step(
        &calls(vec![
            d("c", &["rewards.balance"], &["a"]),
            d("a", &["rewards.balance"], &[]),
            d("b", &["rewards.balance"], &[]),
            d("e", &["rewards.balance"], &["c"]),
        ]),
        &[],
        &catalog(),
        LIMITS,
        1,
    )
    .unwrap();
    let (run, wait) = split_at_room(nodes, 3);
    let ids = |v: &[super::PlanNode]| v.iter().map(|n| n.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&run), ["c", "a", "b"]);
    assert_eq!(ids(&wait), ["e"]);
}

#[test]
fn a_dependent_of_a_failure_is_blocked_with_the_reason_and_inputs_keep_their_order() {
    let nodes = accept_step(
        &calls(vec![
            d("a", &["rewards.balance"], &[]),
            d("b", &["rewards.balance"], &[]),
            d("c", &["rewards.balance"], &["b", "a"]),
        ]),
        &[],
        &catalog(),
        LIMITS,
        1,
    )
    .unwrap();
    let ok = |id: &str| NodeResult {
        id: id.into(),
        status: NodeStatus::Completed,
        result: format!("{id} done"),
        tool_calls: 1,
        duration_ms: 3,
    };
    let results = vec![ok("a"), ok("b")];
    assert_eq!(blocked(&nodes[2], &results), None);
    let ins: Vec<&str> = inputs(&nodes[2], &results)
        .iter()
        .map(|r| r.id.as_str())
        .collect();
    assert_eq!(ins, ["b", "a"]);
    let timed_out = vec![
        ok("a"),
        NodeResult {
            status: NodeStatus::Timeout,
            ..ok("b")
        },
    ];
    assert_eq!(
        blocked(&nodes[2], &timed_out).as_deref(),
        Some("Skipped because b timed out.")
    );
}

#[test]
fn results_for_unknown_ids_list_the_known_ones() {
    let nodes = accept_step(
        &calls(vec![d("a", &["rewards.balance"], &[])]),
        &[],
        &catalog(),
        LIMITS,
        1,
    )
    .unwrap();
    let err = results_document(&nodes, &[], Some(&["zz".to_owned()])).unwrap_err();
    assert_eq!(
        err,
        "No sub-agent called zz was dispatched in this turn. Dispatched: a."
    );
    let doc = results_document(&nodes, &[], None).unwrap();
    assert_eq!(doc["agents"][0]["status"], "running");
    assert!(
        results_document(&[], &[], Some(&["a".to_owned()]))
            .unwrap_err()
            .contains("none yet")
    );
}

#[test]
fn use_skill_is_byte_stable_and_scoped_by_an_enum() {
    let c = catalog();
    let pick = |names: &[&str]| -> Vec<Arc<Skill>> {
        names.iter().map(|n| c.skill(n).unwrap().clone()).collect()
    };
    let one = use_skill_tool(&pick(&["support.ticket", "rewards.balance"]));
    let two = use_skill_tool(&pick(&[
        "rewards.balance",
        "support.ticket",
        "rewards.balance",
    ]));
    assert_eq!(one, two, "the same grant gives the same bytes in any order");
    assert_eq!(
        one.input_schema["properties"]["skill"]["enum"],
        json!(["rewards.balance", "support.ticket"])
    );
    assert!(
        one.description.find("rewards.balance").unwrap()
            < one.description.find("support.ticket").unwrap()
    );
    assert!(!one.description.contains("rewards.history"));
}

#[test]
fn the_planners_tools_list_the_domains_and_get_skill_describes_one() {
    let tools = planner_tools(&catalog(), 5, 10);
    let names: Vec<&str> = tools.iter().map(|t| &*t.name).collect();
    assert_eq!(names, ["get_skill", "dispatch_agent", "get_agent_results"]);
    assert!(
        tools[0]
            .description
            .contains("- rewards: All about rewards.")
    );
    let doc = skill_document(&catalog(), "support").unwrap();
    assert_eq!(doc["skills"][1]["name"], "support.ticket");
    assert_eq!(doc["skills"][1]["parameters"]["type"], "object");
    assert!(
        skill_document(&catalog(), "weather")
            .unwrap_err()
            .contains("rewards, support")
    );
}

#[test]
fn a_checkpoint_reads_back_and_the_record_lists_waves() {
    let nodes = accept_step(
        &calls(vec![
            d("a", &["rewards.balance"], &[]),
            d("b", &["rewards.balance"], &["a"]),
        ]),
        &[],
        &catalog(),
        LIMITS,
        1,
    )
    .unwrap();
    let record = PlanRecord {
        nodes: nodes.clone(),
        ..PlanRecord::default()
    };
    assert_eq!(record.waves(), [vec!["a".to_owned()], vec!["b".to_owned()]]);
    let checkpoint = PlanCheckpoint {
        nodes,
        waves_done: 1,
        record,
        ..PlanCheckpoint::default()
    };
    let back = PlanCheckpoint::from_json(&checkpoint.to_json().unwrap()).unwrap();
    assert_eq!(back, checkpoint);
}

fn arb_step() -> impl Strategy<Value = Vec<Dispatch>> {
    // Up to 8 nodes; each may depend on any node (cycles included).
    (1usize..8).prop_flat_map(|n| {
        proptest::collection::vec(proptest::collection::vec(0..n, 0..3), n).prop_map(move |deps| {
            deps.into_iter()
                .enumerate()
                .map(|(i, ds)| {
                    let names: Vec<String> = ds.iter().map(|j| format!("n{j}")).collect();
                    Dispatch {
                        depends_on: names,
                        ..d(&format!("n{i}"), &["rewards.balance"], &[])
                    }
                })
                .collect()
        })
    })
}

proptest! {
    /// An accepted step puts every node after all of its dependencies; a refused one
    /// really has a cycle or a self-dependency.
    #[test]
    fn accepted_waves_respect_every_dependency(step in arb_step()) {
        match accept_step(&calls(step.clone()), &[], &catalog(), LIMITS, 1) {
            Ok(nodes) => {
                for n in &nodes {
                    for dep in &n.depends_on {
                        let w = nodes.iter().find(|m| &m.id == dep).map(|m| m.wave);
                        prop_assert!(w.is_some_and(|w| w < n.wave), "{} waits for {}", n.id, dep);
                    }
                    let lowest = n.depends_on.is_empty();
                    prop_assert_eq!(lowest, n.wave == 1);
                }
            }
            Err(problems) => {
                prop_assert!(problems.iter().all(|p| p.problem.contains("cycle") || p.problem.contains("itself")));
            }
        }
    }
}
