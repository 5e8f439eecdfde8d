//! Upstream conversation rows as the file holds them: a row damaged by hand reads as none
//! (the conversation starts afresh) and the next save mends it; rows survive reopening.

use baton_core::ports::upstream::UpstreamConversation;
use baton_local::embedded_store::{DATABASE_FILE, EmbeddedStore};
use baton_testkit::store::records::{principal, run_turn};

use super::TempStore;
use baton_core::ports::store::UpstreamStore as _;

fn conversation(id: &str, expires_ms: u64) -> UpstreamConversation {
    UpstreamConversation {
        agent_id: "support".into(),
        conversation_id: id.into(),
        expires_ms,
        pending: None,
    }
}

#[tokio::test]
async fn a_damaged_row_reads_as_none_and_the_next_save_mends_it() {
    let t = TempStore::new();
    let alice = principal("alice");
    run_turn(&t.store, &alice, "ep-1", true, "t-1", 1_000).await;
    t.store
        .save_upstream_conversation(&alice, "ep-1", &conversation("c-1", 9_000))
        .await
        .unwrap();
    let file = rusqlite::Connection::open(t.dir.path().join(DATABASE_FILE)).unwrap();
    // What SQLite's column types let through: text where a time belongs, a negative time,
    // bytes that are not UTF-8, a blob for the id.
    for damage in [
        "UPDATE upstream_conversations SET expires_ms = 'soon'",
        "UPDATE upstream_conversations SET expires_ms = -5",
        "UPDATE upstream_conversations SET expires_ms = 2.5",
        "UPDATE upstream_conversations SET conversation_id = CAST(X'FF00' AS TEXT)",
        "UPDATE upstream_conversations SET conversation_id = X'0001'",
        "UPDATE upstream_conversations SET pending = X'0001'",
    ] {
        file.execute_batch(&format!(
            "UPDATE upstream_conversations SET conversation_id = 'c-1', expires_ms = 9000, pending = NULL; {damage};"
        ))
        .unwrap();
        assert_eq!(
            t.store
                .upstream_conversation(&alice, "ep-1", "support")
                .await,
            Ok(None),
            "{damage}"
        );
    }

    let mended = conversation("c-2", 12_000);
    t.store
        .save_upstream_conversation(&alice, "ep-1", &mended)
        .await
        .unwrap();
    assert_eq!(
        t.store
            .upstream_conversation(&alice, "ep-1", "support")
            .await,
        Ok(Some(mended))
    );
}

#[tokio::test]
async fn conversations_survive_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let alice = principal("alice");
    let kept = conversation("c-1", 9_000);
    {
        let store = EmbeddedStore::open(dir.path()).unwrap();
        run_turn(&store, &alice, "ep-1", true, "t-1", 1_000).await;
        store
            .save_upstream_conversation(&alice, "ep-1", &kept)
            .await
            .unwrap();
    }
    let store = EmbeddedStore::open(dir.path()).unwrap();
    assert_eq!(
        store.upstream_conversation(&alice, "ep-1", "support").await,
        Ok(Some(kept))
    );
}
