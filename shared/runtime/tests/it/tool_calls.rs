//! Data tool calls under faults: a breaker never jams, a bad envelope is a failure, and
//! every `tool_call_start` has exactly one `tool_result` and one `tool_call_end`, whatever
//! the model or the tool does, and the consulted record counts exactly those calls.

use std::collections::BTreeMap;
use std::time::Duration;

use baton_core::events::{Event, WireEvent};
use baton_core::trace::GuardName;
use proptest::prelude::*;

use crate::support::*;
use baton_core::ports::store::TurnStore as _;

/// A balance service slower than a specialist's 5 s timeout: its calls are cancelled.
const SLOW_TOOL: &str = r#"
  slow_points:
    description: A balance service that takes longer than anyone waits.
    connector: { kind: test, delay_ms: 10000, payload: { points: 5 } }
    schema: { type: object, properties: {}, additionalProperties: false }
"#;

fn rewards_script(tool: &str) -> String {
    format!(
        r#"
agents:
  orchestrator:
    - when: {{ purpose: route }}
      tool_calls: [{{ name: ask_rewards, args: {{ query: "points", intent_count: 1 }} }}]
    - when: {{ purpose: compose }}
      text: ["Here is what I have."]
  rewards:
    - {{ when: {{ after_tool_results: false }}, tool_calls: [{{ name: {tool}, args: {{}} }}] }}
    - {{ when: {{ after_tool_results: true }}, text: ["Your balance."] }}
"#
    )
}

/// Whether the turn's routing record shows the tool's breaker refusing it.
async fn refused_by_breaker(rig: &Rig, episode: &str, turn: usize) -> bool {
    let turns = rig.store.turns(&alice(), episode, 20).await.unwrap();
    turns[turn]
        .routing
        .guards
        .iter()
        .any(|g| g.guard == GuardName::Breaker)
}

fn started(events: &[WireEvent]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e.event, Event::ToolCallStart { .. }))
        .count()
}

#[tokio::test(start_paused = true)]
async fn a_trial_call_cancelled_mid_call_reopens_the_breaker_and_the_tool_is_tried_again() {
    let setup = TestRegistry {
        rewards_tool: "slow_points",
        turn_limits: "turn_limits: { breaker_failures: 1, breaker_cooldown_ms: 30000 }",
        extra_tools: SLOW_TOOL.into(),
        ..TestRegistry::default()
    };
    let rig = make_rig(&setup, &rewards_script("slow_points"));
    // The specialist's timeout cancels the call: a failure, so the breaker opens.
    let (episode, first) = run(&rig, request("my points", None, "t1")).await;
    assert_eq!(started(&first), 1);
    let (_, second) = run(&rig, request("my points", Some(&episode), "t2")).await;
    assert_eq!(started(&second), 0, "open after the cancelled call");
    assert!(refused_by_breaker(&rig, &episode, 1).await);
    // After the cool-down one trial goes through, and is cancelled the same way.
    tokio::time::advance(Duration::from_secs(31)).await;
    let (_, third) = run(&rig, request("my points", Some(&episode), "t3")).await;
    assert_eq!(started(&third), 1, "the trial call");
    // A cancelled trial is a failed trial: open again, and tried again after the
    // cool-down instead of refusing for the life of the process.
    let (_, fourth) = run(&rig, request("my points", Some(&episode), "t4")).await;
    assert_eq!(started(&fourth), 0);
    tokio::time::advance(Duration::from_secs(31)).await;
    let (_, fifth) = run(&rig, request("my points", Some(&episode), "t5")).await;
    assert_eq!(started(&fifth), 1, "tried again after the cool-down");
    assert!(!refused_by_breaker(&rig, &episode, 4).await);
}

#[tokio::test(start_paused = true)]
async fn an_error_envelope_or_another_principals_counts_as_a_failure_until_the_breaker_opens() {
    for tool in ["broken_points", "foreign_points"] {
        let setup = TestRegistry {
            rewards_tool: tool,
            turn_limits: "turn_limits: { breaker_failures: 2 }",
            ..TestRegistry::default()
        };
        let rig = make_rig(&setup, &rewards_script(tool));
        let (episode, _) = run(&rig, request("my points", None, "t1")).await;
        run(&rig, request("my points", Some(&episode), "t2")).await;
        let (_, third) = run(&rig, request("my points", Some(&episode), "t3")).await;
        assert!(
            !refused_by_breaker(&rig, &episode, 1).await,
            "{tool}: two real calls"
        );
        assert!(
            refused_by_breaker(&rig, &episode, 2).await,
            "{tool}: open after two bad envelopes"
        );
        assert_eq!(started(&third), 0, "{tool}");
    }
}

