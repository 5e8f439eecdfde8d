//! A turn that waits for the user's approval (D-36): it pauses with everything that does
//! not depend on the answer done, commits, and resumes from the episode's state; the
//! approved call runs once, a declined one never, and nothing finished runs again.

use baton_core::events::{Event, WireEvent};
use baton_core::interruption::{Answer, InterruptionKind, Reply};
use baton_core::trace::GuardName;
use baton_core::turn::{AgentStatus, TurnOutcome};
use baton_runtime::RejectionKind;
use futures::StreamExt;

use crate::support::*;
use baton_core::ports::store::TurnStore as _;

mod exactly_once;
mod questions;

/// A redemption that needs the user's approval above 500 points.
const REDEEM_TOOL: &str = r#"
  redeem:
    description: Redeem points for a reward.
    connector: { kind: test, payload: { redeemed: true } }
    schema: { type: object, properties: { points: { type: integer } }, required: [points], additionalProperties: false }
    approval: { when: "points > 500", action: "Redeem {points} points" }
"#;

fn setup() -> TestRegistry {
    TestRegistry {
        rewards_tool: "redeem",
        extra_tools: REDEEM_TOOL.into(),
        ..TestRegistry::default()
    }
}

/// Routes to shop and rewards; rewards redeems `points`.
fn script(points: u32) -> String {
    format!(
        r#"
agents:
  orchestrator:
    - when: {{ purpose: route }}
      tool_calls:
        - {{ name: ask_shop, args: {{ query: "coffee deals", intent_count: 2 }} }}
        - {{ name: ask_rewards, args: {{ query: "redeem my points", intent_count: 2 }} }}
    - when: {{ purpose: compose }}
      text: ["Here is everything."]
  shop:
    - when: {{ after_tool_results: false }}
      tool_calls: [{{ name: search_offers, args: {{ query: "coffee deals" }} }}]
    - when: {{ after_tool_results: true }}
      text: ["Roast coffee earns 500 points."]
  rewards:
    - {{ when: {{ after_tool_results: false }}, tool_calls: [{{ name: redeem, args: {{ points: {points} }} }}] }}
    - {{ when: {{ after_tool_results: true }}, text: ["The redemption went as the tool said."] }}
"#
    )
}

fn started(events: &[WireEvent], tool: &str) -> usize {
    events
        .iter()
        .filter(|e| matches!(&e.event, Event::ToolCallStart { tool: t, .. } if t == tool))
        .count()
}

fn interruption(events: &[WireEvent]) -> (String, String, serde_json::Value) {
    events
        .iter()
        .find_map(|e| match &e.event {
            Event::Interruption(asked) => {
                Some((asked.id.clone(), asked.action.clone(), asked.args.clone()))
            }
            _ => None,
        })
        .expect("an interruption event")
}

fn outcome(events: &[WireEvent]) -> TurnOutcome {
    match events.last().map(|e| &e.event) {
        Some(Event::Completed { outcome, .. }) => *outcome,
        other => panic!("the stream ended with {other:?}"),
    }
}

fn model_calls(rig: &Rig, agent: &str) -> usize {
    rig.model
        .requests()
        .iter()
        .filter(|r| &*r.agent_id == agent)
        .count()
}

async fn resume(rig: &Rig, episode: &str, turn: &str, id: &str, answer: Answer) -> Vec<WireEvent> {
    let reply = Reply {
        interruption_id: id.to_owned(),
        answer,
    };
    let stream = rig
        .runtime
        .run_turn(answering(alice(), episode, turn, reply))
        .await
        .unwrap();
    stream.collect().await
}

