//! The DynamoDB journal's upstream conversations: their items, TTLs, request costs and
//! damaged items.

use super::*;

// ---- upstream conversations ----

fn conversation(agent: &str, id: &str, expires_ms: u64) -> UpstreamConversation {
    UpstreamConversation {
        agent_id: agent.to_owned(),
        conversation_id: id.to_owned(),
        expires_ms,
        pending: None,
    }
}

#[tokio::test]
async fn an_upstream_conversation_is_its_own_item_with_a_ttl_in_seconds() {
    let j = journal().await;
    let alice = principal("alice");
    run_turn(&j.store, &alice, "ep-1", true, "t-1", 1_000).await;
    j.store
        .save_upstream_conversation(&alice, "ep-1", &conversation("support", "c-1", 3_301_500))
        .await
        .unwrap();

    let item = j.item("EP#ep-1", "UPSTREAM#support").await.unwrap();
    let mut names: Vec<&str> = item.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "conversation_id",
            "expires_at",
            "expires_ms",
            "owner",
            "pk",
            "sk"
        ]
    );
    assert_eq!(text(&item, "owner"), "alice");
    assert_eq!(text(&item, "conversation_id"), "c-1");
    assert_eq!(number(&item, "expires_ms"), 3_301_500);
    assert_eq!(
        number(&item, "expires_at"),
        3_302 + 86_400,
        "epoch seconds, rounded up, a day past the expiry"
    );
    // Beside the turns, never among them, and META untouched.
    assert_eq!(
        j.sort_keys("EP#ep-1").await,
        ["META", "TURN#0000000001", "UPSTREAM#support"]
    );
    assert_eq!(j.store.turns(&alice, "ep-1", 10).await.unwrap().len(), 1);
    assert_eq!(
        j.store
            .turns_after(&alice, "ep-1", 0, 10)
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(j.store.turns_after(&alice, "ep-1", 1, 10).await, Ok(vec![]));
    assert_eq!(j.store.episode(&alice, "ep-1").await.unwrap().version, 1);
}

#[tokio::test]
async fn upstream_reads_cost_one_request_and_two_only_without_an_item_of_the_callers() {
    let j = journal().await;
    let alice = principal("alice");
    let bob = principal("bob");
    run_turn(&j.store, &alice, "ep-1", true, "t-1", 1_000).await;
    let kept = conversation("support", "c-1", 9_000);
    j.store
        .save_upstream_conversation(&alice, "ep-1", &kept)
        .await
        .unwrap();

    let (read, sent) = j
        .counted(j.store.upstream_conversation(&alice, "ep-1", "support"))
        .await;
    assert_eq!(read, Ok(Some(kept)));
    assert_eq!(sent.to_string(), "DynamoDB.GetItem=1");

    // No item: META tells "none" from "not found".
    for (who, episode, agent, expected) in [
        (&alice, "ep-1", "billing", Ok(None)),
        (&bob, "ep-1", "support", Err(StoreError::NotFound)),
        (&alice, "ep-404", "support", Err(StoreError::NotFound)),
    ] {
        let (read, sent) = j
            .counted(j.store.upstream_conversation(who, episode, agent))
            .await;
        assert_eq!(read, expected, "{who} {episode} {agent}");
        assert_eq!(
            sent.to_string(),
            "DynamoDB.GetItem=2",
            "{who} {episode} {agent}"
        );
    }
}

