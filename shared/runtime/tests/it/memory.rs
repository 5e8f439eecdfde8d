//! Episode memory over the public API: compaction folds older turns into summaries that
//! each agent sees only its own part of, an unusable summarizer changes nothing, a turn
//! committed meanwhile is never lost, and a prompt that would overflow is trimmed, not failed.

use baton_core::memory::EpisodeSummary;
use baton_core::ports::model::CallPurpose;
use baton_core::trace::GuardName;
use baton_runtime::RuntimeConfig;
use baton_runtime::compaction::Outcome;

use crate::support::*;
use baton_core::ports::store::{SummaryStore as _, TurnStore as _};

/// Routes "receipt" turns to support and everything else to shop; the summarizer writes a
/// summary naming what it was given.
const SCRIPT: &str = r#"
agents:
  orchestrator:
    - when: { purpose: summarize, user_contains: "SUPPORT-SECRET" }
      text: ["SUPPORT SUMMARY: receipt R-77 under review."]
    - when: { purpose: summarize, user_contains: "<requests>" }
      text: ["SHOP SUMMARY: roast coffee deals."]
    - when: { purpose: summarize }
      text: ["ORCHESTRATOR SUMMARY: coffee deals and receipt R-77."]
      usage: { input: 100, output: 20, cache_read: 0, cache_write: 0 }
    - when: { purpose: route, user_contains: "receipt" }
      tool_calls: [{ name: ask_support, args: { query: "receipt R-77", intent_count: 1 } }]
    - when: { purpose: route }
      tool_calls: [{ name: ask_shop, args: { query: "coffee deals", intent_count: 1 } }]
    - when: { purpose: compose }
      text: ["Done."]
  support:
    - text: ["Receipt R-77 is with the SUPPORT-SECRET team."]
  shop:
    - text: ["Roast coffee earns 500 points."]
"#;

/// Runs `n` turns on one episode (the second is about a receipt); returns the episode id.
async fn conversation(rig: &Rig, n: usize) -> String {
    let (episode, _) = run(rig, request("find coffee deals 1", None, "t1")).await;
    for i in 2..=n {
        let text = if i == 2 {
            "my receipt 2".to_owned()
        } else {
            format!("coffee {i}")
        };
        run(rig, request(&text, Some(&episode), &format!("t{i}"))).await;
    }
    episode
}

