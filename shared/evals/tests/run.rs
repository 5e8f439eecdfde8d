//! The eval runner through the engine with a scripted model: a perfect router passes, one
//! that drops a second call or misroutes fails with the right figures, the history makes a
//! switch, end-to-end mode checks answers, and a model that fails marks cases errored.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::collections::BTreeSet;
use std::sync::Arc;

use baton_connectors::ConfiguredConnector;
use baton_core::ports::store::Store;
use baton_evals::{EvalMode, Verdict, load_suite, run_suite};
use baton_inproc::HeapStore;
use baton_inproc::scripted::ScriptedModel;
use baton_runtime::{Runtime, RuntimeConfig};
use baton_testkit::registry::TestRegistry;

const SUITE: &str = r#"
cases:
  - id: coffee
    tags: [single]
    turn: find me coffee deals
    expect:
      route: { agents: [shop] }
      args: { shop: { query: "find me coffee deals" } }
      ignore_args: [intent_count]
  - id: mixed
    tags: [mixed]
    turn: my receipt and my points balance
    expect: { route: { agents: [support, rewards], match: any_order } }
  - id: switch
    tags: [switch]
    history:
      - { user: "find me coffee deals", answer: "Roast coffee.", consulted: [shop] }
    turn: what about my points
    expect:
      route: { agents: [rewards] }
      answer: { contains: ["1200"] }
  - id: hello
    tags: [fastpath]
    turn: hi there
    expect: { route: fastpath }
"#;

/// A router; `drop_second` leaves out the mixed turn's second call.
fn script(drop_second: bool) -> String {
    let mixed = if drop_second {
        // Two intents reported, one call made: the failsafe re-asks, to no avail.
        r#"[{ name: ask_support, args: { query: "my receipt", intent_count: 2 } }]"#
    } else {
        r#"[{ name: ask_support, args: { query: "my receipt", intent_count: 2 } }, { name: ask_rewards, args: { query: "my points balance", intent_count: 2 } }]"#
    };
    format!(
        r#"
agents:
  orchestrator:
    - when: {{ purpose: route, user_contains: "coffee" }}
      tool_calls: [{{ name: ask_shop, args: {{ query: "coffee", intent_count: 1 }} }}]
    - when: {{ purpose: route, user_contains: "receipt" }}
      tool_calls: {mixed}
    - when: {{ purpose: route, user_contains: "points" }}
      tool_calls: [{{ name: ask_rewards, args: {{ query: "points", intent_count: 1 }} }}]
    - when: {{ purpose: route, user_contains: "hi" }}
      text: ["Hello!"]
    - when: {{ purpose: compose }}
      text: ["You have 1200 points."]
  rewards:
    - tool_calls: [{{ name: points_balance, args: {{}} }}]
      when: {{ after_tool_results: false }}
    - text: ["1200 points."]
  support:
    - text: ["Under review."]
  shop:
    - text: ["Roast coffee."]
"#
    )
}

fn runtime(script: &str, routing_only: bool) -> (Runtime, Arc<dyn Store>) {
    let store: Arc<dyn Store> = Arc::new(HeapStore::new());
    let runtime = Runtime::builder(Arc::new(TestRegistry::default().load().unwrap()))
        .model_override(Arc::new(ScriptedModel::from_yaml(script).unwrap()))
        .store(store.clone())
        .connector("test", Arc::new(ConfiguredConnector))
        .config(RuntimeConfig {
            routing_only,
            ..RuntimeConfig::default()
        })
        .build()
        .unwrap();
    (runtime, store)
}

