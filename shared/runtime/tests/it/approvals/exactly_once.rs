//! An approved act happens once, under the key of the wait, and is reported truly when the
//! service had already acted; a resumed turn goes on from the calls it had spent.

use super::*;

/// A service that records every act's idempotency key, and answers a key it has seen as a
/// service that had already acted does (a 409 to the `http` connector).
#[derive(Default)]
struct KeyBook {
    keys: std::sync::Mutex<Vec<String>>,
    /// Every key counts as seen: the act happened before this process.
    acted_before: bool,
}

impl KeyBook {
    fn keys(&self) -> Vec<String> {
        self.keys.lock().unwrap().clone()
    }
}

#[async_trait::async_trait]
impl baton_core::ports::connector::Connector for KeyBook {
    async fn call(
        &self,
        request: baton_core::ports::connector::ConnectorRequest,
    ) -> Result<baton_core::ports::connector::Envelope, baton_core::ports::connector::ConnectorError>
    {
        let key = request.idempotency_key.as_deref().unwrap_or("").to_owned();
        let mut keys = self.keys.lock().unwrap();
        let seen = self.acted_before || keys.contains(&key);
        keys.push(key);
        if seen {
            return Err(baton_core::ports::connector::ConnectorError::AlreadyActed(
                "seen".into(),
            ));
        }
        Ok(baton_core::ports::connector::Envelope {
            status: baton_core::ports::connector::EnvelopeStatus::Ok,
            payload: serde_json::json!({ "redeemed": true }),
            partial: Vec::new(),
            principal: request.principal.to_string(),
            version: "1.0.0".into(),
            domain_type: "test".into(),
            enricher_id: request.tool_id.to_string(),
            cache_meta: Default::default(),
        })
    }
}

fn keyed_rig(book: std::sync::Arc<KeyBook>, turn_limits: &'static str) -> Rig {
    let setup = TestRegistry {
        rewards_tool: "redeem",
        extra_tools: REDEEM_TOOL.replace("kind: test, payload: { redeemed: true }", "kind: keyed"),
        turn_limits,
        ..TestRegistry::default()
    };
    make_rig_connected(
        &setup,
        &script(800),
        baton_runtime::RuntimeConfig::default(),
        &[("keyed", book)],
    )
}

#[tokio::test(start_paused = true)]
async fn a_yes_in_words_acts_under_the_key_of_the_wait_whatever_turn_id_carries_it() {
    let book = std::sync::Arc::new(KeyBook::default());
    let rig = keyed_rig(book.clone(), "");
    let (episode, paused) = run(
        &rig,
        request("coffee deals and redeem my points", None, "t1"),
    )
    .await;
    let (id, ..) = interruption(&paused);
    // A face that carries only the next message sends "yes" under a turn id of its own.
    let mut yes = request("yes", Some(&episode), "a-fresh-id");
    yes.reply_in_words = true;
    let (_, resumed) = run(&rig, yes).await;
    assert_eq!(outcome(&resumed), TurnOutcome::Answered, "{resumed:#?}");
    let expected = baton_core::ports::connector::idempotency_key(
        &episode,
        &baton_core::interruption::resume_turn_id("t1", &id),
        "rewards",
        "redeem",
        &serde_json::json!({ "points": 800 }),
    );
    assert_eq!(book.keys(), [expected]);
    // The approved call counts in the record of the turn that made it (D-20).
    let turns = rig.store.turns(&alice(), &episode, 2).await.unwrap();
    let rewards = turns[1]
        .consulted
        .iter()
        .find(|a| a.agent_id == "rewards")
        .unwrap();
    assert_eq!(rewards.tool_calls, 1, "{:?}", turns[1].consulted);
}

#[tokio::test(start_paused = true)]
async fn an_act_the_service_had_already_done_is_told_as_done_not_as_failed() {
    let book = std::sync::Arc::new(KeyBook {
        acted_before: true,
        ..KeyBook::default()
    });
    let rig = keyed_rig(book.clone(), "");
    let (episode, paused) = run(
        &rig,
        request("coffee deals and redeem my points", None, "t1"),
    )
    .await;
    let (id, ..) = interruption(&paused);
    let resumed = resume(&rig, &episode, "t1", &id, Answer::Approve).await;
    assert_eq!(outcome(&resumed), TurnOutcome::Answered, "{resumed:#?}");
    assert_eq!(book.keys().len(), 1);
    let ended = resumed
        .iter()
        .find_map(|e| match &e.event {
            Event::ToolResult { tool, status, .. } if tool == "redeem" => Some(*status),
            _ => None,
        })
        .expect("the redemption's end");
    assert_eq!(ended, baton_core::trace::ToolOutcome::Partial);
    // The specialist is told that the act happened, never that the tool is unavailable.
    let told = rig
        .model
        .requests()
        .into_iter()
        .rfind(|r| &*r.agent_id == "rewards")
        .unwrap();
    let told = serde_json::to_string(&told.messages).unwrap();
    assert!(told.contains("already carried out once"), "{told}");
    assert!(!told.contains("unavailable"), "{told}");
}

#[tokio::test(start_paused = true)]
async fn a_resumed_turn_goes_on_from_the_tool_calls_it_had_spent() {
    let book = std::sync::Arc::new(KeyBook::default());
    // One tool call a turn: shop's search spends it before the pause.
    let rig = keyed_rig(book.clone(), "turn_limits: { max_tool_calls: 1 }");
    let (episode, paused) = run(
        &rig,
        request("coffee deals and redeem my points", None, "t1"),
    )
    .await;
    assert_eq!(outcome(&paused), TurnOutcome::AwaitingUser, "{paused:#?}");
    assert_eq!(started(&paused, "search_offers"), 1);
    let (id, ..) = interruption(&paused);
    let resumed = resume(&rig, &episode, "t1", &id, Answer::Approve).await;
    assert_eq!(started(&resumed, "redeem"), 0, "{resumed:#?}");
    assert!(book.keys().is_empty());
    let turns = rig.store.turns(&alice(), &episode, 2).await.unwrap();
    assert_eq!(
        turns[1].routing.limit,
        Some(baton_core::trace::LimitHit::TurnToolCalls)
    );
}

#[tokio::test(start_paused = true)]
async fn a_reply_when_the_episodes_window_is_spent_keeps_the_wait_and_records_nothing() {
    let book = std::sync::Arc::new(KeyBook::default());
    // The paused turn's calls fill the episode's window.
    let rig = keyed_rig(book.clone(), "turn_limits: { episode_max_calls: 5 }");
    let (episode, paused) = run(
        &rig,
        request("coffee deals and redeem my points", None, "t1"),
    )
    .await;
    assert_eq!(outcome(&paused), TurnOutcome::AwaitingUser, "{paused:#?}");
    let (id, ..) = interruption(&paused);
    let resumed = resume(&rig, &episode, "t1", &id, Answer::Approve).await;
    assert_eq!(outcome(&resumed), TurnOutcome::Limited, "{resumed:#?}");
    assert!(answer(&resumed).is_empty());
    assert!(
        resumed.iter().any(
            |e| matches!(&e.event, Event::Error { message } if message.contains("still waits"))
        ),
        "{resumed:#?}"
    );
    assert!(book.keys().is_empty());
    // Nothing was recorded, and the wait is still there to be answered.
    assert_eq!(
        rig.store.turns(&alice(), &episode, 9).await.unwrap().len(),
        1
    );
    let meta = rig.store.episode(&alice(), &episode).await.unwrap();
    let waiting = meta.state.awaiting.expect("the wait is kept");
    assert_eq!(waiting.interruption.id, id);
}
