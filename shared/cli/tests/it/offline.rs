//! The shipped registry with the offline model: no network, deterministic.

use crate::support::*;

#[test]
fn a_mixed_request_consults_support_and_shop() {
    let sandbox = Sandbox::new();
    let run = sandbox.run(&[
        "chat",
        "--registry",
        REGISTRY,
        "--model",
        "offline",
        "my receipt didn't scan and find me coffee deals",
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    let footer = run.stdout.lines().last().unwrap();
    assert!(footer.starts_with("Consulted: "), "{footer:?}");
    assert!(footer.contains("Support"), "{footer:?}");
    assert!(footer.contains("Shopping"), "{footer:?}");
}

#[test]
fn offline_is_the_default_model() {
    let sandbox = Sandbox::new();
    let run = sandbox.run(&[
        "chat",
        "--json",
        "--registry",
        REGISTRY,
        "find me coffee deals",
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    let events = events(&run.stdout);
    let consulted = events
        .iter()
        .find(|e| e["type"] == "agents_consulted")
        .unwrap();
    assert_eq!(consulted["agents"][0]["agent_id"], "shop");
}
