//! Engine behaviour over the public API: isolation, idempotency, bad input, faults.

use std::time::Duration;

use baton_core::Principal;
use baton_core::events::{Event, WireEvent};
use baton_core::ports::store::Store;
use baton_core::trace::{GuardName, LimitHit};
use baton_core::turn::{AgentStatus, TurnOutcome};
use baton_runtime::RejectionKind;
use futures::StreamExt;

use crate::support::*;

const TWO_TURNS: &str = r#"
agents:
  orchestrator:
    - when: { purpose: route, user_contains: "receipt" }
      tool_calls: [{ name: ask_support, args: { query: "my receipt R-77 didn't scan", intent_count: 1 } }]
    - when: { purpose: route, user_contains: "coffee" }
      tool_calls: [{ name: ask_shop, args: { query: "coffee deals", intent_count: 1 } }]
    - when: { purpose: compose }
      text: ["Done."]
  support:
    - text: ["Receipt R-77 is being reviewed by the SUPPORT-SECRET team."]
  shop:
    - text: ["Roast coffee earns 500 points."]
"#;

#[tokio::test(start_paused = true)]
async fn a_specialists_request_never_contains_another_specialists_turns() {
    let rig = make_rig(&TestRegistry::default(), TWO_TURNS);
    let (episode, _) = run(&rig, request("my receipt R-77 didn't scan", None, "t1")).await;
    run(&rig, request("find coffee deals", Some(&episode), "t2")).await;
    run(&rig, request("my receipt again", Some(&episode), "t3")).await;
    let requests = rig.model.requests();
    let shop: Vec<_> = requests.iter().filter(|r| &*r.agent_id == "shop").collect();
    assert!(!shop.is_empty());
    for r in shop {
        let seen = format!("{:?}", r.messages);
        assert!(
            !seen.contains("SUPPORT-SECRET"),
            "shop saw support's answer: {seen}"
        );
        assert!(!seen.contains("R-77"), "shop saw support's query: {seen}");
    }
    // Support, asked again, sees its own earlier turn.
    let support_last = requests
        .iter()
        .rfind(|r| &*r.agent_id == "support")
        .unwrap();
    assert!(format!("{:?}", support_last.messages).contains("SUPPORT-SECRET"));
    assert!(!format!("{:?}", support_last.messages).contains("Roast coffee"));
}

#[tokio::test(start_paused = true)]
async fn a_client_that_leaves_mid_stream_does_not_lose_the_turn() {
    let rig = make_rig(&TestRegistry::default(), TWO_TURNS);
    let mut stream = rig
        .runtime
        .run_turn(request("find coffee deals", None, "t1"))
        .await
        .unwrap();
    let episode = stream.episode_id.clone();
    let first = stream.next().await.unwrap();
    assert!(matches!(first.event, Event::Thinking {}));
    drop(stream);
    // Let the turn run to its commit.
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if !rig
            .store
            .turns(&alice(), &episode, 10)
            .await
            .unwrap()
            .is_empty()
        {
            break;
        }
    }
    let history = rig.runtime.history(&alice(), &episode).await.unwrap();
    assert_eq!(history.turns.len(), 1);
    assert_eq!(history.turns[0].narration, "Done.");
    assert_eq!(history.turns[0].consulted[0].agent_id, "shop");
}

#[tokio::test(start_paused = true)]
async fn a_completed_duplicate_replays_and_runs_nothing() {
    let rig = make_rig(&TestRegistry::default(), TWO_TURNS);
    let (episode, first) = run(&rig, request("find coffee deals", None, "t1")).await;
    let calls = rig.model.requests().len();
    let replay = rig
        .runtime
        .run_turn(request("find coffee deals", Some(&episode), "t1"))
        .await
        .unwrap();
    assert!(replay.replay);
    let events: Vec<_> = replay.collect().await;
    assert_eq!(answer(&events), answer(&first));
    assert_eq!(rig.model.requests().len(), calls, "nothing ran twice");
    assert_eq!(
        rig.store.turns(&alice(), &episode, 10).await.unwrap().len(),
        1
    );
}

