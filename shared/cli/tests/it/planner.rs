//! The shipped planner (`--orchestrator planner`) on the offline model: lexical plans in
//! waves, the waves as `baton chat` shows them, and the plan in `baton replay`.

use serde_json::Value;

use crate::support::*;

fn planner(sandbox: &Sandbox, args: &[&str]) -> Run {
    let mut all = vec![
        "--orchestrator",
        "planner",
        "chat",
        "--registry",
        registry(),
    ];
    all.extend_from_slice(args);
    sandbox.run(&all)
}

fn plan_of(events: &[Value]) -> Vec<(String, u64, Vec<String>)> {
    let plan = events.iter().find(|e| e["type"] == "plan").expect("a plan");
    plan["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["skills"][0].as_str().unwrap().to_owned(),
                n["wave"].as_u64().unwrap(),
                n["depends_on"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|d| d.as_str().unwrap().to_owned())
                    .collect(),
            )
        })
        .collect()
}

#[test]
fn two_independent_requests_run_in_one_wave_and_a_then_waits_for_its_input() {
    let sandbox = Sandbox::new();
    let run = planner(
        &sandbox,
        &[
            "--json",
            "what's my points balance and find me coffee deals",
        ],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let evs = events(&run.stdout);
    assert_eq!(
        plan_of(&evs),
        [
            ("rewards.get_points_balance".to_owned(), 1, vec![]),
            ("shop.search_offers".to_owned(), 1, vec![]),
        ]
    );
    let run = planner(
        &sandbox,
        &[
            "--json",
            "show my receipts that didn't scan, then search the help centre for how to fix them",
        ],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let evs = events(&run.stdout);
    assert_eq!(
        plan_of(&evs),
        [
            ("support.lookup_receipts".to_owned(), 1, vec![]),
            (
                "support.search_help_articles".to_owned(),
                2,
                vec!["lookup_receipts".to_owned()]
            ),
        ]
    );
    let answer: String = evs
        .iter()
        .filter(|e| e["type"] == "text")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    // The help search was made with the words of the receipts it was handed.
    assert!(answer.contains("My receipt won't scan"), "{answer}");
    let consulted = evs
        .iter()
        .find(|e| e["type"] == "agents_consulted")
        .unwrap();
    assert_eq!(
        consulted["footer"],
        "Consulted: lookup_receipts, search_help_articles"
    );
}

#[test]
fn chat_shows_the_waves_and_replay_shows_the_plan() {
    let sandbox = Sandbox::new();
    let run = planner(
        &sandbox,
        &["show my receipts that didn't scan, then search the help centre for how to fix them"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout
            .starts_with("▤ Plan · wave 1: lookup_receipts · wave 2: search_help_articles\n"),
        "{run:?}"
    );
    assert!(
        run.stdout
            .contains("  ✓ lookup_receipts (wave 1) completed in "),
        "{run:?}"
    );
    let episode = run
        .stdout
        .lines()
        .last()
        .and_then(|l| l.rsplit(' ').next())
        .unwrap()
        .to_owned();
    let replay = sandbox.run(&["replay", "--registry", registry(), &episode]);
    assert_eq!(replay.code, 0, "{replay:?}");
    assert!(
        replay
            .stdout
            .contains("  plan: wave 1: lookup_receipts · wave 2: search_help_articles\n"),
        "{replay:?}"
    );
    assert!(
        replay.stdout.contains(
            "  node search_help_articles (wave 2, support.search_help_articles, after lookup_receipts): search the help centre for how to fix them → completed"
        ),
        "{replay:?}"
    );
}

#[test]
fn small_talk_is_answered_and_a_request_no_skill_matches_gets_a_plain_answer() {
    let sandbox = Sandbox::new();
    let run = planner(&sandbox, &["--json", "hello"]);
    assert_eq!(run.code, 0, "{run:?}");
    let evs = events(&run.stdout);
    assert!(!evs.iter().any(|e| e["type"] == "plan"));
    let run = planner(&sandbox, &["--json", "what's the weather on mars"]);
    assert_eq!(run.code, 0, "{run:?}");
    let evs = events(&run.stdout);
    let said: String = evs
        .iter()
        .filter(|e| e["type"] == "text")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert!(
        said.starts_with("I couldn't work out how to do that."),
        "{said}"
    );
}
