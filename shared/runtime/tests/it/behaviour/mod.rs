//! Engine behaviour over the public API: isolation, idempotency, bad input, faults.

use std::time::Duration;

use baton_core::Principal;
use baton_core::events::{Event, WireEvent};
use baton_core::trace::{GuardName, LimitHit};
use baton_core::turn::{AgentStatus, TurnOutcome};
use baton_runtime::RejectionKind;
use futures::StreamExt;

use crate::support::*;
use baton_core::ports::store::TurnStore as _;

mod claims;
mod limits;
mod prior_context;

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

    let script = claims::ONE_SHOP_TURN;
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