#[tokio::test(start_paused = true)]
async fn an_in_flight_duplicate_and_a_concurrent_turn_are_refused() {
    let script = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      delay_ms: 1000
      text: ["Hello!"]
"#;
    let rig = make_rig(&TestRegistry::default(), script);
    let (episode, _) = run(&rig, request("hi", None, "t0")).await;
    let running = rig
        .runtime
        .run_turn(request("hello", Some(&episode), "t1"))
        .await
        .unwrap();
    let dup = rig
        .runtime
        .run_turn(request("hello", Some(&episode), "t1"))
        .await
        .unwrap_err();
    assert_eq!(dup.kind, RejectionKind::InFlight);
    let other = rig
        .runtime
        .run_turn(request("hey", Some(&episode), "t2"))
        .await
        .unwrap_err();
    assert_eq!(other.kind, RejectionKind::Busy);
    let events: Vec<_> = running.collect().await;
    assert!(matches!(
        events.last().unwrap().event,
        Event::Completed {
            outcome: TurnOutcome::Answered,
            ..
        }
    ));
    // Once it is done, the next turn goes through.
    run(&rig, request("hey", Some(&episode), "t2")).await;
    assert_eq!(
        rig.store.turns(&alice(), &episode, 10).await.unwrap().len(),
        3
    );
}

#[tokio::test]
async fn bad_input_gets_a_plain_refusal() {
    let rig = make_rig(&TestRegistry::default(), TWO_TURNS);
    let empty = rig
        .runtime
        .run_turn(request("   ", None, "t1"))
        .await
        .unwrap_err();
    assert_eq!(empty.kind, RejectionKind::Invalid);
    let long = "x".repeat(rig.runtime.config().max_message_chars + 1);
    let too_long = rig
        .runtime
        .run_turn(request(&long, None, "t1"))
        .await
        .unwrap_err();
    assert_eq!(too_long.kind, RejectionKind::TooLarge);
    assert!(too_long.message.contains("too long"));
    let unknown = rig
        .runtime
        .run_turn(request("hi", Some("ep_nope"), "t1"))
        .await
        .unwrap_err();
    assert_eq!(unknown.kind, RejectionKind::NotFound);
    let bad_id = rig
        .runtime
        .run_turn(request("hi", Some("../../etc"), "t1"))
        .await
        .unwrap_err();
    assert_eq!(bad_id.kind, RejectionKind::Invalid);
}

#[tokio::test(start_paused = true)]
async fn another_principals_episode_is_not_found() {
    let rig = make_rig(&TestRegistry::default(), TWO_TURNS);
    let (episode, _) = run(&rig, request("find coffee deals", None, "t1")).await;
    let mut bob = request("find coffee deals", Some(&episode), "t2");
    bob.principal = Principal::new("bob").unwrap();
    let refused = rig.runtime.run_turn(bob).await.unwrap_err();
    assert_eq!(refused.kind, RejectionKind::NotFound);
    let history = rig
        .runtime
        .history(&Principal::new("bob").unwrap(), &episode)
        .await
        .unwrap_err();
    assert_eq!(history.kind, RejectionKind::NotFound);
}

#[tokio::test(start_paused = true)]
async fn a_clients_conversation_is_an_episode_its_first_turn_creates_and_only_its_caller_reaches() {
    let rig = make_rig(&TestRegistry::default(), TWO_TURNS);
    let episode = alice().episode_for("thread-1");
    let first = rig
        .runtime
        .run_turn(in_conversation(
            request("find coffee deals", Some("ignored"), "t1"),
            "thread-1",
        ))
        .await
        .unwrap();
    assert_eq!(first.episode_id, episode);
    let _: Vec<_> = first.collect().await;
    let second = rig
        .runtime
        .run_turn(in_conversation(
            request("and snacks?", None, "t2"),
            "thread-1",
        ))
        .await
        .unwrap();
    assert_eq!(second.episode_id, episode);
    let _: Vec<_> = second.collect().await;
    let history = rig.runtime.history(&alice(), &episode).await.unwrap();
    assert_eq!(history.turns.len(), 2);
    // The same turn again is its replay, not a third turn.
    let again = rig
        .runtime
        .run_turn(in_conversation(
            request("and snacks?", None, "t2"),
            "thread-1",
        ))
        .await
        .unwrap();
    assert!(again.replay);
    let _: Vec<_> = again.collect().await;

    // Someone else naming the same conversation gets an episode of their own.
    let mut bob = request("find coffee deals", None, "t-bob");
    bob.principal = Principal::new("bob").unwrap();
    let theirs = rig
        .runtime
        .run_turn(in_conversation(bob, "thread-1"))
        .await
        .unwrap();
    assert_ne!(theirs.episode_id, episode);
    let _: Vec<_> = theirs.collect().await;
    let history = rig.runtime.history(&alice(), &episode).await.unwrap();
    assert_eq!(history.turns.len(), 2);
}

