//! The eval runner through the engine with a scripted model: a perfect router passes, one
//! that drops a second call or misroutes fails with the right figures, the history makes a
//! switch, end-to-end mode checks answers, and a model that fails marks cases errored.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::collections::BTreeSet;
use std::sync::Arc;

use baton_core::ports::store::Store;
use baton_evals::{EvalMode, Verdict, load_suite, run_suite};
use baton_inproc::ConfiguredConnector;
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
