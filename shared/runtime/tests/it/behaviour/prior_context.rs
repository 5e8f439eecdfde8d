//! The prior context the runtime gives a specialist on a switch (D-18): what it carries,
//! what it never carries, and that the record keeps it.

use super::*;

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