#[tokio::test(start_paused = true)]
async fn garbage_from_the_model_never_reaches_the_user() {
    let script = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      text: ["Sure."]
      tool_calls:
        - { name: ask_shop, raw: '{"query": "coffee", "intent_co' }
        - { name: ask_weather, args: { query: "rain", intent_count: 1 } }
    - when: { purpose: compose }
      error: malformed
  shop:
    - text: ["Roast coffee earns 500 points."]
"#;
    let rig = make_rig(&TestRegistry::default(), script);
    let (episode, events) = run(&rig, request("find coffee deals", None, "t1")).await;
    let text = answer(&events);
    assert!(
        text.contains("Roast coffee"),
        "the fallback specialist still answered: {text}"
    );
    for e in &events {
        let json = serde_json::to_string(&e.event).unwrap();
        assert!(
            !json.contains("scripted garbage") && !json.contains("intent_co"),
            "{json}"
        );
    }
    let turn = &rig.store.turns(&alice(), &episode, 1).await.unwrap()[0];
    let reasons: Vec<_> = turn
        .routing
        .dropped
        .iter()
        .map(|d| format!("{:?}", d.reason))
        .collect();
    assert_eq!(reasons, ["InvalidArgs", "UnknownTool"]);
}

#[tokio::test(start_paused = true)]
async fn a_failing_routing_call_ends_in_plain_words_and_keeps_history() {
    let script = r#"
agents:
  orchestrator:
    - when: { purpose: route, user_contains: "coffee" }
      tool_calls: [{ name: ask_shop, args: { query: "coffee", intent_count: 1 } }]
    - when: { purpose: compose }
      text: ["Done."]
    - when: { purpose: route }
      error: unavailable
  shop:
    - text: ["Roast coffee earns 500 points."]
"#;
    let rig = make_rig(&TestRegistry::default(), script);
    let (episode, _) = run(&rig, request("coffee", None, "t1")).await;
    let (_, events) = run(&rig, request("and the weather?", Some(&episode), "t2")).await;
    let errors: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::Error { message } => Some(message.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        errors,
        ["I'm having trouble answering right now. Please try again in a moment."]
    );
    assert!(matches!(
        events.last().unwrap().event,
        Event::Completed {
            outcome: TurnOutcome::Failed,
            ..
        }
    ));
    let turns = rig.store.turns(&alice(), &episode, 10).await.unwrap();
    assert_eq!(
        turns.len(),
        2,
        "the first turn is still there and the failed one is recorded"
    );
    assert_eq!(turns[0].narration, "Done.");
    assert_eq!(
        turns[1].routing.retries, 2,
        "a transient failure was retried before giving up"
    );
}

#[tokio::test(start_paused = true)]
async fn an_under_reported_intent_count_runs_what_was_called() {
    let script = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      tool_calls: [{ name: ask_shop, args: { query: "find me coffee deals", intent_count: 1 } }]
    - when: { purpose: compose }
      text: ["Done."]
  shop:
    - text: ["Roast coffee earns 500 points."]
"#;
    let rig = make_rig(&TestRegistry::default(), script);
    let (episode, _) = run(
        &rig,
        request(
            "my receipt didn't scan and find me coffee deals",
            None,
            "t1",
        ),
    )
    .await;
    let turn = &rig.store.turns(&alice(), &episode, 1).await.unwrap()[0];
    assert_eq!(turn.routing.invoked, ["shop"]);
    assert_eq!(
        turn.routing.retries, 0,
        "nothing signals the miss: the failsafe cannot fire"
    );
}

