//! Golden event transcripts of whole turns (insta snapshots), under virtual time.

use crate::support::*;
use baton_core::ports::store::TurnStore as _;

/// Sub-agents that answer with one tool call, then text.
const SPECIALISTS: &str = r#"
  shop:
    - when: { after_tool_results: false }
      delay_ms: 100
      tool_calls: [{ name: search_offers, args: { query: "coffee deals" } }]
    - when: { after_tool_results: true }
      delay_ms: 100
      chunk_delay_ms: 10
      text: ["Roast coffee ", "earns 500 points."]
  support:
    - when: { after_tool_results: false }
      delay_ms: 300
      tool_calls: [{ name: lookup_receipt, args: { query: "receipt" } }]
    - when: { after_tool_results: true }
      delay_ms: 300
      chunk_delay_ms: 10
      text: ["Your receipt R-1 ", "was rejected; ", "please rescan it."]
  rewards:
    - when: { after_tool_results: false }
      delay_ms: 50
      tool_calls: [{ name: points_balance, args: {} }]
    - when: { after_tool_results: true }
      text: ["You have 1200 points."]
"#;

fn script(orchestrator: &str) -> String {
    format!("agents:\n  orchestrator:\n{orchestrator}\n{SPECIALISTS}")
}

const MIXED: &str = "my receipt didn't scan and find me coffee deals";

const ROUTE_MIXED: &str = r#"
    - when: { purpose: route }
      delay_ms: 50
      text: ["Let me check ", "both for you."]
      tool_calls:
        - { name: ask_support, args: { query: "my receipt didn't scan", intent_count: 2, support_category: receipts } }
        - { name: ask_shop, args: { query: "find me coffee deals", intent_count: 2 } }
"#;

const COMPOSE: &str = r#"
    - when: { purpose: compose }
      delay_ms: 50
      text: ["Here is what I found. ", "All done."]
"#;

async fn golden(setup: TestRegistry, orchestrator: &str, text: &str) -> String {
    let rig = make_rig(&setup, &script(orchestrator));
    let (episode, events) = run(&rig, request(text, None, "t1")).await;
    transcript(&rig, &episode, &events).await
}

#[tokio::test(start_paused = true)]
async fn single_intent() {
    let orch = format!(
        "{}{}",
        r#"
    - when: { purpose: route }
      delay_ms: 50
      text: ["Looking for deals."]
      tool_calls: [{ name: ask_shop, args: { query: "coffee", intent_count: 1 } }]
"#,
        COMPOSE
    );
    insta::assert_snapshot!(golden(TestRegistry::default(), &orch, "find me coffee deals").await);
}

#[tokio::test(start_paused = true)]
async fn mixed_intent() {
    insta::assert_snapshot!(
        golden(
            TestRegistry::default(),
            &format!("{ROUTE_MIXED}{COMPOSE}"),
            MIXED
        )
        .await
    );
}

#[tokio::test(start_paused = true)]
async fn fastpath_greeting() {
    let orch = r#"
    - when: { purpose: route }
      text: ["Hi! ", "How can I help?"]
"#;
    insta::assert_snapshot!(golden(TestRegistry::default(), orch, "hi there").await);
}

#[tokio::test(start_paused = true)]
async fn text_only_answer_outside_the_allowlist_is_rerouted() {
    let orch = format!(
        "{}{}",
        r#"
    - when: { purpose: route }
      text: ["Mixing bleach ", "is fine."]
"#,
        COMPOSE
    );
    insta::assert_snapshot!(
        golden(
            TestRegistry::default(),
            &orch,
            "is it safe to mix bleach with vinegar"
        )
        .await
    );
}

