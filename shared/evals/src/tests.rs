//! Loading suites, every match mode, and the figures of known outcomes.

use std::collections::BTreeSet;

use serde_json::json;

use super::*;

fn specialists() -> BTreeSet<String> {
    ["shop", "support", "rewards"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect()
}

const SUITE: &str = r#"
cases:
  - id: coffee
    tags: [single]
    turn: find me coffee deals
    expect:
      route: { agents: [shop] }
      args: { shop: { query: "Coffee deals", intent_count: 1 } }
      ignore_args: [intent_count]
  - id: hello
    tags: [fastpath]
    turn: hi there
    expect: { route: fastpath }
  - id: receipt-then-points
    tags: [switch]
    history:
      - { user: my receipt didn't scan, answer: It is under review., consulted: [support] }
    turn: and my points?
    expect: { route: { agents: [rewards] } }
  - id: mixed
    tags: [mixed]
    turn: my receipt and coffee deals
    expect:
      route: { agents: [support, shop], match: any_order }
      answer: { contains: [receipt], not_contains: [error], regex: "(?i)coffee" }
"#;

fn suite() -> Suite {
    load_suite("evals/routing.yaml", SUITE, &specialists()).unwrap()
}

fn seen(consulted: &[&str]) -> Observation {
    Observation {
        consulted: consulted.iter().map(|s| (*s).to_owned()).collect(),
        fastpath: consulted.is_empty(),
        latency_ms: 10,
        ..Observation::default()
    }
}

#[test]
fn a_suite_loads_with_its_name_from_the_file() {
    let s = suite();
    assert_eq!(s.name, "routing");
    assert_eq!(s.cases.len(), 4);
    assert_eq!(expected_agents(&s.cases[3]), ["support", "shop"]);
}

#[test]
fn problems_name_the_file_line_and_field() {
    let e = load_suite(
        "evals/x.yaml",
        "cases:\n  - id: a\n    turn: hi\n    expect: { rout: fastpath }\n",
        &specialists(),
    )
    .unwrap_err();
    assert_eq!(e[0].file, "evals/x.yaml");
    assert!(e[0].line.is_some(), "{e:?}");
    assert!(e[0].to_string().contains("rout"), "{}", e[0]);
    let e = load_suite(
        "evals/x.yaml",
        "cases:\n  - { id: a, turn: hi, expect: { route: { agents: [chef] } } }\n  - { id: a, turn: '', expect: {} }\n",
        &specialists(),
    )
    .unwrap_err();
    let fields: Vec<&str> = e.iter().map(|p| p.field.as_str()).collect();
    assert_eq!(
        fields,
        [
            "cases[0].expect.route.agents",
            "cases[1].id",
            "cases[1].turn"
        ]
    );
    assert!(
        e[0].problem.contains("\"chef\" is not a specialist"),
        "{}",
        e[0]
    );
    let e = load_suite(
        "evals/x.yaml",
        "cases:\n  - { id: a, turn: hi, expect: { answer: { regex: '(' } } }\n",
        &specialists(),
    )
    .unwrap_err();
    assert_eq!(e[0].field, "cases[0].expect.answer.regex");
}

#[test]
fn every_match_mode_compares_as_documented() {
    let case = |mode: &str, agents: &str| {
        load_suite(
            "x.yaml",
            &format!("cases:\n  - {{ id: c, turn: t, expect: {{ route: {{ agents: [{agents}], match: {mode} }} }} }}\n"),
            &specialists(),
        )
        .unwrap()
        .cases
        .remove(0)
    };
    let ok = |mode: &str, agents: &str, consulted: &[&str]| {
        judge(&case(mode, agents), seen(consulted)).route_ok == Some(true)
    };
    assert!(ok("exact", "shop, support", &["shop", "support"]));
    assert!(!ok("exact", "shop, support", &["support", "shop"]));
    assert!(ok(
        "in_order",
        "shop, rewards",
        &["shop", "support", "rewards"]
    ));
    assert!(!ok("in_order", "shop, rewards", &["rewards", "shop"]));
    assert!(ok("any_order", "shop, support", &["support", "shop"]));
    assert!(!ok("any_order", "shop, support", &["support"]));
    assert!(ok("subset", "shop, support", &["support"]));
    assert!(!ok("subset", "shop", &["shop", "rewards"]));
    assert!(!ok("subset", "shop", &[]));
    assert!(ok("superset", "shop", &["shop", "rewards"]));
    assert!(!ok("superset", "shop, support", &["shop"]));
}

#[test]
fn args_match_as_a_subset_ignoring_keys_and_case() {
    let s = suite();
    let mut obs = seen(&["shop"]);
    obs.args.insert(
        "shop".into(),
        json!({"query": "coffee deals ", "intent_count": 3, "extra": 1}),
    );
    assert_eq!(judge(&s.cases[0], obs.clone()).args_ok, Some(true));
    obs.args
        .insert("shop".into(), json!({"query": "tea deals"}));
    let r = judge(&s.cases[0], obs);
    assert_eq!(r.args_ok, Some(false));
    let Verdict::Failed { reasons } = r.verdict else {
        panic!("failed")
    };
    assert!(reasons[0].contains("shop.query"), "{reasons:?}");
}

#[test]
fn an_answer_is_checked_only_when_the_run_has_one() {
    let s = suite();
    let routing = judge(&s.cases[3], seen(&["support", "shop"]));
    assert_eq!(
        (routing.answer_ok, &routing.verdict),
        (None, &Verdict::Passed)
    );
    let mut e2e = seen(&["support", "shop"]);
    e2e.answer = Some("Your receipt is in review. Coffee: 500 pts.".into());
    assert_eq!(judge(&s.cases[3], e2e.clone()).answer_ok, Some(true));
    e2e.answer = Some("An error happened with your receipt.".into());
    assert_eq!(judge(&s.cases[3], e2e).answer_ok, Some(false));
}

#[test]
fn a_perfect_router_scores_one_and_a_flawed_one_shows_where() {
    let s = suite();
    let mut coffee = seen(&["shop"]);
    coffee
        .args
        .insert("shop".into(), json!({"query": "coffee deals"}));
    let perfect = [
        coffee,
        seen(&[]),
        seen(&["rewards"]),
        seen(&["shop", "support"]),
    ];
    let results: Vec<CaseResult> = s
        .cases
        .iter()
        .zip(perfect)
        .map(|(c, o)| judge(c, o))
        .collect();
    let m = metrics(&s.cases, &results, &specialists());
    assert_eq!((m.passed, m.failed, m.errored), (4, 0, 0), "{results:#?}");
    assert_eq!(m.routing.accuracy, 1.0);
    assert_eq!(m.mixed_recall, Some(1.0));
    assert_eq!(m.switch_pairs["support→rewards"].accuracy, 1.0);

    // Drops the mixed turn's second call, sends the switch back to support, and answers
    // the greeting with a specialist.
    let flawed = [
        seen(&["shop"]),
        seen(&["shop"]),
        seen(&["support"]),
        seen(&["support"]),
    ];
    let mut results: Vec<CaseResult> = s
        .cases
        .iter()
        .zip(flawed)
        .map(|(c, o)| judge(c, o))
        .collect();
    results[0] = CaseResult::errored(&s.cases[0], "the model failed");
    let m = metrics(&s.cases, &results, &specialists());
    assert_eq!((m.passed, m.failed, m.errored), (0, 3, 1));
    // The errored case expected a route and got none: it counts as not routed.
    assert_eq!(m.routing.cases, 4);
    assert_eq!(m.routing.routed, 0);
    assert_eq!(m.mixed_recall, Some(0.5));
    assert_eq!(m.switch_pairs["support→rewards"].accuracy, 0.0);
    let rewards = &m.specialists["rewards"];
    assert_eq!((rewards.true_positives, rewards.false_negatives), (0, 1));
    assert_eq!(rewards.recall, 0.0);
    let support = &m.specialists["support"];
    assert_eq!((support.true_positives, support.false_positives), (1, 1));
    assert_eq!(support.precision, 0.5);
    let c = &m.confusion;
    let at = |e: &str, o: &str| {
        c.cells[c.labels.iter().position(|l| l == e).unwrap()]
            [c.labels.iter().position(|l| l == o).unwrap()]
    };
    assert_eq!(at("rewards", "support"), 1);
    assert_eq!(at(NOBODY, "shop"), 1);
    assert_eq!(at("shop", NOBODY), 1);
    assert_eq!(at("support", "support"), 1);
}

#[test]
fn the_gate_catches_a_regression_and_a_weak_switch_and_accepts_an_improvement() {
    let s = suite();
    let mut coffee = seen(&["shop"]);
    coffee
        .args
        .insert("shop".into(), json!({"query": "coffee deals"}));
    let good = [
        coffee.clone(),
        seen(&[]),
        seen(&["rewards"]),
        seen(&["shop", "support"]),
    ];
    let run = |obs: [Observation; 4]| {
        let results: Vec<CaseResult> = s.cases.iter().zip(obs).map(|(c, o)| judge(c, o)).collect();
        let m = metrics(&s.cases, &results, &specialists());
        (results, m)
    };
    let (results, m) = run(good.clone());
    let baseline = SuiteBaseline::of(&results, &m);
    assert_eq!(baseline.cases["hello"], "passed");
    assert!(gate("routing", &s.thresholds, Some(&baseline), &results, &m).is_empty());

    // The greeting now goes to shop, and the switch back to support.
    let worse = [
        coffee.clone(),
        seen(&["shop"]),
        seen(&["support"]),
        seen(&["shop", "support"]),
    ];
    let (results, m) = run(worse);
    let reasons = gate("routing", &s.thresholds, Some(&baseline), &results, &m);
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("case hello passed in the baseline and now failed")),
        "{reasons:?}"
    );
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("the switch support→rewards routed 0%")),
        "{reasons:?}"
    );
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("routing accuracy fell from 100.0% to 50.0%")),
        "{reasons:?}"
    );

    // From a weaker baseline, the good run is an improvement: it passes the gate.
    let weak = SuiteBaseline::of(&results, &m);
    let (results, m) = run(good);
    assert!(gate("routing", &s.thresholds, Some(&weak), &results, &m).is_empty());
}