#[tokio::test(start_paused = true)]
async fn fan_out_takes_the_slowest_not_the_sum() {
    let script = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      delay_ms: 50
      tool_calls:
        - { name: ask_shop, args: { query: "coffee deals", intent_count: 2 } }
        - { name: ask_support, args: { query: "receipt didn't scan", intent_count: 2 } }
    - when: { purpose: compose }
      delay_ms: 50
      text: ["Done."]
  shop:
    - { when: { after_tool_results: false }, delay_ms: 100, tool_calls: [{ name: search_offers, args: { query: "coffee" } }] }
    - { when: { after_tool_results: true }, delay_ms: 100, text: ["Deals."] }
  support:
    - { when: { after_tool_results: false }, delay_ms: 300, tool_calls: [{ name: lookup_receipt, args: { query: "receipt" } }] }
    - { when: { after_tool_results: true }, delay_ms: 300, text: ["Rescan it."] }
"#;
    let rig = make_rig(&TestRegistry::default(), script);
    let start = tokio::time::Instant::now();
    let (episode, _) = run(
        &rig,
        request("coffee deals and my receipt didn't scan", None, "t1"),
    )
    .await;
    // 50 (route) + max(200, 600) + 50 (compose): the sub-agents overlapped.
    assert_eq!(start.elapsed().as_millis(), 700);
    // The record shows it: both started after the routing call, and ran at once.
    let turns = rig.store.turns(&alice(), &episode, 1).await.unwrap();
    let spans: Vec<(&str, u64, u64)> = turns[0]
        .routing
        .outcomes
        .iter()
        .map(|o| (o.agent_id.as_str(), o.started_ms, o.ended_ms))
        .collect();
    assert_eq!(spans, [("shop", 50, 250), ("support", 50, 650)]);
}

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

#[tokio::test(start_paused = true)]
async fn an_intent_switch_without_prior_context_gets_it_from_the_runtime() {
    let rig = make_rig(&TestRegistry::default(), TWO_TURNS);
    let (episode, _) = run(&rig, request("find coffee deals", None, "t1")).await;
    run(
        &rig,
        request("my receipt didn't scan", Some(&episode), "t2"),
    )
    .await;
    let support = rig
        .model
        .requests()
        .into_iter()
        .rfind(|r| &*r.agent_id == "support")
        .unwrap();
    let suffix = support.system.last().unwrap().text.to_string();
    assert!(suffix.contains("<prior_context>"), "{suffix}");
    assert!(suffix.contains("find coffee deals"), "{suffix}");
    // Not in the cached prefix: per-turn values stay after the cache point.
    assert!(!support.system[0].text.contains("find coffee deals"));
    let turn = &rig.store.turns(&alice(), &episode, 2).await.unwrap()[1];
    assert!(
        turn.routing
            .guards
            .iter()
            .any(|g| g.guard == GuardName::PriorContext)
    );
}

/// The runtime's prior context carries the answer the user saw only when the assistant
/// composed it: a specialist's own words (its Direct Line answer) stay its own (D-17).
#[tokio::test(start_paused = true)]
async fn the_prior_context_the_runtime_fills_never_carries_another_specialists_own_words() {
    let rig = make_rig(&TestRegistry::default(), TWO_TURNS);
    let (episode, _) = run(
        &rig,
        request("#support my receipt R-77 didn't scan", None, "t1"),
    )
    .await;
    run(&rig, request("find coffee deals", Some(&episode), "t2")).await;
    let shop = rig
        .model
        .requests()
        .into_iter()
        .rfind(|r| &*r.agent_id == "shop")
        .unwrap();
    let suffix = shop.system.last().unwrap().text.to_string();
    assert!(suffix.contains("<prior_context>"), "{suffix}");
    assert!(suffix.contains("my receipt R-77 didn't scan"), "{suffix}");
    assert!(suffix.contains("Support answered it"), "{suffix}");
    assert!(!suffix.contains("SUPPORT-SECRET"), "{suffix}");
}