fn specialists() -> BTreeSet<String> {
    ["shop", "support", "rewards"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect()
}

#[tokio::test]
async fn a_perfect_router_passes_in_both_modes() {
    let suite = load_suite("evals/t.yaml", SUITE, &specialists()).unwrap();
    for routing_only in [true, false] {
        let (rt, store) = runtime(&script(false), routing_only);
        let run = run_suite(&rt, &store, &suite, 4).await;
        let mode = if routing_only {
            EvalMode::Routing
        } else {
            EvalMode::EndToEnd
        };
        assert_eq!(run.mode, mode);
        assert_eq!(
            (run.metrics.passed, run.metrics.failed),
            (4, 0),
            "{:#?}",
            run.results
        );
        assert_eq!(run.metrics.routing.accuracy, 1.0);
        assert_eq!(run.metrics.switch_pairs["shop→rewards"].accuracy, 1.0);
        // The answer is checked only end to end.
        let answered = run.results[2].answer_ok;
        assert_eq!(answered, (!routing_only).then_some(true));
        // The runtime's own argument record: the verbatim query, after the guards.
        assert_eq!(run.results[0].args_ok, Some(true));
    }
}

#[tokio::test]
async fn a_router_that_drops_a_second_call_fails_with_the_figures_to_show_it() {
    let suite = load_suite("evals/t.yaml", SUITE, &specialists()).unwrap();
    let (rt, store) = runtime(&script(true), true);
    let run = run_suite(&rt, &store, &suite, 4).await;
    // The failsafe re-asks once; the script answers the same, so one call is missing.
    let mixed = &run.results[1];
    let Verdict::Failed { reasons } = &mixed.verdict else {
        panic!("{mixed:?}")
    };
    assert!(reasons[0].contains("consulted support"), "{reasons:?}");
    let m = &run.metrics;
    assert_eq!((m.passed, m.failed), (3, 1));
    assert_eq!(m.mixed_recall, Some(0.5));
    assert_eq!(m.specialists["rewards"].false_negatives, 1);
    assert!(m.failsafe_reasks >= 1, "{m:?}");
}

#[tokio::test]
async fn a_model_that_fails_marks_cases_errored_and_the_run_still_reports() {
    let suite = load_suite("evals/t.yaml", SUITE, &specialists()).unwrap();
    let failing = "agents:\n  orchestrator:\n    - error: unavailable\n";
    let (rt, store) = runtime(failing, true);
    let run = run_suite(&rt, &store, &suite, 2).await;
    assert_eq!(run.metrics.errored, 4, "{:#?}", run.results);
    assert!(
        run.results
            .iter()
            .all(|r| matches!(r.verdict, Verdict::Errored { .. }))
    );
}

const CONTEXT_SUITE: &str = r#"
mode: end-to-end
cases:
  - id: switch-told
    tags: [reference]
    history:
      - { user: "my receipt R-77 from FreshMart didn't scan", answer: "R-77 is under review.", consulted: [support] }
      - { user: "find me coffee deals", answer: "Roast coffee.", consulted: [shop] }
    turn: what about my points
    expect:
      route: { agents: [rewards] }
      told: { rewards: ["R-77", "coffee deals", "Biscuit"] }
  - id: compacted
    compact: true
    history:
      - { user: "my dog Biscuit", answer: "Noted.", consulted: [shop] }
      - { user: "find me coffee deals", answer: "Roast coffee.", consulted: [shop] }
      - { user: "find me coffee deals", answer: "Roast coffee.", consulted: [shop] }
      - { user: "find me coffee deals", answer: "Roast coffee.", consulted: [shop] }
      - { user: "find me coffee deals", answer: "Roast coffee.", consulted: [shop] }
      - { user: "find me coffee deals", answer: "Roast coffee.", consulted: [shop] }
    turn: find me coffee deals
    expect:
      kept: ["Biscuit", "Trek FX 2"]
  - id: rewards-down
    unavailable: [rewards]
    turn: what about my points
    expect:
      route: { agents: [rewards] }
      acknowledged: [rewards]
"#;

/// A router, a summarizer, and a composition that says `compose`.
fn context_script(compose: &str) -> String {
    format!(
        r#"
agents:
  orchestrator:
    - when: {{ purpose: summarize }}
      text: ["The user's dog is Biscuit."]
    - when: {{ purpose: route, user_contains: "coffee" }}
      tool_calls: [{{ name: ask_shop, args: {{ query: "coffee", intent_count: 1 }} }}]
    - when: {{ purpose: route, user_contains: "points" }}
      tool_calls: [{{ name: ask_rewards, args: {{ query: "points", intent_count: 1 }} }}]
    - when: {{ purpose: compose }}
      text: ["{compose}"]
  rewards:
    - tool_calls: [{{ name: points_balance, args: {{}} }}]
      when: {{ after_tool_results: false }}
    - text: ["1200 points."]
  shop:
    - when: {{ purpose: summarize }}
      text: ["Coffee deals."]
    - text: ["Roast coffee."]
  support:
    - when: {{ purpose: summarize }}
      text: ["A receipt."]
"#
    )
}

fn context_runtime(script: &str, outages: bool) -> (Runtime, Arc<dyn Store>) {
    let store: Arc<dyn Store> = Arc::new(HeapStore::new());
    let connectors = vec![(
        "test".to_owned(),
        Arc::new(ConfiguredConnector) as Arc<dyn baton_core::ports::connector::Connector>,
    )];
    let connectors = if outages {
        baton_evals::with_outages(connectors)
    } else {
        connectors
    };
    let runtime = Runtime::builder(Arc::new(TestRegistry::default().load().unwrap()))
        .model_override(Arc::new(ScriptedModel::from_yaml(script).unwrap()))
        .store(store.clone())
        .connectors(connectors)
        .build()
        .unwrap();
    (runtime, store)
}

fn reasons(result: &baton_evals::CaseResult) -> Vec<String> {
    match &result.verdict {
        Verdict::Failed { reasons } => reasons.clone(),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn context_cases_count_what_was_told_kept_and_acknowledged() {
    let suite = load_suite("evals/c.yaml", CONTEXT_SUITE, &specialists()).unwrap();
    assert_eq!(suite.mode, Some(EvalMode::EndToEnd));
    let honest = "I couldn't get an answer from Rewards right now.";
    let (rt, store) = context_runtime(&context_script(honest), true);
    let run = run_suite(&rt, &store, &suite, 2).await;

    // The runtime's own prior context on the switch carries the last turn and the one
    // before it (a reference two turns back), and is recorded with the call; the third
    // fact was never said.
    let told = &run.results[0];
    assert_eq!(reasons(told), ["told: rewards was not told \"Biscuit\""]);
    assert_eq!(
        (told.context.told_found, told.context.told_expected),
        (2, 3)
    );

    // Compaction folded the first turns with the summarizer; what it did not keep is lost.
    let kept = &run.results[1];
    assert_eq!(reasons(kept), ["kept: the summary lost \"Trek FX 2\""]);
    assert_eq!(
        kept.observed.as_ref().unwrap().summary.as_deref(),
        Some("The user's dog is Biscuit.")
    );

    // Rewards' tools were down: it failed, and the answer said so.
    let down = &run.results[2];
    assert_eq!(down.verdict, Verdict::Passed, "{down:#?}");
    let observed = down.observed.as_ref().unwrap();
    assert_eq!(
        observed.failed,
        [("rewards".to_owned(), "Rewards".to_owned())]
    );

    let c = &run.metrics.context;
    assert_eq!(c.prior_context_recall, Some(2.0 / 3.0));
    assert_eq!(c.reference_resolution, Some(0.0));
    assert_eq!(c.compaction_recall, Some(0.5));
    assert_eq!(c.failure_acknowledged, Some(1.0));
}

#[tokio::test]
async fn an_answer_that_hides_a_failure_fails_and_an_outage_that_cannot_be_made_errors() {
    let suite = load_suite("evals/c.yaml", CONTEXT_SUITE, &specialists()).unwrap();
    let (rt, store) = context_runtime(&context_script("You have 1200 points."), true);
    let run = run_suite(&rt, &store, &suite, 2).await;
    assert_eq!(
        reasons(&run.results[2]),
        ["acknowledged: the answer does not say that Rewards could not answer"]
    );
    assert_eq!(run.metrics.context.failure_acknowledged, Some(0.0));

    // Without the outage wrapper the specialist answers: the case is not observed, and it
    // counts as not acknowledged rather than as a pass.
    let (rt, store) = context_runtime(&context_script("You have 1200 points."), false);
    let run = run_suite(&rt, &store, &suite, 2).await;
    let Verdict::Errored { error } = &run.results[2].verdict else {
        panic!("{:?}", run.results[2])
    };
    assert!(
        error.contains("rewards could not be made unavailable"),
        "{error}"
    );
    assert_eq!(run.metrics.context.failure_acknowledged, Some(0.0));
}
