//! D-22: obligations. A turn consults whom it must: forced, reminded, by category, by the
//! runtime's fallback, and on the Direct Line too.

use super::*;

/// One entry of the routing record's obligations.
fn met(
    agent: &str,
    source: ObligationSource,
    met: ObligationMet,
    reminders: u32,
) -> ObligationRecord {
    ObligationRecord {
        agent_id: agent.into(),
        source,
        met,
        reminders,
    }
}

const REFUSES: &str = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      tool_calls: [{ name: ask_shop, args: { query: "coffee deals", intent_count: 1 } }]
    - when: { purpose: reminder }
      text: ["I don't think Support is needed here."]
    - when: { purpose: compose }
      text: ["Done."]
  shop:
    - text: ["Roast coffee earns 500 points."]
  support:
    - text: ["No open receipt issues."]
"#;

#[tokio::test(start_paused = true)]
async fn a_refused_obligation_is_forced_then_met_by_the_runtime() {
    let rig = make_rig(&TestRegistry::default(), REFUSES);
    let mut req = request("coffee deals and is my account ok", None, "t1");
    req.must_consult = vec!["support".into()];
    let (episode, events) = run(&rig, req).await;
    assert_eq!(consulted_ids(&events), ["shop", "support"]);
    let reminders: Vec<_> = rig
        .model
        .requests()
        .into_iter()
        .filter(|r| r.purpose == CallPurpose::Reminder)
        .collect();
    assert_eq!(reminders.len(), 2, "bounded reminders");
    for r in &reminders {
        assert_eq!(r.tool_choice, ToolChoice::Tool("ask_support".into()));
    }
    let support = first_request(&rig, |r| &*r.agent_id == "support");
    assert!(format!("{:?}", support.messages.last().unwrap()).contains("is my account ok"));
    let routing = last_record(&rig, &episode).await.routing;
    assert_eq!(
        routing.obligations,
        [met(
            "support",
            ObligationSource::Request,
            ObligationMet::ByRuntime,
            2
        )]
    );
    let kinds: Vec<_> = routing.interventions.iter().map(|i| i.kind).collect();
    assert_eq!(
        kinds,
        [
            InterventionKind::ForcedToolChoice,
            InterventionKind::ForcedToolChoice,
            InterventionKind::RuntimeConsult
        ]
    );
    let counters = rig.metrics.snapshot();
    assert_eq!(
        counters.get("interventions_total,kind=forced_tool_choice"),
        Some(&2)
    );
    assert_eq!(
        counters.get("interventions_total,kind=runtime_consult"),
        Some(&1)
    );
}