/// A reference two turns back resolves: the runtime's prior context goes on from the last
/// turn to the ones before it as room allows, and the routing record keeps it with the
/// call, as the specialist received it.
#[tokio::test(start_paused = true)]
async fn the_runtime_prior_context_reaches_turns_before_the_last_and_is_recorded() {
    let script = TWO_TURNS.replace(
        "    - when: { purpose: compose }",
        "    - when: { purpose: route, user_contains: \"points\" }\n      tool_calls: [{ name: ask_rewards, args: { query: \"points\", intent_count: 1 } }]\n    - when: { purpose: compose }",
    ) + "  rewards:\n    - text: [\"1200 points.\"]\n";
    let rig = make_rig(&TestRegistry::default(), &script);
    let (episode, _) = run(&rig, request("my receipt R-77 didn't scan", None, "t1")).await;
    run(&rig, request("find coffee deals", Some(&episode), "t2")).await;
    run(
        &rig,
        request("how many points did that earn?", Some(&episode), "t3"),
    )
    .await;
    let turn = &rig.store.turns(&alice(), &episode, 1).await.unwrap()[0];
    let call = turn
        .routing
        .calls
        .iter()
        .find(|c| c.agent_id == "rewards")
        .unwrap();
    let prior = call.args.value()["prior_context"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        prior.starts_with("Last turn, the user said: \"find coffee deals\""),
        "{prior}"
    );
    assert!(
        prior.contains("Before that, the user said: \"my receipt R-77 didn't scan\""),
        "{prior}"
    );
    // What was recorded is what the specialist was told.
    let rewards = rig
        .model
        .requests()
        .into_iter()
        .rfind(|r| &*r.agent_id == "rewards")
        .unwrap();
    assert!(rewards.system.last().unwrap().text.contains(&prior));
}

#[tokio::test(start_paused = true)]
async fn an_unknown_status_code_is_dropped_and_counted() {
    let setup = TestRegistry {
        rewards_tool: "broken_points",
        ..TestRegistry::default()
    };
    let script = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      tool_calls: [{ name: ask_rewards, args: { query: "points", intent_count: 1 } }]
    - when: { purpose: compose }
      text: ["Done."]
  rewards:
    - { when: { after_tool_results: false }, tool_calls: [{ name: broken_points, args: {} }] }
    - { when: { after_tool_results: true }, text: ["Unavailable."] }
"#;
    let rig = make_rig(&setup, script);
    let (_, events) = run(&rig, request("my points", None, "t1")).await;
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.event, Event::Status { .. }))
    );
    assert_eq!(rig.metrics.counter("unknown_status_code_total"), 1);
}

#[tokio::test(start_paused = true)]
async fn the_orchestrator_may_ask_again_while_composing() {
    let script = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      tool_calls: [{ name: ask_shop, args: { query: "coffee deals", intent_count: 1 } }]
    - when: { purpose: compose }
      once: true
      text: ["One more check."]
      tool_calls: [{ name: ask_rewards, args: { query: "points for coffee", intent_count: 1 } }]
    - when: { purpose: compose }
      text: ["Deals found, and you have 1200 points."]
  shop:
    - text: ["Roast coffee earns 500 points."]
  rewards:
    - text: ["You have 1200 points."]
"#;
    let rig = make_rig(&TestRegistry::default(), script);
    let (episode, events) = run(&rig, request("find coffee deals", None, "t1")).await;
    assert!(answer(&events).ends_with("Deals found, and you have 1200 points."));
    let turn = &rig.store.turns(&alice(), &episode, 1).await.unwrap()[0];
    assert_eq!(turn.routing.invoked, ["shop", "rewards"]);
    assert_eq!(turn.outcome, TurnOutcome::Answered);
}

#[tokio::test(start_paused = true)]
async fn an_orchestrator_that_never_stops_asking_hits_its_step_limit() {
    let setup = TestRegistry {
        turn_limits: "turn_limits: { max_iterations: 3, max_subagents: 8 }",
        ..TestRegistry::default()
    };
    let script = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      tool_calls: [{ name: ask_shop, args: { query: "coffee deals", intent_count: 1 } }]
    - when: { purpose: compose }
      tool_calls: [{ name: ask_rewards, args: { query: "points", intent_count: 1 } }]
  shop:
    - text: ["Roast coffee earns 500 points."]
  rewards:
    - text: ["You have 1200 points."]
"#;
    let rig = make_rig(&setup, script);
    let (episode, events) = run(&rig, request("find coffee deals", None, "t1")).await;
    let text = answer(&events);
    assert!(text.contains("Roast coffee earns 500 points."), "{text}");
    assert!(text.contains("Would you like me to continue?"), "{text}");
    let turn = &rig.store.turns(&alice(), &episode, 1).await.unwrap()[0];
    assert_eq!(
        turn.routing.limit.map(LimitHit::as_str),
        Some("orchestrator_iterations")
    );
    assert_eq!(turn.outcome, TurnOutcome::Limited);
}