#[tokio::test(start_paused = true)]
async fn an_approved_call_runs_once_after_the_pause_and_finished_work_is_not_run_again() {
    let rig = make_rig(&setup(), &script(800));
    let (episode, paused) = run(
        &rig,
        request("coffee deals and redeem my points", None, "t1"),
    )
    .await;
    assert_eq!(outcome(&paused), TurnOutcome::AwaitingUser);
    assert_eq!(
        started(&paused, "redeem"),
        0,
        "nothing acted before approval"
    );
    assert_eq!(
        started(&paused, "search_offers"),
        1,
        "the other specialist finished"
    );
    let (id, action, args) = interruption(&paused);
    assert_eq!(action, "Redeem 800 points");
    assert_eq!(args, serde_json::json!({ "points": 800 }));
    assert!(answer(&paused).contains("Rewards needs your approval to go on: Redeem 800 points"));

    // The pause is committed, with its consulted record so far.
    let first = &rig.store.turns(&alice(), &episode, 1).await.unwrap()[0];
    assert_eq!(first.outcome, TurnOutcome::AwaitingUser);
    let rewards = first
        .consulted
        .iter()
        .find(|a| a.agent_id == "rewards")
        .unwrap();
    assert_eq!(rewards.status, AgentStatus::Awaiting);
    let (shop_calls, rewards_calls) = (model_calls(&rig, "shop"), model_calls(&rig, "rewards"));

    // A client that lost the stream finds the question again: replaying the paused turn
    // asks it again, and the episode shows it.
    let (_, replayed) = run(
        &rig,
        request("coffee deals and redeem my points", None, "t1"),
    )
    .await;
    assert_eq!(interruption(&replayed).0, id, "{replayed:#?}");
    let history = rig.runtime.history(&alice(), &episode).await.unwrap();
    let pending = history
        .pending
        .expect("the episode shows what it waits for");
    assert_eq!(
        (pending.turn_id.as_str(), pending.interruption.id.as_str()),
        ("t1", id.as_str())
    );
    assert_eq!(pending.interruption.action, "Redeem 800 points");

    let resumed = resume(&rig, &episode, "t1", &id, Answer::Approve).await;
    assert_eq!(outcome(&resumed), TurnOutcome::Answered, "{resumed:#?}");
    assert_eq!(started(&resumed, "redeem"), 1, "the approved call ran once");
    assert_eq!(started(&resumed, "search_offers"), 0);
    assert_eq!(
        model_calls(&rig, "shop"),
        shop_calls,
        "shop was not asked again"
    );
    assert_eq!(
        model_calls(&rig, "rewards"),
        rewards_calls + 1,
        "rewards went on from its call"
    );
    // It went on in the user's locale, though the reply named none.
    let went_on = rig
        .model
        .requests()
        .into_iter()
        .rfind(|r| &*r.agent_id == "rewards")
        .unwrap();
    let suffix = went_on.system.last().unwrap().text.to_string();
    assert!(suffix.contains("locale: en-US"), "{suffix}");
    assert!(answer(&resumed).contains("Here is everything."));
    // The record of the turn that completes covers the whole turn.
    let turns = rig.store.turns(&alice(), &episode, 2).await.unwrap();
    let last = &turns[1];
    let mut who: Vec<&str> = last.consulted.iter().map(|a| a.agent_id.as_str()).collect();
    who.sort_unstable();
    assert_eq!(who, ["rewards", "shop"]);
    assert!(last.consulted.iter().all(|a| a.status == AgentStatus::Ok));
    // Shop ran in the turn that waited, and is only carried here; rewards went on here.
    let carried: Vec<(&str, bool)> = last
        .consulted
        .iter()
        .map(|a| (a.agent_id.as_str(), a.carried))
        .collect();
    assert!(carried.contains(&("shop", true)), "{carried:?}");
    assert!(carried.contains(&("rewards", false)), "{carried:?}");
    assert_eq!(last.user_text, "Approved: Redeem 800 points");
    let approval = last
        .routing
        .guards
        .iter()
        .find(|g| g.guard == GuardName::ApprovalNeeded)
        .unwrap();
    assert!(approval.detail.contains("approve"), "{}", approval.detail);
    assert!(approval.detail.contains("sha256"), "{}", approval.detail);

    // The record says who answered what, over which arguments, through which face.
    let answered = last.routing.answered.as_ref().expect("the answer's record");
    assert_eq!(answered.answer, "approve");
    assert_eq!(answered.by, "alice");
    assert_eq!(answered.face, "api");
    assert_eq!(answered.waited_turn_id, "t1");
    assert_eq!(answered.agent_id, "rewards");
    assert_eq!(answered.args_sha256.len(), 64);
    // The act's audit child record holds the very arguments that were approved.
    let acted: Vec<_> = last
        .routing
        .tool_calls
        .iter()
        .filter(|c| c.agent_id == "rewards")
        .collect();
    assert_eq!(acted.len(), 1, "{acted:?}");
    assert_eq!(
        baton_core::interruption::args_sha256(&acted[0].params),
        answered.args_sha256
    );
    assert_eq!(acted[0].execution, 1);

    // Answered, it waits no more: neither the episode nor a replay of the pause asks.
    let history = rig.runtime.history(&alice(), &episode).await.unwrap();
    assert!(history.pending.is_none());
    let (_, replayed) = run(
        &rig,
        request("coffee deals and redeem my points", None, "t1"),
    )
    .await;
    assert!(
        !replayed
            .iter()
            .any(|e| matches!(e.event, Event::Interruption(_)))
    );

    // The same answer again replays the resumed turn: nothing runs twice.
    let calls_before = model_calls(&rig, "rewards");
    let again = resume(&rig, &episode, "t1", &id, Answer::Approve).await;
    assert_eq!(outcome(&again), TurnOutcome::Answered);
    assert_eq!(started(&again, "redeem"), 0);
    assert_eq!(model_calls(&rig, "rewards"), calls_before);
    assert_eq!(
        rig.store.turns(&alice(), &episode, 9).await.unwrap().len(),
        2
    );
    // Another answer to the answered question is refused.
    let reply = Reply {
        interruption_id: id.clone(),
        answer: Answer::Decline,
    };
    let other = rig
        .runtime
        .run_turn(answering(alice(), &episode, "t1", reply))
        .await;
    assert_eq!(other.err().map(|r| r.kind), Some(RejectionKind::Mismatch));
}