/// Every start has exactly one result and one end, and nothing ends that did not start.
fn assert_calls_paired(events: &[WireEvent]) -> Result<(), TestCaseError> {
    let mut calls: BTreeMap<&str, [usize; 3]> = BTreeMap::new();
    for e in events {
        let (id, i) = match &e.event {
            Event::ToolCallStart { call_id, .. } => (call_id, 0),
            Event::ToolResult { call_id, .. } => (call_id, 1),
            Event::ToolCallEnd { call_id, .. } => (call_id, 2),
            _ => continue,
        };
        calls.entry(id).or_default()[i] += 1;
    }
    for (id, counts) in calls {
        prop_assert_eq!(counts, [1, 1, 1], "call {}: starts, results, ends", id);
    }
    Ok(())
}

/// The consulted record counts, for each specialist, exactly the calls the stream showed
/// it start: a call refused before it ran (unknown tool, bad arguments) is not one.
fn assert_consulted_counts(events: &[WireEvent]) -> Result<(), TestCaseError> {
    let mut shown: BTreeMap<&str, u32> = BTreeMap::new();
    for e in events {
        if let Event::ToolCallStart { agent, .. } = &e.event {
            *shown.entry(agent).or_default() += 1;
        }
    }
    let mut consulted: BTreeMap<&str, u32> = BTreeMap::new();
    for e in events {
        if let Event::AgentsConsulted { agents, .. } = &e.event {
            // A specialist asked twice in a turn has an entry for each time.
            for a in agents {
                *consulted.entry(&a.agent_id).or_default() += a.tool_calls;
            }
        }
    }
    consulted.retain(|_, n| *n > 0);
    prop_assert_eq!(consulted, shown);
    Ok(())
}