#[tokio::test(start_paused = true)]
async fn partial_failure_one_errors_one_times_out() {
    let script = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      text: ["On it."]
      tool_calls:
        - { name: ask_shop, args: { query: "coffee deals", intent_count: 2 } }
        - { name: ask_support, args: { query: "receipt didn't scan", intent_count: 2 } }
    - when: { purpose: compose }
      text: ["Here are the coffee deals. ", "I couldn't reach Support right now."]
  shop:
    - when: { after_tool_results: false }
      tool_calls: [{ name: search_offers, args: { query: "coffee" } }]
    - when: { after_tool_results: true }
      text: ["Roast coffee earns 500 points."]
  support:
    - error: invalid
"#;
    let rig = make_rig(&TestRegistry::default(), script);
    let (episode, events) = run(
        &rig,
        request("coffee deals and my receipt didn't scan", None, "t1"),
    )
    .await;
    let t = transcript(&rig, &episode, &events).await;
    assert!(
        !t.contains("scripted rejection"),
        "no error text reaches the user"
    );
    insta::assert_snapshot!("partial_failure_error", t);

    let script = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      text: ["On it."]
      tool_calls:
        - { name: ask_shop, args: { query: "coffee deals", intent_count: 2 } }
        - { name: ask_rewards, args: { query: "points balance", intent_count: 2 } }
    - when: { purpose: compose }
      text: ["Here are the coffee deals; Rewards took too long."]
  shop:
    - when: { after_tool_results: false }
      tool_calls: [{ name: search_offers, args: { query: "coffee" } }]
    - when: { after_tool_results: true }
      text: ["Roast coffee earns 500 points."]
  rewards:
    - delay_ms: 9000
      text: ["too late"]
"#;
    let rig = make_rig(&TestRegistry::default(), script);
    let (episode, events) = run(
        &rig,
        request("coffee deals and my points balance", None, "t1"),
    )
    .await;
    insta::assert_snapshot!(
        "partial_failure_timeout",
        transcript(&rig, &episode, &events).await
    );
}

#[tokio::test(start_paused = true)]
async fn over_cap_fan_out_drops_the_extra_call() {
    let orch = format!(
        "{}{}",
        r#"
    - when: { purpose: route }
      text: ["Checking three things."]
      tool_calls:
        - { name: ask_shop, args: { query: "coffee deals", intent_count: 3 } }
        - { name: ask_support, args: { query: "receipt didn't scan", intent_count: 3 } }
        - { name: ask_rewards, args: { query: "points balance", intent_count: 3 } }
"#,
        COMPOSE
    );
    let t = golden(
        TestRegistry::default(),
        &orch,
        "coffee deals, my receipt didn't scan, and my points balance",
    )
    .await;
    assert!(t.contains("over_cap"));
    insta::assert_snapshot!(t);
}

#[tokio::test(start_paused = true)]
async fn dropped_second_call_is_caught_by_the_failsafe() {
    let orch = format!(
        "{}{}",
        r#"
    - when: { purpose: route }
      text: ["Let me look."]
      tool_calls:
        - { name: ask_support, args: { query: "my receipt didn't scan", intent_count: 2 } }
    - when: { purpose: reminder }
      tool_calls:
        - { name: ask_support, args: { query: "my receipt didn't scan", intent_count: 2 } }
        - { name: ask_shop, args: { query: "find me coffee deals", intent_count: 2 } }
"#,
        COMPOSE
    );
    let t = golden(TestRegistry::default(), &orch, MIXED).await;
    assert!(t.contains("intent_count"));
    insta::assert_snapshot!(t);
}

#[tokio::test(start_paused = true)]
async fn verbatim_override_sends_the_users_words() {
    let orch = format!(
        "{}{}",
        r#"
    - when: { purpose: route }
      text: ["Looking."]
      tool_calls: [{ name: ask_shop, args: { query: "cheap coffee offers near me", intent_count: 1 } }]
"#,
        COMPOSE
    );
    let rig = make_rig(&TestRegistry::default(), &script(&orch));
    let (episode, events) = run(&rig, request("any deals on ground coffee?", None, "t1")).await;
    let shop_request = rig
        .model
        .requests()
        .into_iter()
        .find(|r| &*r.agent_id == "shop")
        .unwrap();
    assert_eq!(
        shop_request.latest_user_text(),
        Some("any deals on ground coffee?")
    );
    insta::assert_snapshot!(transcript(&rig, &episode, &events).await);
}

/// Support asks a question the user can answer in a word; shop answers anything. The
/// end of the echo tests' scripts.
const SUPPORT_ASKS: &str = r#"  support:
    - when: { user_contains: "points" }
      text: ["I can help. Is it from a Fetch Shop purchase?"]
    - text: ["Thanks, I have filed the missing points claim."]
  shop:
    - text: ["Roast coffee earns 500 points."]
"#;