#[tokio::test(start_paused = true)]
async fn a_declined_call_never_runs_and_the_specialist_is_told() {
    let rig = make_rig(&setup(), &script(800));
    let (episode, paused) = run(
        &rig,
        request("coffee deals and redeem my points", None, "t1"),
    )
    .await;
    let (id, _, _) = interruption(&paused);
    let resumed = resume(&rig, &episode, "t1", &id, Answer::Decline).await;
    assert_eq!(outcome(&resumed), TurnOutcome::Answered);
    assert_eq!(started(&resumed, "redeem"), 0);
    let told = rig
        .model
        .requests()
        .into_iter()
        .rfind(|r| &*r.agent_id == "rewards")
        .unwrap();
    assert!(format!("{:?}", told.messages).contains("Declined by the user"));
    let last = &rig.store.turns(&alice(), &episode, 2).await.unwrap()[1];
    assert_eq!(last.user_text, "Declined: Redeem 800 points");
}

#[tokio::test(start_paused = true)]
async fn a_reply_that_does_not_fit_is_refused_in_plain_words() {
    let rig = make_rig(&setup(), &script(800));
    let (episode, paused) = run(
        &rig,
        request("coffee deals and redeem my points", None, "t1"),
    )
    .await;
    let (id, _, _) = interruption(&paused);
    let try_reply = |turn: &'static str, id: String, who: baton_core::Principal| {
        let reply = Reply {
            interruption_id: id,
            answer: Answer::Approve,
        };
        let episode = episode.clone();
        let runtime = &rig.runtime;
        async move {
            runtime
                .run_turn(answering(who, &episode, turn, reply))
                .await
        }
    };
    let wrong = try_reply("t1", "int_forged".into(), alice())
        .await
        .unwrap_err();
    assert_eq!(wrong.kind, RejectionKind::Invalid);
    assert!(
        wrong.message.contains("not the question"),
        "{}",
        wrong.message
    );
    let other_turn = try_reply("t9", id.clone(), alice()).await.unwrap_err();
    assert!(
        other_turn.message.contains("not waiting"),
        "{}",
        other_turn.message
    );
    let mallory = baton_core::Principal::new("mallory").unwrap();
    let theirs = try_reply("t1", id.clone(), mallory).await.unwrap_err();
    assert_eq!(theirs.kind, RejectionKind::NotFound);
    // Still waiting: the right reply still works.
    let resumed = resume(&rig, &episode, "t1", &id, Answer::Approve).await;
    assert_eq!(outcome(&resumed), TurnOutcome::Answered);
}

