//! What one open store caches of long-term memory (D-43) is never read after another
//! store on the same folder (another process: `baton memory forget` beside `baton serve`)
//! changed it: saves, forgets, erasure and the setting are all seen at the next read.

use std::time::Duration;

use baton_core::Principal;
use baton_core::ports::memory::{MemoryStore, Status};
use baton_core::recall::embed::HashedWords;
use baton_core::recall::terms::query_terms;
use baton_core::recall::{
    DEFAULT_MAX_MEMORIES, MemoryFilter, MemoryKind, MemorySource, NewMemory, Origin,
};
use baton_local::embedded_store::MEMORY_STAMP_FILE;

use super::TempStore;

const T0: u64 = 1_795_305_600_000;

fn alice() -> Principal {
    Principal::new("alice").unwrap()
}

fn said(subject: &str, text: &str, at: u64) -> baton_core::recall::Memory {
    NewMemory {
        kind: MemoryKind::Fact,
        subject: subject.to_owned(),
        text: text.to_owned(),
        origin: Origin::Said,
        source: MemorySource::default(),
        ttl_ms: None,
    }
    .build(at)
    .unwrap()
}

async fn save(store: &dyn MemoryStore, subject: &str, text: &str, at: u64) {
    store
        .save(
            &alice(),
            &said(subject, text, at),
            Some(&HashedWords::default().embed(text)),
            DEFAULT_MAX_MEMORIES,
        )
        .await
        .unwrap();
}

/// A turn's two reads: the status, then both searches for `text`.
async fn turn_reads(store: &dyn MemoryStore, text: &str) -> (Status, Vec<String>) {
    let now = T0 + 1_000;
    let status = store.status(&alice(), now).await.unwrap();
    let both = store
        .search_both(
            &alice(),
            &query_terms(text),
            Some(&HashedWords::default().embed(text)),
            &MemoryFilter::current(now),
            5,
        )
        .await
        .unwrap();
    let mut found: Vec<String> = both
        .by_text
        .iter()
        .chain(&both.by_vector)
        .map(|s| s.memory.text.clone())
        .collect();
    found.sort();
    found.dedup();
    (status, found)
}

#[tokio::test]
async fn another_stores_writes_are_seen_at_the_next_read() {
    let serve = TempStore::new();
    let cli = serve.reopen(Duration::from_secs(5));
    let question = "what is my dog called?";

    // Nothing held: cached as such.
    let (status, found) = turn_reads(&serve.store, question).await;
    assert!(!status.holds_any && found.is_empty());

    // Saved by the other process: seen.
    save(&cli, "dog", "my dog is called Biscuit", T0).await;
    let (status, found) = turn_reads(&serve.store, question).await;
    assert!(status.holds_any);
    assert_eq!(found, ["my dog is called Biscuit"]);
    // Read again from what was cached: the same.
    assert_eq!(turn_reads(&serve.store, question).await.1, found);

    // Replaced there: the old statement is gone from here too.
    save(&cli, "dog", "my dog is called Pepper now", T0 + 1).await;
    assert_eq!(
        turn_reads(&serve.store, question).await.1,
        ["my dog is called Pepper now"]
    );

    // Erased there: nothing here, by words or by vector.
    cli.forget_all(&alice()).await.unwrap();
    let (status, found) = turn_reads(&serve.store, question).await;
    assert!(!status.holds_any);
    assert!(found.is_empty(), "{found:?}");

    // Turned off there: off here.
    save(&cli, "dog", "my dog is called Biscuit", T0 + 2).await;
    assert!(turn_reads(&serve.store, question).await.0.holds_any);
    cli.set_setting(&alice(), Some(false)).await.unwrap();
    assert_eq!(
        turn_reads(&serve.store, question).await.0,
        Status {
            setting: Some(false),
            holds_any: false
        }
    );
    assert!(serve.dir.path().join(MEMORY_STAMP_FILE).exists());
}

#[tokio::test]
async fn a_stale_cache_never_returns_an_erased_memory() {
    let serve = TempStore::new();
    let cli = serve.reopen(Duration::from_secs(5));
    save(&cli, "dog", "my dog is called Biscuit", T0).await;
    assert_eq!(
        turn_reads(&serve.store, "my dog Biscuit").await.1,
        ["my dog is called Biscuit"]
    );
    // The other process erases, and its stamp is lost (as if it could not be written):
    // the vector this store cached still finds the memory, which is read back from the
    // file and so not returned.
    let stamp = serve.dir.path().join(MEMORY_STAMP_FILE);
    let before = std::fs::read(&stamp).unwrap();
    cli.forget_all(&alice()).await.unwrap();
    std::fs::write(&stamp, &before).unwrap();
    let (status, found) = turn_reads(&serve.store, "my dog Biscuit").await;
    assert!(
        status.holds_any,
        "the status came from what was cached under the unchanged stamp"
    );
    assert!(found.is_empty(), "{found:?}");
}