#[tokio::test(start_paused = true)]
async fn echo_and_overlap_guards() {
    // Turn 1: support asks a question. Turn 2: a short echo the orchestrator sends to shop.
    let script = r#"
agents:
  orchestrator:
    - when: { purpose: route, user_contains: "points" }
      text: ["Checking."]
      tool_calls: [{ name: ask_support, args: { query: "missing points", intent_count: 1 } }]
    - when: { purpose: route, user_contains: "shop" }
      tool_calls: [{ name: ask_shop, args: { query: "fetch shop", intent_count: 1 } }]
    - when: { purpose: route, user_contains: "coffee" }
      text: ["Two things."]
      tool_calls:
        - { name: ask_shop, args: { query: "coffee deals", intent_count: 2 } }
        - { name: ask_rewards, args: { query: "weather tomorrow", intent_count: 2 } }
    - when: { purpose: compose }
      text: ["Done."]
  rewards:
    - text: ["Sunny."]
"#;
    let rig = make_rig(&TestRegistry::default(), &format!("{script}{SUPPORT_ASKS}"));
    let (episode, _) = run(&rig, request("I am missing points", None, "t1")).await;
    let (_, events) = run(&rig, request("fetch shop", Some(&episode), "t2")).await;
    let echo = transcript(&rig, &episode, &events).await;
    assert!(echo.contains("\"echo\""));
    insta::assert_snapshot!("echo_guard", echo);

    let (episode, events) = run(
        &rig,
        request(
            "find me coffee deals and what's the sunshine like",
            None,
            "t3",
        ),
    )
    .await;
    let overlap = transcript(&rig, &episode, &events).await;
    assert!(overlap.contains("no_overlap"));
    insta::assert_snapshot!("overlap_guard", overlap);
}

#[tokio::test(start_paused = true)]
async fn a_text_only_answer_to_an_echoing_reply_goes_to_the_asking_specialist() {
    // The reply is short and echoes support's question; the orchestrator answers it
    // itself. Support asked, so support answers, as when the orchestrator calls a tool.
    let script = r#"
agents:
  orchestrator:
    - when: { purpose: route, user_contains: "points" }
      tool_calls: [{ name: ask_support, args: { query: "missing points", intent_count: 1 } }]
    - when: { purpose: route, user_contains: "shop" }
      text: ["Great, glad to hear it!"]
    - when: { purpose: compose }
      text: ["Done."]
"#;
    let rig = make_rig(&TestRegistry::default(), &format!("{script}{SUPPORT_ASKS}"));
    let (episode, _) = run(&rig, request("I am missing points", None, "t1")).await;
    let (_, events) = run(&rig, request("fetch shop", Some(&episode), "t2")).await;
    let turns = rig.store.turns(&alice(), &episode, 2).await.unwrap();
    let record = &turns[1].routing;
    assert_eq!(record.invoked, ["support"], "not the fallback (shop)");
    assert!(
        record
            .guards
            .iter()
            .any(|g| g.guard == baton_core::trace::GuardName::Echo)
    );
    let shown = answer(&events);
    assert!(!shown.contains("glad to hear"), "{shown}");
}

#[tokio::test(start_paused = true)]
async fn principal_mismatch_is_suppressed_and_counted() {
    let setup = TestRegistry {
        rewards_tool: "foreign_points",
        ..TestRegistry::default()
    };
    let orch = r#"
    - when: { purpose: route }
      text: ["Checking your points."]
      tool_calls: [{ name: ask_rewards, args: { query: "my points balance", intent_count: 1 } }]
    - when: { purpose: compose }
      text: ["I couldn't get your balance right now."]
"#;
    let script = format!(
        "agents:\n  orchestrator:\n{orch}\n  rewards:\n    - when: {{ after_tool_results: false }}\n      tool_calls: [{{ name: foreign_points, args: {{}} }}]\n    - when: {{ after_tool_results: true }}\n      text: [\"Your balance is unavailable right now.\"]\n"
    );
    let rig = make_rig(&setup, &script);
    let (episode, events) = run(&rig, request("my points balance", None, "t1")).await;
    let t = transcript(&rig, &episode, &events).await;
    assert!(
        !t.contains("99999"),
        "the foreign payload never reaches anyone"
    );
    let rewards_followup = rig
        .model
        .requests()
        .into_iter()
        .rfind(|r| &*r.agent_id == "rewards")
        .unwrap();
    assert!(!format!("{:?}", rewards_followup.messages).contains("99999"));
    assert_eq!(rig.metrics.counter("principal_mismatch_total"), 1);
    insta::assert_snapshot!(t);
}