#[tokio::test(start_paused = true)]
async fn an_expired_question_counts_as_declined_and_a_new_message_sets_it_aside() {
    let config = baton_runtime::RuntimeConfig {
        interruption_ttl_ms: 0,
        ..Default::default()
    };
    let rig = make_rig_with(&setup(), &script(800), config);
    let (episode, paused) = run(
        &rig,
        request("coffee deals and redeem my points", None, "t1"),
    )
    .await;
    let (id, _, _) = interruption(&paused);
    let reply = Reply {
        interruption_id: id.clone(),
        answer: Answer::Approve,
    };
    let late = rig
        .runtime
        .run_turn(answering(alice(), &episode, "t1", reply))
        .await
        .unwrap_err();
    assert!(late.message.contains("expired"), "{}", late.message);
    // The next message finds it expired: the record counts it as declined.
    run(&rig, request("hello again", Some(&episode), "t2")).await;
    let next = &rig.store.turns(&alice(), &episode, 2).await.unwrap()[1];
    assert_eq!(next.routing.answered.as_ref().unwrap().answer, "expired");
    assert_eq!(started(&paused, "redeem"), 0);

    let rig = make_rig(&setup(), &script(800));
    let (episode, paused) = run(
        &rig,
        request("coffee deals and redeem my points", None, "t1"),
    )
    .await;
    let (id, _, _) = interruption(&paused);
    run(&rig, request("never mind, hello", Some(&episode), "t2")).await;
    let reply = Reply {
        interruption_id: id,
        answer: Answer::Approve,
    };
    let after = rig
        .runtime
        .run_turn(answering(alice(), &episode, "t1", reply))
        .await;
    assert!(after.is_err(), "a new message set the question aside");
}

#[tokio::test(start_paused = true)]
async fn under_the_rule_the_call_runs_at_once_and_on_the_direct_line_it_waits_too() {
    let rig = make_rig(&setup(), &script(100));
    let (_, events) = run(
        &rig,
        request("coffee deals and redeem my points", None, "t1"),
    )
    .await;
    assert_eq!(outcome(&events), TurnOutcome::Answered);
    assert_eq!(started(&events, "redeem"), 1);

    // On the Direct Line the turn waits too, and the specialist's answer, once it goes
    // on, is delivered word for word, never composed.
    let rig = make_rig(&setup(), &script(800));
    let (episode, paused) = run(&rig, request("#rewards redeem my points", None, "t1")).await;
    assert_eq!(started(&paused, "redeem"), 0);
    assert_eq!(outcome(&paused), TurnOutcome::AwaitingUser);
    let (id, _, _) = interruption(&paused);
    let resumed = resume(&rig, &episode, "t1", &id, Answer::Approve).await;
    assert_eq!(outcome(&resumed), TurnOutcome::Answered, "{resumed:#?}");
    assert_eq!(started(&resumed, "redeem"), 1);
    let delivered = resumed
        .iter()
        .find_map(|e| match &e.event {
            Event::DelegatedAnswer { agent, text, .. } if agent == "rewards" => Some(text.clone()),
            _ => None,
        })
        .expect("the specialist's own answer");
    assert_eq!(delivered, "The redemption went as the tool said.");
    assert!(
        !answer(&resumed).contains("Here is everything."),
        "not composed"
    );
    let last = &rig.store.turns(&alice(), &episode, 2).await.unwrap()[1];
    assert_eq!(last.direct.as_ref().unwrap().answers[0].text, delivered);
    assert_eq!(
        last.routing
            .direct_line
            .as_ref()
            .map(|d| d.agent_id.as_str()),
        Some("rewards")
    );
}

#[tokio::test(start_paused = true)]
async fn a_second_act_after_the_first_is_asked_about_in_turn() {
    let script = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      tool_calls: [{ name: ask_rewards, args: { query: "redeem twice", intent_count: 1 } }]
    - when: { purpose: compose }
      text: ["Both handled."]
  rewards:
    - { when: { after_tool_results: false }, tool_calls: [{ name: redeem, args: { points: 800 } }] }
    - { when: { after_tool_results: true }, once: true, tool_calls: [{ name: redeem, args: { points: 900 } }] }
    - { when: { after_tool_results: true }, text: ["Both redemptions went through."] }
"#;
    let rig = make_rig(&setup(), script);
    let (episode, paused) = run(&rig, request("redeem twice", None, "t1")).await;
    let (first, action, _) = interruption(&paused);
    assert_eq!(action, "Redeem 800 points");
    let again = resume(&rig, &episode, "t1", &first, Answer::Approve).await;
    assert_eq!(outcome(&again), TurnOutcome::AwaitingUser);
    assert_eq!(started(&again, "redeem"), 1);
    let (second, action, _) = interruption(&again);
    assert_eq!(action, "Redeem 900 points");
    // The turn to answer now is the one that asked.
    let waiting_turn = again[0].turn_id.to_string();
    let done = resume(&rig, &episode, &waiting_turn, &second, Answer::Approve).await;
    assert_eq!(outcome(&done), TurnOutcome::Answered);
    assert_eq!(started(&done, "redeem"), 1);
    assert!(answer(&done).contains("Both handled."));
}

