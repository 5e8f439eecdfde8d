//! Every store scenario and every memory store scenario, run against a fresh embedded store
//! in a temporary folder.

use super::TempStore;

baton_testkit::store_conformance!(TempStore::new());

impl baton_testkit::recall::MemoryFixture for TempStore {
    fn memory_store(&self) -> &dyn baton_core::ports::memory::MemoryStore {
        &self.store
    }
}

/// Every memory store scenario (D-43), likewise.
mod memory {
    use super::TempStore;

    baton_testkit::memory_store_conformance!(TempStore::new());
}

/// A flood of saves (10,000, as fast as they come) keeps a principal at their cap, the
/// newest kept, and leaves the store answering.
#[tokio::test]
async fn ten_thousand_saves_keep_a_principal_at_their_cap() {
    use baton_core::ports::memory::MemoryStore as _;
    use baton_core::recall::{MemoryFilter, MemoryKind, MemorySource, NewMemory, Origin};

    let fixture = TempStore::new();
    let alice = baton_core::Principal::new("alice").unwrap();
    let cap = 500;
    let t0 = 1_795_305_600_000u64;
    for i in 0..10_000u64 {
        let memory = NewMemory {
            kind: MemoryKind::Fact,
            subject: format!("thing {i}"),
            text: format!("remember thing number {i}"),
            origin: Origin::Extracted,
            source: MemorySource::default(),
            ttl_ms: None,
        }
        .build(t0 + i)
        .unwrap();
        fixture
            .store
            .save(&alice, &memory, None, cap)
            .await
            .unwrap();
    }
    let now = MemoryFilter::current(t0 + 10_000);
    let kept = fixture.store.list(&alice, &now, 1_000).await.unwrap();
    assert_eq!(kept.len(), cap);
    assert_eq!(kept[0].text, "remember thing number 9999");
    assert_eq!(kept[cap - 1].text, "remember thing number 9500");
    let found = fixture
        .store
        .search_text(&alice, &["9999".to_owned()], &now, 5)
        .await
        .unwrap();
    assert_eq!(found.len(), 1);
    let gone = fixture
        .store
        .search_text(&alice, &["42".to_owned()], &now, 5)
        .await
        .unwrap();
    assert!(gone.is_empty(), "an evicted memory is not found: {gone:?}");
}