#[tokio::test(start_paused = true)]
async fn limit_trip_offers_to_continue_and_continue_resumes() {
    let setup = TestRegistry {
        turn_limits: "turn_limits: { max_subagents: 1 }",
        ..TestRegistry::default()
    };
    let orch = format!("{ROUTE_MIXED}{COMPOSE}");
    let rig = make_rig(&setup, &script(&orch));
    let (episode, events) = run(&rig, request(MIXED, None, "t1")).await;
    let first = transcript(&rig, &episode, &events).await;
    assert!(answer(&events).contains("Would you like me to continue?"));
    insta::assert_snapshot!("limit_trip", first);
    let (_, events) = run(&rig, request("yes", Some(&episode), "t2")).await;
    insta::assert_snapshot!("limit_continue", transcript(&rig, &episode, &events).await);
}

#[tokio::test(start_paused = true)]
async fn passthrough_streams_the_single_specialist() {
    let setup = TestRegistry {
        composition: "passthrough",
        ..TestRegistry::default()
    };
    let orch = r#"
    - when: { purpose: route }
      text: ["Looking for deals."]
      tool_calls: [{ name: ask_shop, args: { query: "coffee", intent_count: 1 } }]
"#;
    insta::assert_snapshot!(golden(setup, orch, "find me coffee deals").await);
}

#[tokio::test(start_paused = true)]
async fn direct_streams_the_first_live_and_flushes_the_other() {
    let setup = TestRegistry {
        composition: "direct",
        ..TestRegistry::default()
    };
    let rig = make_rig(&setup, &script(ROUTE_MIXED));
    let (episode, events) = run(&rig, request(MIXED, None, "t1")).await;
    // Two specialists' answers are two paragraphs, on the wire and in the journal.
    assert!(answer(&events).contains("points.\n\nYour receipt"));
    let turns = rig.store.turns(&alice(), &episode, 1).await.unwrap();
    assert!(turns[0].narration.contains("points.\n\nYour receipt"));
    insta::assert_snapshot!(transcript(&rig, &episode, &events).await);
}

#[tokio::test(start_paused = true)]
async fn slow_specialist_gets_a_progress_line() {
    let script = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      text: ["Checking your points."]
      tool_calls: [{ name: ask_rewards, args: { query: "points", intent_count: 1 } }]
    - when: { purpose: compose }
      text: ["You have 1200 points."]
  rewards:
    - when: { after_tool_results: false }
      delay_ms: 2500
      tool_calls: [{ name: points_balance, args: {} }]
    - when: { after_tool_results: true }
      text: ["You have 1200 points."]
"#;
    let rig = make_rig(&TestRegistry::default(), script);
    let (episode, events) = run(&rig, request("what is my points balance", None, "t1")).await;
    let t = transcript(&rig, &episode, &events).await;
    assert!(t.contains("Still waiting on Rewards"));
    insta::assert_snapshot!(t);
}

#[tokio::test(start_paused = true)]
async fn direct_with_simultaneous_specialists_loses_no_text() {
    let setup = TestRegistry {
        composition: "direct",
        ..TestRegistry::default()
    };
    let script = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      text: ["Both."]
      tool_calls:
        - { name: ask_shop, args: { query: "find me coffee deals", intent_count: 2 } }
        - { name: ask_support, args: { query: "my receipt didn't scan", intent_count: 2 } }
  shop:
    - when: { after_tool_results: false }
      tool_calls: [{ name: search_offers, args: { query: "coffee" } }]
    - when: { after_tool_results: true }
      text: ["shop0 ", "shop1 "]
  support:
    - when: { after_tool_results: false }
      tool_calls: [{ name: lookup_receipt, args: { query: "receipt" } }]
    - when: { after_tool_results: true }
      text: ["support0 ", "support1 "]
"#;
    let rig = make_rig(&setup, script);
    let (_, events) = run(&rig, request(MIXED, None, "t1")).await;
    let text = answer(&events);
    assert!(
        text.contains("shop0 shop1") && text.contains("support0 support1"),
        "{text}"
    );
}