/// One fault a specialist's model or tool can have.
#[derive(Debug, Clone)]
enum Fault {
    None,
    ModelError(&'static str),
    MalformedCall,
    UnknownTool,
    InvalidArgs,
    TextOnly,
    SlowModel,
}

fn fault() -> impl Strategy<Value = Fault> {
    prop_oneof![
        Just(Fault::None),
        prop::sample::select(vec![
            "throttled",
            "unavailable",
            "invalid",
            "timeout",
            "malformed"
        ])
        .prop_map(Fault::ModelError),
        Just(Fault::MalformedCall),
        Just(Fault::UnknownTool),
        Just(Fault::InvalidArgs),
        Just(Fault::TextOnly),
        Just(Fault::SlowModel),
    ]
}

const TOOLS: [&str; 5] = [
    "points_balance",
    "down_points",
    "broken_points",
    "foreign_points",
    "slow_points",
];

/// `rewards` with every tool, healthy or not.
const REWARDS_WITH_EVERY_TOOL: &str = r#"
id: rewards
description: Points balance and redemptions.
role: native
model: m1
tools: [points_balance, down_points, broken_points, foreign_points, slow_points]
prompt_blocks: [rewards-instructions]
limits: { timeout_ms: 5000 }
"#;

/// The specialist's first reply under `fault`, calling `tool` `calls` times.
fn first_reply(fault: &Fault, tool: &str, calls: usize) -> String {
    let call = format!("{{ name: {tool}, args: {{}} }}");
    let mut list = vec![call; calls];
    let mut extra = String::new();
    match fault {
        Fault::None => {}
        Fault::ModelError(kind) => extra = format!(", error: {kind}"),
        Fault::MalformedCall => list.push(format!("{{ name: {tool}, raw: \"{{not json\" }}")),
        Fault::UnknownTool => list.push("{ name: no_such_tool, args: {} }".into()),
        Fault::InvalidArgs => list.push(format!("{{ name: {tool}, args: {{ extra: 1 }} }}")),
        Fault::TextOnly => list.clear(),
        Fault::SlowModel => extra = ", delay_ms: 6000".into(),
    }
    format!(
        "    - {{ when: {{ after_tool_results: false }}, text: [\"Checking. \"], tool_calls: [{}]{extra} }}\n",
        list.join(", ")
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn every_started_tool_call_ends_exactly_once(
        faults in prop::collection::vec((fault(), 0usize..TOOLS.len(), 0usize..3), 1..3),
        then_error in any::<bool>(),
    ) {
        let setup = TestRegistry {
            extra_tools: SLOW_TOOL.into(),
            turn_limits: "turn_limits: { breaker_failures: 2 }",
            ..TestRegistry::default()
        }
        .file("agents/rewards.yaml", REWARDS_WITH_EVERY_TOOL);
        // Each case is a conversation of turns; later turns meet the breakers the earlier
        // ones left.
        let mut script = String::from(
            "agents:\n  orchestrator:\n    - when: { purpose: route }\n      tool_calls: [{ name: ask_rewards, args: { query: \"points\", intent_count: 1 } }]\n    - when: { purpose: compose }\n      text: [\"Done.\"]\n  rewards:\n",
        );
        for (i, (fault, tool, calls)) in faults.iter().enumerate() {
            let rule = first_reply(fault, TOOLS[*tool], *calls);
            script.push_str(&rule.replacen("{ when: {", "{ once: true, when: {", 1));
            if i + 1 == faults.len() {
                script.push_str(&rule);
            }
        }
        let after = if then_error { ", error: unavailable" } else { "" };
        script.push_str(&format!(
            "    - {{ when: {{ after_tool_results: true }}, text: [\"Your balance.\"]{after} }}\n"
        ));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap();
        runtime.block_on(async {
            let rig = make_rig(&setup, &script);
            let mut episode: Option<String> = None;
            for turn in 0..faults.len() {
                let (ep, events) =
                    run(&rig, request("my points", episode.as_deref(), &format!("t{turn}"))).await;
                assert_calls_paired(&events)?;
                assert_consulted_counts(&events)?;
                let completed =
                    matches!(events.last().map(|e| &e.event), Some(Event::Completed { .. }));
                prop_assert!(completed, "the turn completes");
                episode = Some(ep);
            }
            Ok(())
        })?;
    }
}

/// A specialist the orchestrator asks again while composing is two executions, and each
/// call's record says which one made it and with what arguments: the audit trail files
/// each under its own execution.
#[tokio::test(start_paused = true)]
async fn each_call_is_recorded_under_the_execution_that_made_it_with_its_arguments() {
    let script = r#"
agents:
  orchestrator:
    - { once: true, when: { purpose: route }, tool_calls: [{ name: ask_rewards, args: { query: "points", intent_count: 1 } }] }
    - { once: true, when: { purpose: compose }, tool_calls: [{ name: ask_rewards, args: { query: "points again", intent_count: 1 } }] }
    - { when: { purpose: compose }, text: ["Here is what I have."] }
  rewards:
    - { once: true, when: { after_tool_results: false }, tool_calls: [{ name: points_balance, args: {} }] }
    - { once: true, when: { after_tool_results: true }, text: ["First look."] }
    - { once: true, when: { after_tool_results: false }, tool_calls: [{ name: points_balance, args: {} }, { name: points_balance, args: {} }] }
    - { when: { after_tool_results: true }, text: ["Second look."] }
"#;
    let rig = make_rig(&TestRegistry::default(), script);
    let (episode, events) = run(&rig, request("my points", None, "t1")).await;
    assert_eq!(started(&events), 3);
    let turns = rig.store.turns(&alice(), &episode, 1).await.unwrap();
    let record = &turns[0];
    let asked: Vec<(&str, u32)> = record
        .consulted
        .iter()
        .map(|a| (a.agent_id.as_str(), a.tool_calls))
        .collect();
    assert_eq!(asked, [("rewards", 1), ("rewards", 2)]);
    let calls: Vec<(&str, u32, &serde_json::Value)> = record
        .routing
        .tool_calls
        .iter()
        .map(|c| (c.tool.as_str(), c.execution, &c.params))
        .collect();
    let empty = serde_json::json!({});
    assert_eq!(
        calls,
        [
            ("points_balance", 1, &empty),
            ("points_balance", 2, &empty),
            ("points_balance", 2, &empty)
        ]
    );
}