#[test]
fn coverage_lists_missing_singles_and_switch_pairs() {
    let s = suite();
    let missing = coverage(std::slice::from_ref(&s), &specialists());
    // One single case for shop only; one switch (support→rewards) of the six pairs.
    assert!(
        missing.contains(
            &"shop has 1 single-intent eval case(s); add at least 2 (tag `single`)".to_owned()
        ),
        "{missing:?}"
    );
    assert!(
        missing.iter().any(|m| m.starts_with("rewards has 0")),
        "{missing:?}"
    );
    let switches = missing
        .iter()
        .filter(|m| m.starts_with("no eval case switches"))
        .count();
    assert_eq!(switches, 5, "{missing:?}");
    assert!(
        !missing
            .iter()
            .any(|m| m.contains("from support to rewards")),
        "{missing:?}"
    );
}

#[test]
fn repeated_runs_tell_stable_from_flaky_and_failing() {
    let s = suite();
    let run = |consulted: [&[&str]; 4]| -> Vec<CaseResult> {
        s.cases
            .iter()
            .zip(consulted)
            .map(|(c, o)| judge(c, seen(o)))
            .collect()
    };
    // Case 0 expects args, so it fails every time; case 1 flips; 2 and 3 always pass.
    let a = run([&["shop"], &[], &["rewards"], &["shop", "support"]]);
    let b = run([&["shop"], &["shop"], &["rewards"], &["support", "shop"]]);
    let r = repeated(&[a, b]);
    let classes: Vec<Stability> = r.cases.iter().map(|c| c.stability).collect();
    assert_eq!(
        classes,
        [
            Stability::Failing,
            Stability::Flaky,
            Stability::Stable,
            Stability::Stable
        ]
    );
    assert_eq!((r.pass_at_n, r.pass_all_n), (0.75, 0.5));
}

