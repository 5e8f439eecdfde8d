//! A turn's limits: the episode's sliding window, a tool's breaker, arguments that fail
//! their schema, the deadline, and a cancel at any point.

use super::*;

#[tokio::test(start_paused = true)]
async fn the_episode_sliding_window_pauses_a_busy_conversation() {
    let setup = TestRegistry {
        turn_limits: "turn_limits: { episode_max_calls: 3 }",
        ..TestRegistry::default()
    };
    let rig = make_rig(&setup, TWO_TURNS);
    let (episode, _) = run(&rig, request("find coffee deals", None, "t1")).await;
    let (_, events) = run(&rig, request("find coffee deals", Some(&episode), "t2")).await;
    assert!(answer(&events).contains("pausing"));
    assert!(matches!(
        events.last().unwrap().event,
        Event::Completed {
            outcome: TurnOutcome::Limited,
            ..
        }
    ));
    // No model call, no cost: `0`, not `-0.0`.
    let usage = events
        .iter()
        .find(|e| matches!(e.event, Event::Usage { .. }))
        .unwrap();
    let json = serde_json::to_string(&usage.event).unwrap();
    assert!(
        json.contains("\"cost_usd\":0.0") && !json.contains("-0"),
        "{json}"
    );
}

#[tokio::test(start_paused = true)]
async fn the_episode_window_is_checked_on_every_call_not_only_when_a_turn_starts() {
    // Turn 1 makes 3 calls (route, shop, compose) of a window of 4. Turn 2 starts at 3:
    // its routing call is the 4th, and nothing after it runs.
    let setup = TestRegistry {
        turn_limits: "turn_limits: { episode_max_calls: 4 }",
        ..TestRegistry::default()
    };
    let rig = make_rig(&setup, TWO_TURNS);
    let (episode, _) = run(&rig, request("find coffee deals", None, "t1")).await;
    assert_eq!(rig.model.requests().len(), 3);
    let (_, events) = run(&rig, request("find coffee deals", Some(&episode), "t2")).await;
    assert_eq!(rig.model.requests().len(), 4, "no call past the window");
    assert!(answer(&events).contains("pausing"), "{}", answer(&events));
    let turns = rig.store.turns(&alice(), &episode, 2).await.unwrap();
    assert_eq!(turns[1].routing.limit, Some(LimitHit::EpisodeRate));
    assert_eq!(turns[1].outcome, TurnOutcome::Limited);
    // The specialist the window refused before its first call never ran: it is not in the
    // consulted record (D-20), only in the routing record's outcomes.
    assert!(turns[1].consulted.is_empty(), "{:?}", turns[1].consulted);
    assert_eq!(turns[1].routing.invoked, ["shop"]);
    // The window counts what was really made: turn 3 pauses at once.
    let (_, events) = run(&rig, request("find coffee deals", Some(&episode), "t3")).await;
    assert_eq!(rig.model.requests().len(), 4);
    assert!(answer(&events).contains("pausing"));
}

#[tokio::test(start_paused = true)]
async fn a_failing_tool_opens_its_breaker() {
    let setup = TestRegistry {
        rewards_tool: "down_points",
        turn_limits: "turn_limits: { breaker_failures: 1 }",
        ..TestRegistry::default()
    };
    let script = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      tool_calls: [{ name: ask_rewards, args: { query: "points", intent_count: 1 } }]
    - when: { purpose: compose }
      text: ["Unavailable."]
  rewards:
    - { when: { after_tool_results: false }, tool_calls: [{ name: down_points, args: {} }] }
    - { when: { after_tool_results: true }, text: ["Your balance is unavailable right now."] }
"#;
    let rig = make_rig(&setup, script);
    let (episode, events) = run(&rig, request("my points", None, "t1")).await;
    // The connector's HTTP status never reaches the user. Ids are random (a "502" may
    // occur in one by chance), so they are left out of the check.
    let shown: Vec<_> = events
        .iter()
        .map(|e| &e.event)
        .filter(|e| !matches!(e, Event::ResponseId { .. }))
        .collect();
    assert!(!serde_json::to_string(&shown).unwrap().contains("502"));
    let (_, _) = run(&rig, request("my points", Some(&episode), "t2")).await;
    let turns = rig.store.turns(&alice(), &episode, 2).await.unwrap();
    assert!(
        !turns[0]
            .routing
            .guards
            .iter()
            .any(|g| g.guard == GuardName::Breaker),
        "the first failure is a real call"
    );
    assert!(
        turns[1]
            .routing
            .guards
            .iter()
            .any(|g| g.guard == GuardName::Breaker),
        "then the breaker is open"
    );
    assert_eq!(
        turns[1].consulted[0].status,
        baton_core::turn::AgentStatus::Error
    );
}