/// Records the time each connector call was made at, then answers like [`ConfiguredConnector`].
struct ClockedConnector(std::sync::Mutex<Vec<u64>>);

#[async_trait::async_trait]
impl baton_core::ports::connector::Connector for ClockedConnector {
    async fn call(
        &self,
        request: baton_core::ports::connector::ConnectorRequest,
    ) -> Result<baton_core::ports::connector::Envelope, baton_core::ports::connector::ConnectorError>
    {
        self.0.lock().unwrap().push(request.now_ms);
        ConfiguredConnector.call(request).await
    }
}

#[tokio::test(start_paused = true)]
async fn connectors_answer_as_of_the_runtimes_clock() {
    use std::sync::Arc;

    use baton_core::ports::clock::FixedClock;
    use baton_inproc::HeapStore;
    use baton_inproc::scripted::ScriptedModel;
    use baton_runtime::Runtime;

    let script = ONE_SHOP_TURN;
    // A day far from the test's own: connectors see the runtime's clock, not the machine's.
    const JUNE_1_2031: u64 = 1_938_124_800_000;
    let calls = Arc::new(ClockedConnector(Default::default()));
    let runtime = Runtime::builder(Arc::new(TestRegistry::default().load().unwrap()))
        .model_override(Arc::new(ScriptedModel::from_yaml(script).unwrap()))
        .store(Arc::new(HeapStore::new()))
        .connector("test", calls.clone())
        .clock(Arc::new(FixedClock(JUNE_1_2031)))
        .build()
        .unwrap();
    let stream = runtime
        .run_turn(request("coffee deals", None, "t1"))
        .await
        .unwrap();
    let _: Vec<_> = stream.collect().await;
    assert_eq!(*calls.0.lock().unwrap(), [JUNE_1_2031]);
}

/// A store whose claims take a while, as a busy store's do.
struct SlowClaims(baton_inproc::HeapStore);