#[tokio::test(start_paused = true)]
async fn a_reminded_orchestrator_that_complies_consults_through_its_own_call() {
    let script = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      text: ["Hi there!"]
    - when: { purpose: reminder, forced_tool: ask_support }
      tool_calls: [{ name: ask_support, args: { query: "check the account", intent_count: 1 } }]
    - when: { purpose: compose }
      text: ["All good."]
  support:
    - text: ["No open receipt issues."]
"#;
    let rig = rig_with(
        "obligations: [{ agent: support, keywords: [hello] }]",
        script,
    );
    // A greeting would end on the Fastpath; the card's rule does not let it.
    let (episode, events) = run(&rig, request("hello", None, "t1")).await;
    assert_eq!(consulted_ids(&events), ["support"]);
    let routing = last_record(&rig, &episode).await.routing;
    assert_eq!(
        routing.obligations,
        [met(
            "support",
            ObligationSource::Card,
            ObligationMet::AfterReminder,
            1
        )]
    );
    // Without the keyword, no obligation: the greeting ends on the Fastpath.
    let (_, events) = run(&rig, request("hi", None, "t2")).await;
    assert!(consulted(&events).is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_category_rule_fires_on_how_the_orchestrator_filed_the_request() {
    let script = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      tool_calls: [{ name: ask_support, args: { query: "points missing", intent_count: 1, support_category: missing_points } }]
    - when: { purpose: reminder, forced_tool: ask_rewards }
      tool_calls: [{ name: ask_rewards, args: { query: "check the balance", intent_count: 2 } }]
    - when: { purpose: compose }
      text: ["Done."]
  support:
    - text: ["Filed."]
"#;
    let rig = rig_with(
        "obligations: [{ agent: rewards, category: { field: support_category, values: [missing_points] } }]",
        script,
    );
    let (episode, events) = run(&rig, request("my points never arrived", None, "t1")).await;
    assert_eq!(consulted_ids(&events), ["support", "rewards"]);
    let routing = last_record(&rig, &episode).await.routing;
    assert_eq!(
        routing.obligations,
        [met(
            "rewards",
            ObligationSource::Card,
            ObligationMet::AfterReminder,
            1
        )]
    );
}

#[tokio::test(start_paused = true)]
async fn a_model_that_cannot_be_forced_gets_the_runtime_fallback_at_once() {
    let rig = make_rig(
        &TestRegistry {
            orchestrator_model: "m2",
            ..TestRegistry::default()
        },
        REFUSES,
    );
    let mut req = request("coffee deals", None, "t1");
    req.must_consult = vec!["support".into()];
    let (episode, events) = run(&rig, req).await;
    assert_eq!(consulted_ids(&events), ["shop", "support"]);
    assert!(
        !rig.model
            .requests()
            .iter()
            .any(|r| r.purpose == CallPurpose::Reminder)
    );
    let routing = last_record(&rig, &episode).await.routing;
    assert_eq!(
        routing.obligations,
        [met(
            "support",
            ObligationSource::Request,
            ObligationMet::ByRuntime,
            0
        )]
    );
}

#[tokio::test(start_paused = true)]
async fn obligations_hold_when_the_orchestrator_cannot_route() {
    let script = r#"
agents:
  orchestrator:
    - error: unavailable
  support:
    - text: ["No open receipt issues."]
"#;
    let rig = make_rig(&TestRegistry::default(), script);
    let mut req = request("is my account ok", None, "t1");
    req.must_consult = vec!["support".into()];
    let (episode, events) = run(&rig, req).await;
    assert_eq!(consulted_ids(&events), ["support"]);
    assert!(
        answer(&events).contains("No open receipt issues"),
        "{}",
        answer(&events)
    );
    let routing = last_record(&rig, &episode).await.routing;
    // Enforced once: one record, one runtime consultation.
    assert_eq!(
        routing.obligations,
        [met(
            "support",
            ObligationSource::Request,
            ObligationMet::ByRuntime,
            0
        )]
    );
    assert_eq!(
        routing.interventions.len(),
        1,
        "{:?}",
        routing.interventions
    );
    assert_eq!(
        routing.interventions[0].kind,
        InterventionKind::RuntimeConsult
    );
    assert!(routing.interventions[0].detail.contains("could not route"));
    // Without an obligation the same failure ends the turn as before.
    let (_, events) = run(&rig, request("is my account ok", None, "t2")).await;
    assert!(consulted(&events).is_empty());
    assert!(
        events
            .iter()
            .any(|e| matches!(e.event, Event::Error { .. }))
    );
}

#[tokio::test(start_paused = true)]
async fn an_obligation_met_by_the_model_is_recorded_without_intervention() {
    let rig = make_rig(&TestRegistry::default(), REFUSES);
    let mut req = request("coffee deals", None, "t1");
    req.must_consult = vec!["shop".into()];
    let (episode, _) = run(&rig, req).await;
    let routing = last_record(&rig, &episode).await.routing;
    assert_eq!(
        routing.obligations,
        [met(
            "shop",
            ObligationSource::Request,
            ObligationMet::ByModel,
            0
        )]
    );
    assert!(routing.interventions.is_empty());
}

#[tokio::test(start_paused = true)]
async fn an_unknown_required_specialist_is_refused_before_the_turn() {
    let rig = make_rig(&TestRegistry::default(), REFUSES);
    let mut req = request("coffee deals", None, "t1");
    req.must_consult = vec!["strategist".into()];
    let err = rig.runtime.run_turn(req).await.err().unwrap();
    assert_eq!(err.kind, RejectionKind::Invalid);
    assert!(err.message.contains("strategist"), "{}", err.message);
}

#[tokio::test(start_paused = true)]
async fn obligations_hold_on_the_direct_line_too() {
    let rig = rig_with(STRICT, SUPPORT_ANSWERS);
    let mut req = request("#shop coffee deals?", None, "t1");
    req.must_consult = vec!["support".into()];
    let (episode, events) = run(&rig, req).await;
    assert_eq!(consulted_ids(&events), ["shop", "support"]);
    assert_eq!(delegated(&events).len(), 2);
    let routing = last_record(&rig, &episode).await.routing;
    assert_eq!(
        routing.obligations,
        [met(
            "support",
            ObligationSource::Request,
            ObligationMet::DirectLine,
            0
        )]
    );
}