#[tokio::test(start_paused = true)]
async fn tool_arguments_that_fail_their_schema_never_reach_the_connector() {
    let script = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      tool_calls: [{ name: ask_shop, args: { query: "coffee deals", intent_count: 1 } }]
    - when: { purpose: compose }
      text: ["Done."]
  shop:
    - when: { after_tool_results: false }
      tool_calls: [{ name: search_offers, args: { query: 42, colour: "blue" } }]
    - when: { after_tool_results: true }
      text: ["I could not search just now."]
"#;
    let rig = make_rig(&TestRegistry::default(), script);
    let (episode, events) = run(&rig, request("find coffee deals", None, "t1")).await;
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.event, Event::ToolCallStart { .. })),
        "the connector was not called"
    );
    let turn = &rig.store.turns(&alice(), &episode, 1).await.unwrap()[0];
    assert!(
        turn.routing
            .guards
            .iter()
            .any(|g| g.guard == GuardName::InvalidArgs)
    );
    // The specialist saw a plain explanation, not a crash.
    let followup = rig
        .model
        .requests()
        .into_iter()
        .rfind(|r| &*r.agent_id == "shop")
        .unwrap();
    assert!(format!("{:?}", followup.messages).contains("arguments were invalid"));
}

#[tokio::test(start_paused = true)]
async fn a_turn_past_its_deadline_ends_in_plain_words_and_is_recorded() {
    let script = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      delay_ms: 60000
      text: ["Too late."]
"#;
    let config = baton_runtime::RuntimeConfig {
        turn_timeout_ms: 3_000,
        ..Default::default()
    };
    let rig = make_rig_with(&TestRegistry::default(), script, config);
    let start = tokio::time::Instant::now();
    let (episode, events) = run(&rig, request("hello there, what can you do", None, "t1")).await;
    assert!(start.elapsed() < Duration::from_secs(4));
    assert!(events.iter().any(
        |e| matches!(&e.event, Event::Error { message } if message.contains("taking too long"))
    ));
    assert!(matches!(
        events.last().unwrap().event,
        Event::Completed {
            outcome: TurnOutcome::Failed,
            ..
        }
    ));
    assert_eq!(
        rig.store.turns(&alice(), &episode, 1).await.unwrap().len(),
        1
    );
}

#[tokio::test(start_paused = true)]
async fn a_canceled_turn_ends_at_once_and_the_journal_says_canceled() {
    let script = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      delay_ms: 60000
      text: ["Too late."]
"#;
    let rig = make_rig(&TestRegistry::default(), script);
    let stream = rig
        .runtime
        .run_turn(request("hello there, what can you do", None, "t1"))
        .await
        .unwrap();
    let episode = stream.episode_id.clone();
    let mallory = Principal::new("mallory").unwrap();
    assert!(rig.runtime.is_running(&alice(), &episode, "t1"));
    // Another principal can neither see nor stop it.
    assert!(!rig.runtime.is_running(&mallory, &episode, "t1"));
    assert!(!rig.runtime.cancel_turn(&mallory, &episode, "t1"));
    let start = tokio::time::Instant::now();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(rig.runtime.cancel_turn(&alice(), &episode, "t1"));
    let events: Vec<WireEvent> = stream.collect().await;
    assert!(start.elapsed() < Duration::from_secs(1));
    assert!(matches!(
        events.last().unwrap().event,
        Event::Completed {
            outcome: TurnOutcome::Canceled,
            ..
        }
    ));
    let turns = rig.store.turns(&alice(), &episode, 1).await.unwrap();
    assert_eq!(turns[0].outcome, TurnOutcome::Canceled);
    // The entry leaves with its turn.
    tokio::task::yield_now().await;
    assert!(!rig.runtime.is_running(&alice(), &episode, "t1"));
    assert!(!rig.runtime.cancel_turn(&alice(), &episode, "t1"));
}

#[tokio::test(start_paused = true)]
async fn a_turn_canceled_while_a_specialist_runs_records_it_as_consulted() {
    let script = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      tool_calls: [{ name: ask_shop, args: { query: "coffee deals", intent_count: 1 } }]
  shop:
    - delay_ms: 60000
      text: ["Too late."]
"#;
    let rig = make_rig(&TestRegistry::default(), script);
    let stream = rig
        .runtime
        .run_turn(request("find coffee deals", None, "t1"))
        .await
        .unwrap();
    let episode = stream.episode_id.clone();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(rig.runtime.cancel_turn(&alice(), &episode, "t1"));
    let events: Vec<WireEvent> = stream.collect().await;
    assert!(matches!(
        events.last().unwrap().event,
        Event::Completed {
            outcome: TurnOutcome::Canceled,
            ..
        }
    ));
    // The specialist ran (its model was called) when the cancel came: the record says so.
    assert!(rig.model.requests().iter().any(|r| &*r.agent_id == "shop"));
    let turns = rig.store.turns(&alice(), &episode, 1).await.unwrap();
    let consulted: Vec<(&str, AgentStatus)> = turns[0]
        .consulted
        .iter()
        .map(|c| (c.agent_id.as_str(), c.status))
        .collect();
    assert_eq!(consulted, [("shop", AgentStatus::Error)]);
}