#[tokio::test(start_paused = true)]
async fn a_due_episode_is_compacted_and_each_agent_sees_only_its_own_summary() {
    let rig = make_rig(&TestRegistry::default(), SCRIPT);
    let episode = conversation(&rig, 7).await;
    assert!(
        rig.store.due_episodes(10).await.unwrap().is_empty(),
        "7 turns are not due"
    );
    run(&rig, request("coffee 8", Some(&episode), "t8")).await;
    let due = rig.store.due_episodes(10).await.unwrap();
    assert_eq!(due.len(), 1, "the 8th turn makes the episode due");

    let report = rig.runtime.compact_due(10, None).await.unwrap();
    assert_eq!(report.count(Outcome::Compacted), 1);
    assert_eq!(
        report.episodes[0].turns_folded, 4,
        "the last 4 turns stay intact"
    );
    assert!(report.tokens().input >= 100);
    assert!(rig.store.due_episodes(10).await.unwrap().is_empty());
    let summary = rig
        .store
        .episode(&alice(), &episode)
        .await
        .unwrap()
        .summary
        .unwrap();
    assert_eq!(summary.upto_seq, 4);
    assert!(summary.text.starts_with("ORCHESTRATOR SUMMARY"));
    assert_eq!(
        summary.agents.keys().collect::<Vec<_>>(),
        ["shop", "support"]
    );

    // The next turn: the orchestrator gets its summary and only the turns after it.
    run(&rig, request("my receipt again", Some(&episode), "t9")).await;
    run(&rig, request("coffee again", Some(&episode), "t10")).await;
    let requests = rig.model.requests();
    let route = requests
        .iter()
        .rfind(|r| r.purpose == CallPurpose::Route)
        .unwrap();
    let system: String = route.system.iter().map(|b| b.text.to_string()).collect();
    assert!(system.contains("<conversation_summary>\nORCHESTRATOR SUMMARY"));
    let seen = format!("{:?}", route.messages);
    assert!(
        !seen.contains("find coffee deals 1"),
        "turn 1 is summarised: {seen}"
    );
    assert!(seen.contains("coffee 5"), "turn 5 is kept: {seen}");
    // A specialist gets its own summary, never another's or the orchestrator's.
    let shop = requests.iter().rfind(|r| &*r.agent_id == "shop").unwrap();
    let shop_seen = format!("{:?} {:?}", shop.system, shop.messages);
    assert!(shop_seen.contains("SHOP SUMMARY"));
    assert!(!shop_seen.contains("SUPPORT SUMMARY") && !shop_seen.contains("SUPPORT-SECRET"));
    // The orchestrator's summary reaches it only as the prior context the runtime fills on
    // an intent switch (D-18), never as a summary of its own.
    let shop_system = format!("{:?}", shop.system);
    if let Some(at) = shop_system.find("ORCHESTRATOR SUMMARY") {
        assert!(
            shop_system[..at].contains("<prior_context>"),
            "{shop_system}"
        );
    }
    // On the switch the last turn is handed over whole, the summary after it.
    assert!(
        shop_system.contains(r#"Last turn, the user said: \"my receipt again\""#),
        "{shop_system}"
    );
    assert!(
        shop_system.contains("Earlier: ORCHESTRATOR SUMMARY"),
        "{shop_system}"
    );
    let support = requests
        .iter()
        .rfind(|r| &*r.agent_id == "support")
        .unwrap();
    let support_seen = format!("{:?}", support.system);
    assert!(support_seen.contains("SUPPORT SUMMARY") && !support_seen.contains("SHOP SUMMARY"));
}

#[tokio::test(start_paused = true)]
async fn an_unusable_summarizer_leaves_the_episode_as_it_was_and_still_due() {
    for answer in [
        r#"text: ["   "]"#,
        r#"error: unavailable"#,
        "delay_ms: 120000\n      text: [\"late\"]",
    ] {
        let script = SCRIPT.replacen(
            "    - when: { purpose: summarize, user_contains: \"SUPPORT-SECRET\" }",
            &format!("    - when: {{ purpose: summarize }}\n      {answer}\n    - when: {{ purpose: summarize, user_contains: \"SUPPORT-SECRET\" }}"),
            1,
        );
        let rig = make_rig(&TestRegistry::default(), &script);
        let episode = conversation(&rig, 8).await;
        let report = rig.runtime.compact_due(10, None).await.unwrap();
        assert_eq!(report.count(Outcome::Failed), 1, "{answer}");
        let meta = rig.store.episode(&alice(), &episode).await.unwrap();
        assert_eq!((meta.version, meta.summary), (8, None), "{answer}");
        assert_eq!(
            rig.store.due_episodes(10).await.unwrap().len(),
            1,
            "{answer}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_turn_committed_during_a_compaction_is_kept_and_folded_by_the_retry() {
    // The summarizer takes a second; a turn commits meanwhile.
    let script = SCRIPT.replace(
        "    - when: { purpose: summarize }\n      text: [\"ORCHESTRATOR",
        "    - when: { purpose: summarize }\n      delay_ms: 1000\n      text: [\"ORCHESTRATOR",
    );
    let rig = make_rig(&TestRegistry::default(), &script);
    let episode = conversation(&rig, 8).await;
    let owner = alice();
    let compaction = rig.runtime.compact_episode(&owner, &episode);
    let turn = async {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        run(&rig, request("coffee 9", Some(&episode), "t9")).await
    };
    let (report, _) = tokio::join!(compaction, turn);
    let report = report.unwrap();
    assert_eq!(report.outcome, Outcome::Compacted);
    let meta = rig.store.episode(&alice(), &episode).await.unwrap();
    assert_eq!(meta.version, 9, "the turn committed meanwhile is there");
    // Re-read after the conflict, the batch ends 4 turns before the new last turn.
    assert_eq!(meta.summary.map(|s| s.upto_seq), Some(5));
    assert_eq!(
        rig.store.turns(&alice(), &episode, 20).await.unwrap().len(),
        9
    );
}

#[tokio::test(start_paused = true)]
async fn a_local_server_compacts_after_the_turn_that_made_the_episode_due() {
    let config = RuntimeConfig {
        compact_after_turn: true,
        ..RuntimeConfig::default()
    };
    let rig = make_rig_with(&TestRegistry::default(), SCRIPT, config);
    let episode = conversation(&rig, 8).await;
    let meta = rig.store.episode(&alice(), &episode).await.unwrap();
    assert_eq!(meta.summary.map(|s| s.upto_seq), Some(4));
    assert!(rig.store.due_episodes(10).await.unwrap().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_prompt_that_would_overflow_leaves_older_turns_out_and_says_so() {
    // A small window: the stable prefix and a few long turns fill three quarters of it.
    let registry = TestRegistry::default().file(
        "models.yaml",
        "models:\n  m1:\n    provider: test\n    model_id: test-model-1\n    context_window: 600\n    \
         prices: { input: 1.0, output: 2.0 }\n    capabilities: { tool_choice: true }\n  m2:\n    \
         provider: test\n    model_id: test-model-2\n    context_window: 600\n    prices: { input: 1.0, output: 2.0 }\n",
    );
    let rig = make_rig(&registry, SCRIPT);
    let long = "coffee ".repeat(200);
    let (episode, _) = run(&rig, request(&format!("{long} 1"), None, "t1")).await;
    run(&rig, request(&format!("{long} 2"), Some(&episode), "t2")).await;
    let (_, events) = run(&rig, request("coffee 3", Some(&episode), "t3")).await;
    assert_eq!(answer(&events), "Done.", "the turn still answers");
    let last = rig
        .store
        .turns(&alice(), &episode, 1)
        .await
        .unwrap()
        .pop()
        .unwrap();
    let trim = last
        .routing
        .guards
        .iter()
        .find(|g| g.guard == GuardName::HistoryTrim)
        .unwrap_or_else(|| panic!("the trim is recorded: {:?}", last.routing));
    assert!(trim.detail.contains("left out"), "{}", trim.detail);
    let route = rig
        .model
        .requests()
        .into_iter()
        .rfind(|r| r.purpose == CallPurpose::Route)
        .unwrap();
    assert!(
        !format!("{:?}", route.messages).contains(" 1\""),
        "turn 1 was left out"
    );
}

#[test]
fn the_summary_type_is_the_one_the_store_keeps() {
    // Compile-time link between the engine's view and the store's: a summary of nothing.
    assert_eq!(EpisodeSummary::upto(None), 0);
}