#[test]
fn trust_expectations_check_the_direct_line_obligations_masking_and_who_was_kept_out() {
    let case = load_suite(
        "x.yaml",
        "cases:\n  - id: t\n    turn: hi\n    expect:\n      trust: { direct_line: shop, obligations_met: [support], masked: true, not_consulted: [rewards] }\n",
        &specialists(),
    )
    .unwrap()
    .cases
    .remove(0);
    let mut obs = seen(&["shop", "support"]);
    obs.direct_line = Some("shop".into());
    obs.obligations_met = vec!["support".into()];
    obs.masked = 1;
    assert_eq!(judge(&case, obs.clone()).trust_ok, Some(true));
    obs.consulted.push("rewards".into());
    obs.masked = 0;
    obs.direct_line = None;
    obs.obligations_met.clear();
    let r = judge(&case, obs);
    let Verdict::Failed { reasons } = r.verdict else {
        panic!("failed")
    };
    assert_eq!(reasons.len(), 4, "{reasons:?}");
}

#[test]
fn a_suites_thresholds_and_a_json_schema_are_checked() {
    let text = "thresholds: { routing_accuracy: 0.9, switch_pair: 0.5, specialists: { shop: { recall: 1.0 } } }\n\
                cases:\n  - id: j\n    turn: t\n    expect:\n      route: { agents: [shop] }\n      \
                answer: { schema: { type: object, required: [points], properties: { points: { type: integer } } } }\n";
    let s = load_suite("x.yaml", text, &specialists()).unwrap();
    assert_eq!(s.thresholds.switch_pair, 0.5);
    let mut obs = seen(&["support"]);
    obs.answer = Some("{\"points\": \"many\"}".into());
    let r = judge(&s.cases[0], obs);
    assert_eq!(r.answer_ok, Some(false));
    let m = metrics(&s.cases, std::slice::from_ref(&r), &specialists());
    let reasons = gate("x", &s.thresholds, None, std::slice::from_ref(&r), &m);
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("routing accuracy 0.0% is below its 90.0% floor")),
        "{reasons:?}"
    );
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("shop's recall 0.0% is below its 100.0% floor")),
        "{reasons:?}"
    );
    let mut ok = seen(&["shop"]);
    ok.answer = Some("{\"points\": 1200}".into());
    assert_eq!(judge(&s.cases[0], ok).answer_ok, Some(true));
    let bad = load_suite(
        "x.yaml",
        "thresholds: { specialists: { chef: { recall: 1 } } }\ncases: []\n",
        &specialists(),
    )
    .unwrap_err();
    assert_eq!(bad[0].field, "thresholds.specialists.chef");
}

