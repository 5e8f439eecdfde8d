//! Account link scenarios (D-37): a principal's sealed tokens per server, listed by
//! server, replaced, removed, and never another principal's.

use baton_core::ports::store::{AccountLink, Store};

use super::records::principal;

fn link(server: &str, sealed: &str, updated_ms: u64) -> AccountLink {
    AccountLink {
        server: server.to_owned(),
        sealed: sealed.to_owned(),
        updated_ms,
    }
}

/// Saved and read back, listed by server, and replaced by a later save.
pub async fn a_link_round_trips_is_listed_by_server_and_replaced(store: &dyn Store) {
    let alice = principal("alice");
    assert_eq!(
        store.link(&alice, "https://files.example/mcp").await,
        Ok(None)
    );
    assert_eq!(store.links(&alice).await, Ok(Vec::new()));
    let files = link("https://files.example/mcp", "sealed-1", 1_000);
    let cal = link("https://calendar.example/mcp", "sealed-2", 2_000);
    store.save_link(&alice, &files).await.unwrap();
    store.save_link(&alice, &cal).await.unwrap();
    assert_eq!(
        store.link(&alice, "https://files.example/mcp").await,
        Ok(Some(files.clone()))
    );
    assert_eq!(store.links(&alice).await, Ok(vec![cal.clone(), files]));
    let refreshed = link("https://files.example/mcp", "sealed-3", 3_000);
    store.save_link(&alice, &refreshed).await.unwrap();
    assert_eq!(
        store.link(&alice, "https://files.example/mcp").await,
        Ok(Some(refreshed.clone()))
    );
    assert_eq!(store.links(&alice).await, Ok(vec![cal, refreshed]));
}

/// Another principal neither reads, lists nor removes a link.
pub async fn another_principal_neither_reads_nor_removes_a_link(store: &dyn Store) {
    let (alice, bob) = (principal("alice"), principal("bob"));
    let files = link("https://files.example/mcp", "sealed-1", 1_000);
    store.save_link(&alice, &files).await.unwrap();
    assert_eq!(
        store.link(&bob, "https://files.example/mcp").await,
        Ok(None)
    );
    assert_eq!(store.links(&bob).await, Ok(Vec::new()));
    assert_eq!(
        store.delete_link(&bob, "https://files.example/mcp").await,
        Ok(false)
    );
    assert_eq!(
        store.link(&alice, "https://files.example/mcp").await,
        Ok(Some(files))
    );
}

/// Removed once (it was there), then there is nothing to remove.
pub async fn a_removed_link_is_gone(store: &dyn Store) {
    let alice = principal("alice");
    store
        .save_link(
            &alice,
            &link("https://files.example/mcp", "sealed-1", 1_000),
        )
        .await
        .unwrap();
    assert_eq!(
        store.delete_link(&alice, "https://files.example/mcp").await,
        Ok(true)
    );
    assert_eq!(
        store.link(&alice, "https://files.example/mcp").await,
        Ok(None)
    );
    assert_eq!(
        store.delete_link(&alice, "https://files.example/mcp").await,
        Ok(false)
    );
    assert_eq!(store.links(&alice).await, Ok(Vec::new()));
}
