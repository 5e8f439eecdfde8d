//! The console's "What I remember" panel (D-43): what a turn said is listed once it is
//! kept, a later conversation's turn shows what it remembered beside who was consulted,
//! Forget erases a memory on the server too, and the checkbox is the user's own setting.

use super::*;

/// The texts the panel lists.
async fn listed(client: &Client) -> Value {
    eval(
        client,
        "[...document.querySelectorAll('#memories .memory-text')].map((n) => n.textContent)",
        Vec::new(),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_i_said_is_listed_remembered_in_a_new_conversation_and_forgotten_on_request() {
    with_console(|client, served| async move {
        open_console(&client, &served).await;
        until(
            &client,
            "the memory panel, empty",
            "document.body.dataset.memories === '0'",
        )
        .await;
        type_and_send(&client, "My dog is called Biscuit").await;
        assert_eq!(turn_finished(&client, 1).await, "completed");
        until(
            &client,
            "the memory to be listed",
            "document.body.dataset.memories === '1'",
        )
        .await;
        assert_eq!(listed(&client).await, json!(["My dog is called Biscuit"]));

        client
            .find(Locator::Css("#new-conversation"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        type_and_send(&client, "do you remember what my dog is called?").await;
        assert_eq!(turn_finished(&client, 1).await, "completed");
        let view = turn_view(&client, 0).await;
        let pills: Vec<&str> = view["pills"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect();
        assert!(pills.contains(&"Remembered: dog"), "{view:#}");
        assert_eq!(view["pills"][1]["agent"], "memory", "{view:#}");
        assert!(str_field(&view, "answer").contains("Biscuit"), "{view:#}");

        // Found and clicked in one step in the page: the panel is redrawn after each turn
        // (what the turn said may have been kept), which can replace a button found a
        // moment before.
        eval(
            &client,
            "document.querySelector('#memories .forget').click()",
            Vec::new(),
        )
        .await;
        until(
            &client,
            "the memory to be forgotten",
            "document.body.dataset.memories === '0'",
        )
        .await;
        let (status, kept) = served.get_json("/v1/memory?history=true");
        assert!(status.contains("200"), "{status}");
        assert_eq!(kept["memories"], json!([]), "{kept}");

        // Unticked, memory is off for this user, on the server.
        client
            .find(Locator::Css("#memory-on"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        let started = Instant::now();
        loop {
            let (_, setting) = served.get_json("/v1/memory");
            if setting["memory"] == "off" {
                assert_eq!(setting["own_setting"], true);
                break;
            }
            assert!(started.elapsed() < DEADLINE, "memory stayed on: {setting}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
}
