//! The web console when a turn waits for the user: an approval asked in place, a reload
//! that keeps it, a specialist's question, and an account to connect.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_is_asked_in_place_and_approving_resumes_the_turn() {
    let sandbox = Sandbox::new();
    let (ledger, registry) = crate::approvals::with_ledger(&sandbox);
    let model = sandbox.script(crate::approvals::SCRIPT);
    let registry = registry.to_str().unwrap().to_owned();
    let served = Arc::new(Served::start_in(sandbox, &registry, &["--model", &model]));
    let page = served.clone();
    with_browser(|client| async move {
        open_console(&client, &page).await;
        type_and_send(&client, "redeem 800 points for me").await;
        assert_eq!(turn_finished(&client, 1).await, "completed");
        let first = turn_view(&client, 0).await;
        assert_eq!(first["outcome"], "awaiting_user", "{first:#}");
        let asked = eval(
            &client,
            "(() => { const b = document.querySelector('.interruption'); return b && { action: b.querySelector('.interruption-action').textContent, args: b.querySelector('.interruption-args').textContent }; })()",
            Vec::new(),
        )
        .await;
        assert_eq!(asked["action"], "Redeem 800 points (gift_card)", "{asked:#}");
        assert!(str_field(&asked, "args").contains("800"), "{asked:#}");
        client
            .find(Locator::Css(".interruption .decide-approve"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        assert_eq!(turn_finished(&client, 2).await, "completed");
        let second = turn_view(&client, 1).await;
        assert_eq!(second["outcome"], "answered", "{second:#}");
        assert!(
            str_field(&second, "answer").contains("All done with your points."),
            "{second:#}"
        );
        let pills = second["pills"].as_array().unwrap();
        assert_eq!(pills[0]["agent"], "rewards", "{second:#}");
        assert_eq!(pills[0]["status"], "ok", "{second:#}");
        // The buttons are spent: one answer per question.
        let disabled = eval(
            &client,
            "[...document.querySelectorAll('.interruption button')].every((b) => b.disabled)",
            Vec::new(),
        )
        .await;
        assert_eq!(disabled, json!(true));
    })
    .await;
    assert_eq!(ledger.redemptions().len(), 1, "{:?}", ledger.redemptions());
}

/// A reload (or a lost stream) does not lose the conversation or what it waits on: the
/// page draws the stored turns again with the Approve box, and approving resumes the turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_keeps_the_conversation_and_its_pending_approval() {
    let sandbox = Sandbox::new();
    let (ledger, registry) = crate::approvals::with_ledger(&sandbox);
    let model = sandbox.script(crate::approvals::SCRIPT);
    let registry = registry.to_str().unwrap().to_owned();
    let served = Arc::new(Served::start_in(sandbox, &registry, &["--model", &model]));
    let page = served.clone();
    let ledger = Arc::new(ledger);
    let seen = ledger.clone();
    let nothing_redeemed = move || seen.redemptions().is_empty();
    with_browser(|client| async move {
        open_console(&client, &page).await;
        type_and_send(&client, "redeem 800 points for me").await;
        assert_eq!(turn_finished(&client, 1).await, "completed");
        let before = turn_view(&client, 0).await;
        client.refresh().await.unwrap();
        until(
            &client,
            "the conversation drawn again",
            "document.body.dataset.restored === '1'",
        )
        .await;
        let after = turn_view(&client, 0).await;
        assert_eq!(after["turn_id"], before["turn_id"], "{after:#}");
        assert_eq!(after["outcome"], "awaiting_user", "{after:#}");
        assert_eq!(after["answer"], before["answer"], "{after:#}");
        let asked = eval(
            &client,
            "(() => { const b = document.querySelector('.interruption'); return b && b.querySelector('.interruption-action').textContent; })()",
            Vec::new(),
        )
        .await;
        assert_eq!(asked, "Redeem 800 points (gift_card)");
        assert!(nothing_redeemed());
        client
            .find(Locator::Css(".interruption .decide-approve"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        assert_eq!(turn_finished(&client, 2).await, "completed");
        let second = turn_view(&client, 1).await;
        assert_eq!(second["outcome"], "answered", "{second:#}");
        assert!(
            str_field(&second, "answer").contains("All done with your points."),
            "{second:#}"
        );
    })
    .await;
    assert_eq!(ledger.redemptions().len(), 1, "{:?}", ledger.redemptions());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_specialists_question_gets_a_box_and_the_answer_resumes_the_turn() {
    const ASKING: &str = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      tool_calls: [{ name: ask_rewards, args: { query: "redeem my points", intent_count: 1 } }]
    - when: { purpose: compose }
      text: ["Your points go to a gift card."]
  rewards:
    - when: { after_tool_results: false }
      tool_calls: [{ name: ask_user, args: { question: "Gift card or cash out?" } }]
    - when: { after_tool_results: true }
      text: ["Gift card it is."]
"#;
    let sandbox = Sandbox::new();
    let model = sandbox.script(ASKING);
    let served = Arc::new(Served::start_in(sandbox, registry(), &["--model", &model]));
    let page = served.clone();
    with_browser(|client| async move {
        open_console(&client, &page).await;
        type_and_send(&client, "redeem my points").await;
        assert_eq!(turn_finished(&client, 1).await, "completed");
        let asked = eval(
            &client,
            "(() => { const b = document.querySelector('.interruption'); return b && { kind: b.dataset.kind, action: b.querySelector('.interruption-action').textContent, args: !!b.querySelector('.interruption-args') }; })()",
            Vec::new(),
        )
        .await;
        assert_eq!(asked["kind"], "question", "{asked:#}");
        assert_eq!(asked["action"], "Gift card or cash out?", "{asked:#}");
        assert_eq!(asked["args"], false, "{asked:#}");
        // An empty answer is not sent.
        let answer = client
            .find(Locator::Css(".interruption .decide-answer"))
            .await
            .unwrap();
        answer.click().await.unwrap();
        let box_ = client
            .find(Locator::Css(".interruption .interruption-answer"))
            .await
            .unwrap();
        assert_eq!(box_.prop("disabled").await.unwrap().as_deref(), Some("false"));
        box_.send_keys("gift card please").await.unwrap();
        answer.click().await.unwrap();
        assert_eq!(turn_finished(&client, 2).await, "completed");
        let second = turn_view(&client, 1).await;
        assert_eq!(second["outcome"], "answered", "{second:#}");
        assert!(
            str_field(&second, "answer").contains("Your points go to a gift card."),
            "{second:#}"
        );
        let pills = second["pills"].as_array().unwrap();
        assert_eq!(pills[0]["agent"], "rewards", "{second:#}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_signs_in_in_its_own_window_and_the_code_it_shows_goes_on_and_revoke_removes_the_link()
 {
    let sandbox = Sandbox::new();
    let partner = baton_tests::partner::Partner::start();
    let addr = format!("127.0.0.1:{}", free_port());
    let registry = partner.registry_copy(sandbox.path(), &addr);
    let model = sandbox.script(crate::account_links::SCRIPT);
    let registry = registry.to_str().unwrap().to_owned();
    let served = Arc::new(Served::start_at(
        sandbox,
        &registry,
        &["--model", &model],
        &addr,
    ));
    let page = served.clone();
    with_browser(|client| async move {
        open_console(&client, &page).await;
        until(
            &client,
            "the links panel",
            "document.body.dataset.links === '0'",
        )
        .await;
        type_and_send(&client, "what are my partner miles").await;
        assert_eq!(turn_finished(&client, 1).await, "completed");
        let first = turn_view(&client, 0).await;
        assert_eq!(first["outcome"], "awaiting_user", "{first:#}");
        let kind = eval(
            &client,
            "document.querySelector('.interruption').dataset.kind",
            Vec::new(),
        )
        .await;
        assert_eq!(kind, json!("account_link"));
        let console = client.window().await.unwrap();
        client
            .find(Locator::Css(".interruption .decide-connect"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        // The sign-in page opens in its own window: the user allows there.
        let deadline = std::time::Instant::now() + DEADLINE;
        let popup = loop {
            let windows = client.windows().await.unwrap();
            if let Some(w) = windows.into_iter().find(|w| *w != console) {
                break w;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no sign-in window opened"
            );
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        };
        client.switch_to_window(popup).await.unwrap();
        client
            .wait()
            .at_most(DEADLINE)
            .for_element(Locator::Id("allow"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        let title = client
            .wait()
            .at_most(DEADLINE)
            .for_element(Locator::Id("title"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert_eq!(title, "One step left");
        // The page shows the code that connects the account; the user types it in.
        let code = client
            .find(Locator::Id("code"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert_eq!(code.len(), 6, "{code}");
        client.close_window().await.unwrap();
        client.switch_to_window(console).await.unwrap();
        let input = client
            .find(Locator::Css(".interruption .interruption-code"))
            .await
            .unwrap();
        input.send_keys(&code).await.unwrap();
        client
            .find(Locator::Css(".interruption .decide-approve"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        assert_eq!(turn_finished(&client, 2).await, "completed");
        let second = turn_view(&client, 1).await;
        assert_eq!(second["outcome"], "answered", "{second:#}");
        assert!(
            str_field(&second, "answer").contains("Here is what Partner Air says."),
            "{second:#}"
        );
        assert_eq!(second["pills"][0]["status"], "ok", "{second:#}");
        until(
            &client,
            "the link listed",
            "document.body.dataset.links === '1'",
        )
        .await;
        client
            .find(Locator::Css("#links .revoke"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        until(
            &client,
            "the link revoked",
            "document.body.dataset.links === '0'",
        )
        .await;
    })
    .await;
    let (_, links) = served.get_json("/v1/links");
    assert_eq!(links["links"], json!([]), "{links}");
    assert_eq!(partner.stats()["calls"], 1);
}