#[tokio::test]
async fn an_upstream_refresh_is_one_put_and_a_first_save_adds_one_transaction() {
    let j = journal().await;
    let alice = principal("alice");
    let bob = principal("bob");
    run_turn(&j.store, &alice, "ep-1", true, "t-1", 1_000).await;

    let (saved, sent) = j
        .counted(j.store.save_upstream_conversation(
            &alice,
            "ep-1",
            &conversation("support", "c-1", 9_000),
        ))
        .await;
    assert_eq!(saved, Ok(()));
    assert_eq!(
        sent.to_string(),
        "DynamoDB.PutItem=1 DynamoDB.TransactWriteItems=1"
    );

    let refreshed = conversation("support", "c-1", 12_000);
    let (saved, sent) = j
        .counted(
            j.store
                .save_upstream_conversation(&alice, "ep-1", &refreshed),
        )
        .await;
    assert_eq!(saved, Ok(()));
    assert_eq!(sent.to_string(), "DynamoDB.PutItem=1");
    assert_eq!(
        j.store
            .upstream_conversation(&alice, "ep-1", "support")
            .await,
        Ok(Some(refreshed.clone()))
    );

    // Refused on another's or an unknown episode, at the same cost, and nothing written.
    let meta_before = j.item("EP#ep-1", "META").await;
    for (who, episode) in [(&bob, "ep-1"), (&alice, "ep-404"), (&bob, "ep-404")] {
        let (saved, sent) = j
            .counted(j.store.save_upstream_conversation(
                who,
                episode,
                &conversation("support", "stolen", 99_000),
            ))
            .await;
        assert_eq!(saved, Err(StoreError::NotFound), "{who} {episode}");
        assert_eq!(
            sent.to_string(),
            "DynamoDB.PutItem=1 DynamoDB.TransactWriteItems=1",
            "{who} {episode}"
        );
    }
    assert_eq!(
        j.store
            .upstream_conversation(&alice, "ep-1", "support")
            .await,
        Ok(Some(refreshed))
    );
    assert_eq!(j.item("EP#ep-1", "META").await, meta_before);
    assert!(j.item("EP#ep-404", "UPSTREAM#support").await.is_none());
    assert!(
        j.item("EP#ep-404", "META").await.is_none(),
        "no episode created"
    );
}

#[tokio::test]
async fn a_damaged_or_foreign_upstream_item_reads_as_none_and_the_next_save_replaces_it() {
    let j = journal().await;
    let alice = principal("alice");
    let bob = principal("bob");
    run_turn(&j.store, &alice, "ep-1", true, "t-1", 1_000).await;
    j.store
        .save_upstream_conversation(&alice, "ep-1", &conversation("support", "c-1", 9_000))
        .await
        .unwrap();
    let good = j.item("EP#ep-1", "UPSTREAM#support").await.unwrap();
    let with = |name: &str, value: Option<AttributeValue>| {
        let mut item = good.clone();
        match value {
            Some(value) => item.insert(name.to_owned(), value),
            None => item.remove(name),
        };
        item
    };

    // The caller's own item, damaged: one read, then none.
    for damaged in [
        with("expires_ms", Some(AttributeValue::S("soon".into()))),
        with("expires_ms", Some(AttributeValue::N("-5".into()))),
        with("expires_ms", None),
        with("conversation_id", Some(AttributeValue::N("7".into()))),
        with("conversation_id", None),
    ] {
        j.put_item(damaged.clone()).await;
        let (read, sent) = j
            .counted(j.store.upstream_conversation(&alice, "ep-1", "support"))
            .await;
        assert_eq!(read, Ok(None), "{damaged:?}");
        assert_eq!(sent.to_string(), "DynamoDB.GetItem=1", "{damaged:?}");
    }

    // An item in Alice's episode that is not hers: none for her (the episode is hers, one
    // more read says so). Bob still gets "not found" where the item does not claim him.
    for foreign in [
        with("owner", None),
        with("owner", Some(AttributeValue::S("bob".into()))),
    ] {
        j.put_item(foreign.clone()).await;
        let (read, sent) = j
            .counted(j.store.upstream_conversation(&alice, "ep-1", "support"))
            .await;
        assert_eq!(read, Ok(None), "{foreign:?}");
        assert_eq!(sent.to_string(), "DynamoDB.GetItem=2", "{foreign:?}");
    }
    j.put_item(with("owner", None)).await;
    assert_eq!(
        j.store.upstream_conversation(&bob, "ep-1", "support").await,
        Err(StoreError::NotFound)
    );
    assert_eq!(
        j.store
            .save_upstream_conversation(&bob, "ep-1", &conversation("support", "b-1", 99_000))
            .await,
        Err(StoreError::NotFound)
    );
    assert_eq!(
        j.item("EP#ep-1", "UPSTREAM#support").await,
        Some(with("owner", None))
    );

    // Alice's next save replaces it (her episode, checked by the transaction).
    let (saved, sent) = j
        .counted(j.store.save_upstream_conversation(
            &alice,
            "ep-1",
            &conversation("support", "c-2", 12_000),
        ))
        .await;
    assert_eq!(saved, Ok(()));
    assert_eq!(
        sent.to_string(),
        "DynamoDB.PutItem=1 DynamoDB.TransactWriteItems=1"
    );
    let item = j.item("EP#ep-1", "UPSTREAM#support").await.unwrap();
    assert_eq!(text(&item, "owner"), "alice");
    assert_eq!(
        j.store
            .upstream_conversation(&alice, "ep-1", "support")
            .await,
        Ok(Some(conversation("support", "c-2", 12_000)))
    );
}