#[async_trait::async_trait]
impl baton_core::ports::store::Store for SlowClaims {
    async fn claim(
        &self,
        request: baton_core::ports::store::ClaimRequest,
    ) -> Result<baton_core::ports::store::Claim, baton_core::ports::store::StoreError> {
        let claim = self.0.claim(request).await;
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        claim
    }
    async fn release(
        &self,
        episode_id: &str,
        turn_id: &str,
    ) -> Result<(), baton_core::ports::store::StoreError> {
        self.0.release(episode_id, turn_id).await
    }
    async fn commit(
        &self,
        commit: &baton_core::ports::store::Commit,
    ) -> Result<u64, baton_core::ports::store::StoreError> {
        self.0.commit(commit).await
    }
    async fn save_checkpoint(
        &self,
        episode_id: &str,
        turn_id: &str,
        checkpoint: &str,
    ) -> Result<(), baton_core::ports::store::StoreError> {
        self.0
            .save_checkpoint(episode_id, turn_id, checkpoint)
            .await
    }
    async fn checkpoint(
        &self,
        episode_id: &str,
        turn_id: &str,
    ) -> Result<Option<String>, baton_core::ports::store::StoreError> {
        self.0.checkpoint(episode_id, turn_id).await
    }
    async fn episode(
        &self,
        principal: &baton_core::Principal,
        episode_id: &str,
    ) -> Result<baton_core::ports::store::EpisodeMeta, baton_core::ports::store::StoreError> {
        self.0.episode(principal, episode_id).await
    }
    async fn turns(
        &self,
        principal: &baton_core::Principal,
        episode_id: &str,
        limit: usize,
    ) -> Result<Vec<baton_core::turn::TurnRecord>, baton_core::ports::store::StoreError> {
        self.0.turns(principal, episode_id, limit).await
    }
    async fn turns_after(
        &self,
        principal: &baton_core::Principal,
        episode_id: &str,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<baton_core::turn::TurnRecord>, baton_core::ports::store::StoreError> {
        self.0
            .turns_after(principal, episode_id, after_seq, limit)
            .await
    }
    async fn save_summary(
        &self,
        principal: &baton_core::Principal,
        episode_id: &str,
        expected_version: u64,
        summary: &baton_core::memory::EpisodeSummary,
    ) -> Result<(), baton_core::ports::store::StoreError> {
        self.0
            .save_summary(principal, episode_id, expected_version, summary)
            .await
    }
    async fn due_episodes(
        &self,
        limit: usize,
    ) -> Result<Vec<baton_core::ports::store::DueEpisode>, baton_core::ports::store::StoreError>
    {
        self.0.due_episodes(limit).await
    }
    async fn upstream_conversation(
        &self,
        principal: &baton_core::Principal,
        episode_id: &str,
        agent_id: &str,
    ) -> Result<
        Option<baton_core::ports::upstream::UpstreamConversation>,
        baton_core::ports::store::StoreError,
    > {
        self.0
            .upstream_conversation(principal, episode_id, agent_id)
            .await
    }
    async fn save_upstream_conversation(
        &self,
        principal: &baton_core::Principal,
        episode_id: &str,
        conversation: &baton_core::ports::upstream::UpstreamConversation,
    ) -> Result<(), baton_core::ports::store::StoreError> {
        self.0
            .save_upstream_conversation(principal, episode_id, conversation)
            .await
    }
    async fn body(
        &self,
        principal: &baton_core::Principal,
        episode_id: &str,
        key: &str,
    ) -> Result<serde_json::Value, baton_core::ports::store::StoreError> {
        self.0.body(principal, episode_id, key).await
    }
    async fn link(
        &self,
        principal: &baton_core::Principal,
        server: &str,
    ) -> Result<Option<baton_core::ports::store::AccountLink>, baton_core::ports::store::StoreError>
    {
        self.0.link(principal, server).await
    }
    async fn links(
        &self,
        principal: &baton_core::Principal,
    ) -> Result<Vec<baton_core::ports::store::AccountLink>, baton_core::ports::store::StoreError>
    {
        self.0.links(principal).await
    }
    async fn save_link(
        &self,
        principal: &baton_core::Principal,
        link: &baton_core::ports::store::AccountLink,
    ) -> Result<(), baton_core::ports::store::StoreError> {
        self.0.save_link(principal, link).await
    }
    async fn delete_link(
        &self,
        principal: &baton_core::Principal,
        server: &str,
    ) -> Result<bool, baton_core::ports::store::StoreError> {
        self.0.delete_link(principal, server).await
    }
}

/// A caller that gives up while its turn is being claimed leaves no claim that nothing
/// will finish: the claimed turn runs and commits without it.
#[tokio::test(start_paused = true)]
async fn a_caller_that_leaves_during_the_claim_leaves_no_orphan_claim() {
    use std::sync::Arc;
    use std::time::Duration;

    use baton_inproc::HeapStore;
    use baton_inproc::scripted::ScriptedModel;
    use baton_runtime::Runtime;

    let script = ONE_SHOP_TURN;
    let store = Arc::new(SlowClaims(HeapStore::new()));
    let runtime = Runtime::builder(Arc::new(TestRegistry::default().load().unwrap()))
        .model_override(Arc::new(ScriptedModel::from_yaml(script).unwrap()))
        .store(store.clone())
        .connector("test", Arc::new(ConfiguredConnector))
        .build()
        .unwrap();
    let gave_up = tokio::time::timeout(
        Duration::from_millis(100),
        runtime.run_turn(request("coffee deals", None, "t1")),
    )
    .await;
    assert!(
        gave_up.is_err(),
        "the caller left before the claim was answered"
    );
    tokio::time::sleep(Duration::from_secs(5)).await;
    let again = runtime
        .run_turn(request("coffee deals", None, "t1"))
        .await
        .unwrap();
    assert!(
        again.replay,
        "the claimed turn ran and committed: {again:?}"
    );
    let turns = store
        .0
        .turns(&alice(), &again.episode_id, 10)
        .await
        .unwrap();
    assert_eq!(turns.len(), 1);
}

/// One routed turn to the shop specialist, with one tool call, composed in one word.
const ONE_SHOP_TURN: &str = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      tool_calls: [{ name: ask_shop, args: { query: "coffee deals", intent_count: 1 } }]
    - when: { purpose: compose }
      text: ["Done."]
  shop:
    - when: { after_tool_results: false }
      tool_calls: [{ name: search_offers, args: { query: "coffee" } }]
    - when: { after_tool_results: true }
      text: ["Roast coffee earns 500 points."]
"#;
