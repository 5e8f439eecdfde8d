//! A specialist's question (D-36): it reaches the user, and the answer reaches only the
//! asking specialist; on the Direct Line too; a new message sets it aside.

use super::*;

/// Rewards may ask the user; it asks which reward type, while shop answers.
fn asking() -> TestRegistry {
    TestRegistry::default().file(
        "agents/rewards.yaml",
        r#"
id: rewards
label: Rewards
description: Points balance and redemptions.
role: native
model: m1
tools: [points_balance]
prompt_blocks: [rewards-instructions]
asks_user: true
limits: { timeout_ms: 5000 }
"#,
    )
}

const ASKING_SCRIPT: &str = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      tool_calls:
        - { name: ask_shop, args: { query: "coffee deals", intent_count: 2 } }
        - { name: ask_rewards, args: { query: "redeem my points", intent_count: 2 } }
    - when: { purpose: compose }
      text: ["Here is everything."]
  shop:
    - when: { after_tool_results: false }
      tool_calls: [{ name: search_offers, args: { query: "coffee deals" } }]
    - when: { after_tool_results: true }
      text: ["Roast coffee earns 500 points."]
  rewards:
    - { when: { after_tool_results: false }, tool_calls: [{ name: ask_user, args: { question: "Gift card or cash out?" } }] }
    - { when: { after_tool_results: true }, text: ["Noted your choice."] }
"#;

#[tokio::test(start_paused = true)]
async fn a_specialists_question_reaches_the_user_and_the_answer_reaches_only_it() {
    let rig = make_rig(&asking(), ASKING_SCRIPT);
    let (episode, paused) = run(
        &rig,
        request("coffee deals and redeem my points", None, "t1"),
    )
    .await;
    assert_eq!(outcome(&paused), TurnOutcome::AwaitingUser);
    let asked = paused
        .iter()
        .find_map(|e| match &e.event {
            Event::Interruption(asked) => {
                Some((asked.id.clone(), asked.kind, asked.action.clone()))
            }
            _ => None,
        })
        .expect("an interruption");
    assert_eq!(asked.1, InterruptionKind::Question);
    assert_eq!(asked.2, "Gift card or cash out?");
    assert!(answer(&paused).contains("Rewards asks: Gift card or cash out?"));

    // A question takes words, not a yes.
    let yes = Reply {
        interruption_id: asked.0.clone(),
        answer: Answer::Approve,
    };
    let refused = rig
        .runtime
        .run_turn(answering(alice(), &episode, "t1", yes))
        .await
        .expect_err("refused");
    assert!(refused.message.contains("question"), "{}", refused.message);

    let shop_calls = model_calls(&rig, "shop");
    let resumed = resume(
        &rig,
        &episode,
        "t1",
        &asked.0,
        Answer::Text("a gift card, please".into()),
    )
    .await;
    assert_eq!(outcome(&resumed), TurnOutcome::Answered, "{resumed:#?}");
    assert!(answer(&resumed).contains("Here is everything."));
    assert_eq!(
        model_calls(&rig, "shop"),
        shop_calls,
        "shop was not asked again"
    );
    let requests = rig.model.requests();
    let told = requests
        .iter()
        .rfind(|r| &*r.agent_id == "rewards")
        .unwrap();
    assert!(format!("{:?}", told.messages).contains("a gift card, please"));
    assert!(
        requests
            .iter()
            .filter(|r| &*r.agent_id == "shop")
            .all(|r| !format!("{:?}", r.messages).contains("gift card, please")),
        "only the specialist that asked hears the answer"
    );
    let last = &rig.store.turns(&alice(), &episode, 2).await.unwrap()[1];
    assert_eq!(last.user_text, "a gift card, please");
    let answered = last.routing.answered.as_ref().unwrap();
    assert_eq!(answered.kind, InterruptionKind::Question);
    assert_eq!(answered.answer, "answered");
    assert!(last.consulted.iter().all(|a| a.status == AgentStatus::Ok));

    // The same words again replay the answered turn; other words are refused, as another
    // decision on an approval is.
    let again = resume(
        &rig,
        &episode,
        "t1",
        &asked.0,
        Answer::Text("a gift card, please".into()),
    )
    .await;
    assert_eq!(outcome(&again), TurnOutcome::Answered);
    assert_eq!(answer(&again), answer(&resumed));
    let other = Reply {
        interruption_id: asked.0.clone(),
        answer: Answer::Text("cash out instead".into()),
    };
    let other = rig
        .runtime
        .run_turn(answering(alice(), &episode, "t1", other))
        .await;
    assert_eq!(other.err().map(|r| r.kind), Some(RejectionKind::Mismatch));
}

#[tokio::test(start_paused = true)]
async fn on_the_direct_line_a_question_waits_and_the_answer_goes_to_the_specialist() {
    let rig = make_rig(&asking(), ASKING_SCRIPT);
    let (episode, paused) = run(&rig, request("#rewards redeem my points", None, "t1")).await;
    assert_eq!(outcome(&paused), TurnOutcome::AwaitingUser);
    let (id, action, _) = interruption(&paused);
    assert_eq!(action, "Gift card or cash out?");
    let resumed = resume(&rig, &episode, "t1", &id, Answer::Text("cash out".into())).await;
    assert_eq!(outcome(&resumed), TurnOutcome::Answered, "{resumed:#?}");
    let told = rig
        .model
        .requests()
        .into_iter()
        .rfind(|r| &*r.agent_id == "rewards")
        .unwrap();
    assert!(format!("{:?}", told.messages).contains("cash out"));
    assert!(resumed.iter().any(|e| matches!(
        &e.event,
        Event::DelegatedAnswer { agent, text, .. } if agent == "rewards" && text == "Noted your choice."
    )));
}

#[tokio::test(start_paused = true)]
async fn a_new_message_sets_a_question_aside_and_the_record_says_so() {
    let rig = make_rig(&asking(), ASKING_SCRIPT);
    let (episode, _) = run(
        &rig,
        request("coffee deals and redeem my points", None, "t1"),
    )
    .await;
    run(&rig, request("never mind", Some(&episode), "t2")).await;
    let last = &rig.store.turns(&alice(), &episode, 2).await.unwrap()[1];
    let answered = last.routing.answered.as_ref().unwrap();
    assert_eq!(answered.answer, "set_aside");
    assert_eq!(answered.waited_turn_id, "t1");
}

#[tokio::test(start_paused = true)]
async fn a_garbled_question_does_not_stop_the_turn_and_the_specialist_is_told() {
    let script = ASKING_SCRIPT.replace(
        "{ name: ask_user, args: { question: \"Gift card or cash out?\" } }",
        "{ name: ask_user, args: { question: \"   \" } }",
    );
    assert_ne!(script, ASKING_SCRIPT);
    let rig = make_rig(&asking(), &script);
    let (_, events) = run(
        &rig,
        request("coffee deals and redeem my points", None, "t1"),
    )
    .await;
    assert_eq!(outcome(&events), TurnOutcome::Answered, "{events:#?}");
    let told = rig
        .model
        .requests()
        .into_iter()
        .rfind(|r| &*r.agent_id == "rewards")
        .unwrap();
    assert!(format!("{:?}", told.messages).contains("Nothing was asked"));
}