const PLANNER_SUITE: &str = r#"
orchestrator: planner
cases:
  - id: chain
    turn: receipts, then help
    expect:
      plan: { waves: [[support.lookup_receipts], [support.search_help_articles]] }
  - id: wide
    turn: points and deals
    expect:
      plan: { waves: [[rewards.balance, shop.offers]] }
"#;

#[test]
fn a_suite_for_another_orchestrator_is_left_out_and_its_own_is_checked() {
    let none = BTreeSet::new();
    assert_eq!(
        load_suite_for(
            "evals/planner.yaml",
            PLANNER_SUITE,
            "orchestrator",
            &specialists()
        ),
        Ok(None)
    );
    let suite = load_suite_for("evals/planner.yaml", PLANNER_SUITE, "planner", &none)
        .unwrap()
        .unwrap();
    assert_eq!(suite.orchestrator.as_deref(), Some("planner"));
    let bad = PLANNER_SUITE.replace("shop.offers", "offers");
    let errors = load_suite_for("evals/planner.yaml", &bad, "planner", &none).unwrap_err();
    assert!(
        errors[0]
            .to_string()
            .contains("\"offers\" is not a skill name"),
        "{errors:?}"
    );
}

#[test]
fn a_plan_matches_wave_by_wave_in_any_order_within_a_wave() {
    let suite = load_suite_for(
        "evals/planner.yaml",
        PLANNER_SUITE,
        "planner",
        &BTreeSet::new(),
    )
    .unwrap()
    .unwrap();
    let planned = |waves: &[&[&str]]| Observation {
        plan: waves
            .iter()
            .map(|w| w.iter().map(|s| (*s).to_owned()).collect())
            .collect(),
        ..Observation::default()
    };
    let wide = &suite.cases[1];
    let ok = judge(wide, planned(&[&["shop.offers", "rewards.balance"]]));
    assert_eq!((ok.plan_ok, &ok.verdict), (Some(true), &Verdict::Passed));
    let serial = judge(wide, planned(&[&["rewards.balance"], &["shop.offers"]]));
    assert_eq!(serial.plan_ok, Some(false));
    let Verdict::Failed { reasons } = serial.verdict else {
        panic!("a serial plan is not the parallel one");
    };
    assert_eq!(
        reasons,
        [
            "plan: expected wave 1: rewards.balance, shop.offers, planned wave 1: rewards.balance · wave 2: shop.offers"
        ]
    );
    let results = [ok.clone(), judge(wide, planned(&[]))];
    let m = metrics(&suite.cases[1..], &results[..1], &BTreeSet::new());
    assert_eq!(m.plan_rate, Some(1.0));
    assert_eq!(m.routing.cases, 0);
}

const CONTEXT_SUITE: &str = r#"
mode: end-to-end
thresholds: { compaction_recall: 0.9 }
cases:
  - id: told
    tags: [reference]
    history: [{ user: "receipt R-1", answer: "R-1 is pending.", consulted: [support] }]
    turn: points for it?
    expect: { route: { agents: [rewards] }, told: { rewards: ["r-1", "FreshMart  Market"] } }
  - id: kept
    compact: true
    history: [{ user: "my dog Biscuit", answer: "Noted.", consulted: [shop] }]
    turn: thanks
    expect: { kept: ["Biscuit", "Trek"] }
  - id: down
    unavailable: [rewards]
    turn: points?
    expect: { acknowledged: [rewards] }
"#;