/// A planner whose step runs `offers` and `redeemer` at once, then `after` on the
/// redemption; `redeemer` redeems 800 points.
const PLANNED: &str = r#"
agents:
  planner:
    - when: { purpose: route, after_tool_results: false }
      tool_calls: [{ name: get_skill, args: { domain: rewards } }]
    - when: { purpose: route, after_tool_results: true }
      tool_calls:
        - { name: dispatch_agent, args: { agent_id: offers, mission: "find coffee deals", skills: [shop.search_offers] } }
        - { name: dispatch_agent, args: { agent_id: redeemer, mission: "redeem 800 points", skills: [rewards.redeem] } }
        - { name: dispatch_agent, args: { agent_id: after, mission: "deals to spend the reward on", skills: [shop.search_offers], depends_on: [redeemer] } }
    - when: { purpose: compose }
      text: ["Here is the whole picture."]
  offers:
    - { when: { after_tool_results: false }, tool_calls: [{ name: use_skill, args: { skill: shop.search_offers, arguments: { query: coffee } } }] }
    - { when: { after_tool_results: true }, text: ["Roast coffee earns 500 points."] }
  redeemer:
    - { when: { after_tool_results: false }, tool_calls: [{ name: use_skill, args: { skill: rewards.redeem, arguments: { points: 800 } } }] }
    - { when: { after_tool_results: true }, text: ["Redeemed 800 points."] }
  after:
    - { when: { after_tool_results: false }, tool_calls: [{ name: use_skill, args: { skill: shop.search_offers, arguments: { query: gift } } }] }
    - { when: { after_tool_results: true }, text: ["Gift deals found."] }
"#;

/// The planner as the entry, over the redemption that needs approval.
fn planned_rig() -> Rig {
    let config = baton_runtime::RuntimeConfig {
        orchestrator: Some("planner".into()),
        ..Default::default()
    };
    make_rig_with(&setup().with_planner(""), PLANNED, config)
}

#[tokio::test(start_paused = true)]
async fn a_planned_sub_agent_waits_for_approval_and_the_plan_goes_on_from_there() {
    let rig = planned_rig();
    let (episode, paused) = run(
        &rig,
        request("coffee deals and redeem 800 points", None, "t1"),
    )
    .await;
    assert_eq!(outcome(&paused), TurnOutcome::AwaitingUser, "{paused:#?}");
    assert_eq!(
        started(&paused, "redeem"),
        0,
        "nothing acted before approval"
    );
    assert_eq!(
        started(&paused, "search_offers"),
        1,
        "its wave's other node finished"
    );
    let (id, action, _) = interruption(&paused);
    assert_eq!(action, "Redeem 800 points");
    let asked = paused
        .iter()
        .find_map(|e| match &e.event {
            Event::Interruption(asked) => Some((asked.agent.clone(), asked.tool.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!(asked, ("redeemer".to_owned(), "redeem".to_owned()));
    let offers_calls = model_calls(&rig, "offers");

    let resumed = resume(&rig, &episode, "t1", &id, Answer::Approve).await;
    assert_eq!(outcome(&resumed), TurnOutcome::Answered, "{resumed:#?}");
    assert_eq!(started(&resumed, "redeem"), 1, "the approved call ran once");
    assert_eq!(
        model_calls(&rig, "offers"),
        offers_calls,
        "offers did not run again"
    );
    assert_eq!(
        model_calls(&rig, "after"),
        2,
        "the dependent wave ran after the answer"
    );
    assert!(answer(&resumed).contains("Here is the whole picture."));
    let last = &rig.store.turns(&alice(), &episode, 2).await.unwrap()[1];
    let mut who: Vec<&str> = last.consulted.iter().map(|a| a.agent_id.as_str()).collect();
    who.sort_unstable();
    assert_eq!(who, ["after", "offers", "redeemer"]);
    let plan = last.routing.plan.as_ref().expect("the plan's record");
    assert_eq!(plan.outcomes.len(), 3, "{plan:?}");

    // Declined, the redemption never runs and the plan still answers.
    let rig = planned_rig();
    let (episode, paused) = run(
        &rig,
        request("coffee deals and redeem 800 points", None, "t1"),
    )
    .await;
    let (id, _, _) = interruption(&paused);
    let declined = resume(&rig, &episode, "t1", &id, Answer::Decline).await;
    assert_eq!(outcome(&declined), TurnOutcome::Answered, "{declined:#?}");
    assert_eq!(started(&declined, "redeem"), 0);
}
