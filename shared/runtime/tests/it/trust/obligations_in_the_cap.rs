//! D-22 inside D-9: obligations come first within the fan-out cap; those beyond it wait
//! for "continue".

use super::*;

const TWO_ROUTED: &str = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      tool_calls:
        - { name: ask_shop, args: { query: "coffee deals", intent_count: 2 } }
        - { name: ask_rewards, args: { query: "points balance", intent_count: 2 } }
    - when: { purpose: reminder }
      text: ["Not needed."]
    - when: { purpose: compose }
      text: ["Done."]
  shop:
    - text: ["Roast coffee earns 500 points."]
  rewards:
    - text: ["You have 1200 points."]
  support:
    - text: ["No open receipt issues."]
"#;

#[tokio::test(start_paused = true)]
async fn an_obligation_takes_its_place_inside_the_fanout_cap() {
    // Cap 2: the orchestrator fills it with shop and rewards; support is owed.
    let rig = make_rig(&TestRegistry::default(), TWO_ROUTED);
    let mut req = request("coffee deals and my points balance", None, "t1");
    req.must_consult = vec!["support".into()];
    let (episode, events) = run(&rig, req).await;
    assert_eq!(consulted_ids(&events), ["support", "shop"], "cap 2 held");
    let routing = last_record(&rig, &episode).await.routing;
    assert_eq!(routing.cap, 2);
    assert_eq!(routing.cap_behavior, baton_core::trace::CapBehavior::Over);
    let dropped: Vec<_> = routing
        .dropped
        .iter()
        .map(|d| (d.tool.as_str(), d.reason))
        .collect();
    assert_eq!(
        dropped,
        [("ask_rewards", baton_core::trace::DropReason::OverCap)]
    );
    assert_eq!(routing.obligations[0].met, ObligationMet::ByRuntime);
}

#[tokio::test(start_paused = true)]
async fn obligations_beyond_the_cap_wait_for_continue_and_the_turn_says_so() {
    let setup = TestRegistry {
        fanout_cap: 1,
        ..TestRegistry::default()
    };
    let script = TWO_ROUTED.replace("intent_count: 2", "intent_count: 1").replace(
        "        - { name: ask_rewards, args: { query: \"points balance\", intent_count: 1 } }\n",
        "",
    );
    let rig = make_rig(&setup, &script);
    let mut req = request("coffee deals and my points balance", None, "t1");
    req.must_consult = vec!["support".into(), "rewards".into()];
    let (episode, events) = run(&rig, req).await;
    assert_eq!(consulted_ids(&events), ["support"], "cap 1 held");
    let shown = answer(&events);
    assert!(
        shown.contains("more specialists than I consult at once"),
        "{shown}"
    );
    assert!(shown.contains("Not started yet: Rewards"), "{shown}");
    assert!(shown.contains("Would you like me to continue?"), "{shown}");
    let record = last_record(&rig, &episode).await;
    assert_eq!(record.outcome, baton_core::turn::TurnOutcome::Limited);
    let met: Vec<_> = record
        .routing
        .obligations
        .iter()
        .map(|o| (o.agent_id.as_str(), o.met))
        .collect();
    assert_eq!(
        met,
        [
            ("support", ObligationMet::ByRuntime),
            ("rewards", ObligationMet::Deferred)
        ]
    );
    let (_, events) = run(&rig, request("yes", Some(&episode), "t2")).await;
    assert_eq!(consulted_ids(&events), ["rewards"], "continue consults it");
}

#[tokio::test(start_paused = true)]
async fn work_carried_over_is_not_recorded_as_dropped_again() {
    // A limit holds rewards for "continue"; the next turn is on the Direct Line and
    // carries it forward without dropping anything itself.
    let setup = TestRegistry {
        turn_limits: "turn_limits: { max_subagents: 1 }",
        orchestrator_extra: ADDITIVE.into(),
        ..TestRegistry::default()
    };
    let rig = make_rig(&setup, TWO_ROUTED);
    let (episode, _) = run(
        &rig,
        request("coffee deals and my points balance", None, "t1"),
    )
    .await;
    let first = last_record(&rig, &episode).await.routing;
    assert_eq!(first.dropped.len(), 1);
    assert_eq!(rig.metrics.counter("calls_dropped_total"), 1);
    let (_, events) = run(
        &rig,
        request("#shop any coffee deals?", Some(&episode), "t2"),
    )
    .await;
    assert_eq!(consulted_ids(&events), ["shop"]);
    let second = last_record(&rig, &episode).await.routing;
    assert!(second.dropped.is_empty(), "{:?}", second.dropped);
    assert_eq!(rig.metrics.counter("calls_dropped_total"), 1);
    // The held work is still there for "continue".
    let (_, events) = run(&rig, request("yes", Some(&episode), "t3")).await;
    assert_eq!(consulted_ids(&events), ["rewards"]);
}