fn context_run(told: &str, summary: &str, answer: &str) -> (Vec<CaseResult>, Metrics) {
    let s = load_suite("evals/c.yaml", CONTEXT_SUITE, &specialists()).unwrap();
    let mut asked = seen(&["rewards"]);
    asked.args.insert(
        "rewards".into(),
        json!({"query": "points for it?", "prior_context": told}),
    );
    let compacted = Observation {
        summary: Some(summary.to_owned()),
        ..seen(&[])
    };
    let failed = Observation {
        answer: Some(answer.to_owned()),
        failed: vec![("rewards".into(), "Rewards".into())],
        ..seen(&["rewards"])
    };
    let results: Vec<CaseResult> = s
        .cases
        .iter()
        .zip([asked, compacted, failed])
        .map(|(c, o)| judge(c, o))
        .collect();
    let m = metrics(&s.cases, &results, &specialists());
    (results, m)
}

#[test]
fn context_expectations_count_fact_by_fact_and_the_gate_holds_each_figure() {
    let (results, m) = context_run(
        "The user said: receipt R-1 at FreshMart\n Market.",
        "Biscuit, Trek.",
        "Here is your balance… I couldn't get an answer from Rewards right now.",
    );
    // Case and white space do not matter; every fact was carried.
    assert!(
        results.iter().all(|r| r.verdict == Verdict::Passed),
        "{results:#?}"
    );
    let c = m.context;
    assert_eq!(
        (
            c.prior_context_recall,
            c.reference_resolution,
            c.compaction_recall,
            c.failure_acknowledged
        ),
        (Some(1.0), Some(1.0), Some(1.0), Some(1.0))
    );
    let s = load_suite("evals/c.yaml", CONTEXT_SUITE, &specialists()).unwrap();
    let baseline = SuiteBaseline::of(&results, &m);
    assert!(gate("c", &s.thresholds, Some(&baseline), &results, &m).is_empty());

    // One fact lost everywhere, and a failure passed over in silence.
    let (results, m) = context_run("receipt R-1", "Biscuit.", "Your balance is 1200 points.");
    assert_eq!(m.context.prior_context_recall, Some(0.5));
    assert_eq!(m.context.reference_resolution, Some(0.0));
    assert_eq!(m.context.compaction_recall, Some(0.5));
    assert_eq!(m.context.failure_acknowledged, Some(0.0));
    let reasons = gate("c", &s.thresholds, Some(&baseline), &results, &m);
    for expected in [
        "c: prior-context recall fell from 100.0% to 50.0%",
        "c: reference resolution fell from 100.0% to 0.0%",
        "c: compaction recall 50.0% is below its 90.0% floor",
        "c: failures acknowledged fell from 100.0% to 0.0%",
    ] {
        assert!(
            reasons.iter().any(|r| r == expected),
            "{expected}: {reasons:?}"
        );
    }
    // A figure the baseline has and the run does not is not a silent pass.
    let mut lost = m.clone();
    lost.context.compaction_recall = None;
    let reasons = gate(
        "c",
        &Thresholds::default(),
        Some(&baseline),
        &results,
        &lost,
    );
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("compaction recall was measured in the baseline")),
        "{reasons:?}"
    );
}

#[test]
fn an_acknowledgement_names_the_specialist_and_says_it_could_not_answer() {
    use crate::judge::acknowledges;
    for yes in [
        "I couldn't get an answer from Rewards right now.",
        "Rewards took too long to answer, so I left that part out.",
        "The rewards service is unavailable at the moment; try again later!",
    ] {
        assert!(acknowledges(yes, "rewards", "Rewards"), "{yes}");
    }
    for no in [
        "You have 1200 points in Rewards.",
        "I couldn't find a coupon. Rewards says 1200 points.",
        "",
    ] {
        assert!(!acknowledges(no, "rewards", "Rewards"), "{no}");
    }
}

#[test]
fn context_expectations_must_be_set_up_by_their_case() {
    let bad = r#"
cases:
  - id: a
    turn: hi
    expect: { kept: ["x"], acknowledged: [rewards] }
  - id: b
    compact: true
    unavailable: [nobody]
    turn: hi
    expect: { told: { ghost: ["x"] } }
"#;
    let problems = load_suite("evals/bad.yaml", bad, &specialists()).unwrap_err();
    let text: Vec<String> = problems.iter().map(ToString::to_string).collect();
    for expected in [
        "cases[0].expect.kept: needs `compact: true`",
        "cases[0].expect.acknowledged: only an answer can acknowledge a failure",
        "cases[0].expect.acknowledged: names a specialist that is not in `unavailable`",
        "cases[1].compact: needs a history to fold",
        "cases[1].unavailable: \"nobody\" is not a specialist",
        "cases[1].expect.told.ghost: \"ghost\" is not a specialist",
    ] {
        assert!(
            text.iter().any(|t| t.contains(expected)),
            "{expected}: {text:#?}"
        );
    }
}
