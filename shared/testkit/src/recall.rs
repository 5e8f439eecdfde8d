//! The memory store conformance suite (D-43): one set of scenarios every
//! [`MemoryStore`] must pass, run by each adapter with one line:
//!
//! ```ignore
//! baton_testkit::memory_store_conformance!(MyMemoryStore::new());
//! ```
//!
//! As with the journal's suite, the expression is evaluated once per scenario and may be a
//! store or a [`MemoryFixture`] (a store with the folder it lives in).

// Test code: a failed expectation is meant to panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use baton_core::Principal;
use baton_core::ports::memory::{Both, MemoryStore, Status};
use baton_core::recall::embed::{Embedding, HashedWords};
use baton_core::recall::terms::query_terms;
use baton_core::recall::{
    DEFAULT_MAX_MEMORIES, Memory, MemoryFilter, MemoryKind, MemorySource, NewMemory, Origin, Saved,
};

/// What a scenario runs against: a memory store plus whatever must outlive it.
pub trait MemoryFixture {
    /// The store under test.
    fn memory_store(&self) -> &dyn MemoryStore;
}

impl<S: MemoryStore> MemoryFixture for S {
    fn memory_store(&self) -> &dyn MemoryStore {
        self
    }
}

/// Expands to one `#[tokio::test]` per scenario, each on a fresh store.
#[macro_export]
macro_rules! memory_store_conformance {
    ($make:expr) => {
        $crate::memory_store_conformance!(@scenarios $make;
            a_memory_reads_back_and_lists_newest_first,
            the_same_statement_saved_again_changes_nothing,
            a_contradicting_statement_replaces_and_is_kept_as_history,
            another_principal_finds_nothing,
            text_search_ranks_by_terms_and_filters,
            text_search_takes_any_terms_as_data,
            vector_search_is_nearest_first_and_by_one_model,
            forgetting_erases_the_item_its_history_and_its_indexes,
            forgetting_everything_erases_every_item_and_keeps_the_setting,
            past_the_cap_the_oldest_extracted_memory_goes_first,
            an_expired_memory_is_found_only_as_history,
            the_setting_round_trips,
            the_status_says_the_setting_and_whether_anything_is_held,
            both_searches_answer_as_each_alone,
        );
    };
    (@scenarios $make:expr; $($name:ident),* $(,)?) => {
        $(
            #[::tokio::test]
            async fn $name() {
                let fixture = $make;
                $crate::recall::$name(
                    $crate::recall::MemoryFixture::memory_store(&fixture),
                )
                .await;
            }
        )*
    };
}

const DAY: u64 = 86_400_000;
const T0: u64 = 1_795_305_600_000;

fn alice() -> Principal {
    Principal::new("alice").unwrap()
}

fn bob() -> Principal {
    Principal::new("bob").unwrap()
}

fn said(kind: MemoryKind, subject: &str, text: &str, at: u64) -> Memory {
    NewMemory {
        kind,
        subject: subject.to_owned(),
        text: text.to_owned(),
        origin: Origin::Said,
        source: MemorySource {
            episode_id: Some("ep_1".to_owned()),
            turn_id: Some(format!("t{at}")),
            specialist: None,
        },
        ttl_ms: None,
    }
    .build(at)
    .unwrap()
}

fn extracted(subject: &str, text: &str, at: u64) -> Memory {
    Memory {
        origin: Origin::Extracted,
        ..said(MemoryKind::Fact, subject, text, at)
    }
}

fn vector(text: &str) -> Embedding {
    HashedWords::default().embed(text)
}

async fn put(store: &dyn MemoryStore, who: &Principal, memory: &Memory) -> Saved {
    store
        .save(
            who,
            memory,
            Some(&vector(&memory.text)),
            DEFAULT_MAX_MEMORIES,
        )
        .await
        .unwrap()
}

fn texts(memories: &[Memory]) -> Vec<&str> {
    memories.iter().map(|m| m.text.as_str()).collect()
}

/// A memory reads back whole, and a list is newest first, limited.
pub async fn a_memory_reads_back_and_lists_newest_first(store: &dyn MemoryStore) {
    let dog = said(MemoryKind::Fact, "dog", "my dog is called Biscuit", T0);
    let milk = said(MemoryKind::Preference, "milk", "I prefer oat milk", T0 + 1);
    assert!(matches!(
        put(store, &alice(), &dog).await,
        Saved::New { replaced: None, .. }
    ));
    put(store, &alice(), &milk).await;
    assert_eq!(
        store.memory(&alice(), &dog.id).await.unwrap(),
        Some(dog.clone())
    );
    let listed = store
        .list(&alice(), &MemoryFilter::current(T0 + 2), 10)
        .await
        .unwrap();
    assert_eq!(listed, [milk.clone(), dog.clone()]);
    let one = store
        .list(&alice(), &MemoryFilter::current(T0 + 2), 1)
        .await
        .unwrap();
    assert_eq!(one, [milk]);
}

/// A save retried, or the same words saved again, leaves one memory.
pub async fn the_same_statement_saved_again_changes_nothing(store: &dyn MemoryStore) {
    let dog = said(MemoryKind::Fact, "dog", "my dog is called Biscuit", T0);
    put(store, &alice(), &dog).await;
    assert_eq!(
        put(store, &alice(), &dog).await,
        Saved::Unchanged(dog.id.clone())
    );
    let later = said(
        MemoryKind::Fact,
        "Dog",
        "My dog is called biscuit.",
        T0 + DAY,
    );
    assert_eq!(
        put(store, &alice(), &later).await,
        Saved::Unchanged(dog.id.clone())
    );
    let all = MemoryFilter {
        include_history: true,
        ..MemoryFilter::current(T0 + 2 * DAY)
    };
    assert_eq!(store.list(&alice(), &all, 10).await.unwrap(), [dog]);
}

/// A newer statement of a subject replaces the older, which stays as history only.
pub async fn a_contradicting_statement_replaces_and_is_kept_as_history(store: &dyn MemoryStore) {
    let fx2 = said(MemoryKind::Goal, "saving", "I'm saving for a Trek FX 2", T0);
    let fx3 = said(
        MemoryKind::Goal,
        "saving",
        "I'm saving for a Trek FX 3",
        T0 + DAY,
    );
    put(store, &alice(), &fx2).await;
    assert_eq!(
        put(store, &alice(), &fx3).await,
        Saved::New {
            replaced: Some(fx2.id.clone()),
            evicted: Vec::new()
        }
    );
    let now = T0 + 2 * DAY;
    let current = store
        .list(&alice(), &MemoryFilter::current(now), 10)
        .await
        .unwrap();
    assert_eq!(texts(&current), ["I'm saving for a Trek FX 3"]);
    let history = MemoryFilter {
        include_history: true,
        ..MemoryFilter::current(now)
    };
    let all = store.list(&alice(), &history, 10).await.unwrap();
    assert_eq!(all.len(), 2);
    let old = store.memory(&alice(), &fx2.id).await.unwrap().unwrap();
    assert_eq!(old.replaced_by, Some(fx3.id.clone()));
    let found = store
        .search_text(
            &alice(),
            &query_terms("Trek"),
            &MemoryFilter::current(now),
            10,
        )
        .await
        .unwrap();
    assert_eq!(
        found.len(),
        1,
        "the replaced statement is not a second truth"
    );
    assert_eq!(found[0].memory.id, fx3.id);
}

/// Another principal's memories are never found, read, listed or erased.
pub async fn another_principal_finds_nothing(store: &dyn MemoryStore) {
    let dog = said(MemoryKind::Fact, "dog", "my dog is called Biscuit", T0);
    put(store, &alice(), &dog).await;
    let now = MemoryFilter::current(T0 + 1);
    assert_eq!(store.memory(&bob(), &dog.id).await.unwrap(), None);
    assert!(store.list(&bob(), &now, 10).await.unwrap().is_empty());
    let terms = query_terms("dog Biscuit");
    assert!(
        store
            .search_text(&bob(), &terms, &now, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .search_vector(&bob(), &vector("dog"), &now, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(store.forget(&bob(), &dog.id).await.unwrap(), 0);
    assert_eq!(store.forget_all(&bob()).await.unwrap(), 0);
    assert!(store.memory(&alice(), &dog.id).await.unwrap().is_some());
    // Bob saying the same words has his own memory.
    put(store, &bob(), &dog).await;
    assert_eq!(store.forget(&bob(), &dog.id).await.unwrap(), 1);
    assert!(store.memory(&alice(), &dog.id).await.unwrap().is_some());
}

/// Text search finds memories holding the query's terms, the best match first, within
/// the filter.
pub async fn text_search_ranks_by_terms_and_filters(store: &dyn MemoryStore) {
    let dog = said(MemoryKind::Fact, "dog", "my dog is called Biscuit", T0);
    let walk = said(
        MemoryKind::Preference,
        "walks",
        "I walk the dog at 7am",
        T0 + 1,
    );
    let bike = said(MemoryKind::Goal, "bike", "I want a Trek bike", T0 + 2);
    for m in [&dog, &walk, &bike] {
        put(store, &alice(), m).await;
    }
    let now = MemoryFilter::current(T0 + 3);
    let hits = store
        .search_text(&alice(), &query_terms("what is my dog called?"), &now, 10)
        .await
        .unwrap();
    assert_eq!(hits.len(), 2, "{hits:?}");
    assert_eq!(hits[0].memory.id, dog.id, "two terms beat one");
    assert!(hits[0].score > hits[1].score);
    let goals = MemoryFilter {
        kinds: vec![MemoryKind::Goal],
        ..now.clone()
    };
    assert!(
        store
            .search_text(&alice(), &query_terms("dog"), &goals, 10)
            .await
            .unwrap()
            .is_empty()
    );
    let dogs = store
        .search_text(&alice(), &query_terms("dogs"), &now, 1)
        .await
        .unwrap();
    assert_eq!(
        dogs.len(),
        1,
        "a plural finds the singular, and the limit holds"
    );
    assert!(
        store
            .search_text(&alice(), &[], &now, 10)
            .await
            .unwrap()
            .is_empty()
    );
}

/// A query's terms are data: a store's own search syntax in them finds nothing and breaks
/// nothing.
pub async fn text_search_takes_any_terms_as_data(store: &dyn MemoryStore) {
    let dog = said(MemoryKind::Fact, "dog", "my dog is called Biscuit", T0);
    put(store, &alice(), &dog).await;
    let now = MemoryFilter::current(T0 + 1);
    let odd: Vec<String> = [
        "\"",
        "dog\" OR \"x",
        "NEAR(dog",
        "*",
        "^dog",
        "dog:",
        "-",
        "'",
        "(",
        ")",
        "AND",
        "%",
        "_",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    let hits = store.search_text(&alice(), &odd, &now, 10).await.unwrap();
    assert!(hits.len() <= 1, "{hits:?}");
}

/// Similarity search compares vectors of the query's model only, nearest first.
pub async fn vector_search_is_nearest_first_and_by_one_model(store: &dyn MemoryStore) {
    let dog = said(MemoryKind::Fact, "dog", "my dog is called Biscuit", T0);
    let bike = said(
        MemoryKind::Goal,
        "bike",
        "I'm saving for a Trek FX 2 bike",
        T0 + 1,
    );
    put(store, &alice(), &dog).await;
    put(store, &alice(), &bike).await;
    let other_model = said(
        MemoryKind::Fact,
        "cat",
        "my cat is called Biscuit too",
        T0 + 2,
    );
    let mut foreign = vector(&other_model.text);
    foreign.model = "another-model".to_owned();
    store
        .save(&alice(), &other_model, Some(&foreign), DEFAULT_MAX_MEMORIES)
        .await
        .unwrap();
    let no_vector = said(MemoryKind::Fact, "fish", "my fish is Bubbles", T0 + 3);
    store
        .save(&alice(), &no_vector, None, DEFAULT_MAX_MEMORIES)
        .await
        .unwrap();
    let now = MemoryFilter::current(T0 + 4);
    let hits = store
        .search_vector(&alice(), &vector("which bike am I saving for?"), &now, 10)
        .await
        .unwrap();
    assert_eq!(hits.len(), 2, "only the query model's vectors");
    assert_eq!(hits[0].memory.id, bike.id);
    assert!(hits[0].score > hits[1].score);
    assert!(hits[0].score <= 1.0001);
    let one = store
        .search_vector(&alice(), &vector("bike"), &now, 1)
        .await
        .unwrap();
    assert_eq!(one.len(), 1);
}

/// Forgetting a memory erases it, the history it replaced, and every index's copy: no
/// search finds its words afterwards.
pub async fn forgetting_erases_the_item_its_history_and_its_indexes(store: &dyn MemoryStore) {
    let old = said(MemoryKind::Fact, "address", "I live at 12 Elm Street", T0);
    let new = said(
        MemoryKind::Fact,
        "address",
        "I live at 40 Quay Road",
        T0 + 1,
    );
    let dog = said(MemoryKind::Fact, "dog", "my dog is called Biscuit", T0 + 2);
    for m in [&old, &new, &dog] {
        put(store, &alice(), m).await;
    }
    assert_eq!(store.forget(&alice(), &new.id).await.unwrap(), 2);
    assert_eq!(store.forget(&alice(), &new.id).await.unwrap(), 0);
    let all = MemoryFilter {
        include_history: true,
        ..MemoryFilter::current(T0 + 3)
    };
    assert_eq!(store.memory(&alice(), &old.id).await.unwrap(), None);
    assert_eq!(store.memory(&alice(), &new.id).await.unwrap(), None);
    for words in ["Elm Street", "Quay Road", "live"] {
        let hits = store
            .search_text(&alice(), &query_terms(words), &all, 10)
            .await
            .unwrap();
        assert!(hits.is_empty(), "{words}: {hits:?}");
    }
    let near = store
        .search_vector(&alice(), &vector("I live at 40 Quay Road"), &all, 10)
        .await
        .unwrap();
    assert_eq!(
        texts(&near.into_iter().map(|s| s.memory).collect::<Vec<_>>()),
        ["my dog is called Biscuit"]
    );
    assert_eq!(store.list(&alice(), &all, 10).await.unwrap(), [dog]);
}

/// Forgetting everything leaves nothing of the principal's memory but their setting.
pub async fn forgetting_everything_erases_every_item_and_keeps_the_setting(
    store: &dyn MemoryStore,
) {
    store.set_setting(&alice(), Some(true)).await.unwrap();
    for i in 0..5 {
        let m = said(
            MemoryKind::Fact,
            &format!("s{i}"),
            &format!("fact {i} Biscuit"),
            T0 + i,
        );
        put(store, &alice(), &m).await;
    }
    let bobs = said(MemoryKind::Fact, "dog", "my dog is Rex", T0);
    put(store, &bob(), &bobs).await;
    assert_eq!(store.forget_all(&alice()).await.unwrap(), 5);
    let all = MemoryFilter {
        include_history: true,
        ..MemoryFilter::current(T0 + 10)
    };
    assert!(store.list(&alice(), &all, 10).await.unwrap().is_empty());
    assert!(
        store
            .search_text(&alice(), &query_terms("Biscuit fact"), &all, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .search_vector(&alice(), &vector("fact Biscuit"), &all, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(store.setting(&alice()).await.unwrap(), Some(true));
    assert_eq!(store.list(&bob(), &all, 10).await.unwrap().len(), 1);
}

/// Past its cap a principal loses the oldest extracted memory first; a memory saved in
/// words goes only when no extracted one is left.
pub async fn past_the_cap_the_oldest_extracted_memory_goes_first(store: &dyn MemoryStore) {
    let kept = said(MemoryKind::Fact, "locker", "my locker code is 4417", T0);
    store
        .save(&alice(), &kept, Some(&vector(&kept.text)), 3)
        .await
        .unwrap();
    let a = extracted("a", "fact a", T0 + 1);
    let b = extracted("b", "fact b", T0 + 2);
    let c = extracted("c", "fact c", T0 + 3);
    for m in [&a, &b] {
        store.save(&alice(), m, None, 3).await.unwrap();
    }
    assert_eq!(
        store.save(&alice(), &c, None, 3).await.unwrap(),
        Saved::New {
            replaced: None,
            evicted: vec![a.id.clone()]
        }
    );
    assert_eq!(store.memory(&alice(), &a.id).await.unwrap(), None);
    assert!(store.memory(&alice(), &kept.id).await.unwrap().is_some());
    let current = store
        .list(&alice(), &MemoryFilter::current(T0 + 10), 10)
        .await
        .unwrap();
    assert_eq!(current.len(), 3);
}

/// A memory past its end is not current, and found only when history is asked for.
pub async fn an_expired_memory_is_found_only_as_history(store: &dyn MemoryStore) {
    let mut trip = said(MemoryKind::Fact, "trip", "I'm in Lisbon until Friday", T0);
    trip.expires_ms = Some(T0 + DAY);
    put(store, &alice(), &trip).await;
    let before = MemoryFilter::current(T0 + 1);
    let after = MemoryFilter::current(T0 + 2 * DAY);
    let terms = query_terms("Lisbon");
    assert_eq!(
        store
            .search_text(&alice(), &terms, &before, 10)
            .await
            .unwrap()
            .len(),
        1
    );
    assert!(
        store
            .search_text(&alice(), &terms, &after, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(store.list(&alice(), &after, 10).await.unwrap().is_empty());
    let history = MemoryFilter {
        include_history: true,
        ..after
    };
    assert_eq!(store.list(&alice(), &history, 10).await.unwrap(), [trip]);
}

/// The principal's own setting reads back, and clears.
pub async fn the_setting_round_trips(store: &dyn MemoryStore) {
    assert_eq!(store.setting(&alice()).await.unwrap(), None);
    store.set_setting(&alice(), Some(false)).await.unwrap();
    assert_eq!(store.setting(&alice()).await.unwrap(), Some(false));
    assert_eq!(store.setting(&bob()).await.unwrap(), None);
    store.set_setting(&alice(), None).await.unwrap();
    assert_eq!(store.setting(&alice()).await.unwrap(), None);
}

/// The status a turn reads first: the setting, and whether a current memory is held (an
/// expired or replaced one is not; another principal's is not; off, nothing is held).
pub async fn the_status_says_the_setting_and_whether_anything_is_held(store: &dyn MemoryStore) {
    let nothing = Status {
        setting: None,
        holds_any: false,
    };
    assert_eq!(store.status(&alice(), T0).await.unwrap(), nothing);
    let mut trip = said(MemoryKind::Fact, "trip", "I'm in Lisbon until Friday", T0);
    trip.expires_ms = Some(T0 + DAY);
    put(store, &alice(), &trip).await;
    assert!(store.status(&alice(), T0 + 1).await.unwrap().holds_any);
    assert!(
        !store
            .status(&alice(), T0 + 2 * DAY)
            .await
            .unwrap()
            .holds_any
    );
    assert_eq!(store.status(&bob(), T0 + 1).await.unwrap(), nothing);
    store.set_setting(&alice(), Some(true)).await.unwrap();
    assert_eq!(
        store.status(&alice(), T0 + 1).await.unwrap(),
        Status {
            setting: Some(true),
            holds_any: true
        }
    );
    store.set_setting(&alice(), Some(false)).await.unwrap();
    assert_eq!(
        store.status(&alice(), T0 + 1).await.unwrap(),
        Status {
            setting: Some(false),
            holds_any: false
        }
    );
}

/// Both searches at once answer what each does alone.
pub async fn both_searches_answer_as_each_alone(store: &dyn MemoryStore) {
    for (i, (subject, text)) in [
        ("dog", "my dog is called Biscuit"),
        ("bike", "I'm saving for a Trek FX 2 bike"),
        ("milk", "I prefer oat milk in my coffee"),
    ]
    .into_iter()
    .enumerate()
    {
        put(
            store,
            &alice(),
            &said(MemoryKind::Fact, subject, text, T0 + i as u64),
        )
        .await;
    }
    let filter = MemoryFilter::current(T0 + 10);
    let text = "what is my dog called?";
    let terms = query_terms(text);
    let query = vector(text);
    let both = store
        .search_both(&alice(), &terms, Some(&query), &filter, 2)
        .await
        .unwrap();
    let by_text = store
        .search_text(&alice(), &terms, &filter, 2)
        .await
        .unwrap();
    let by_vector = store
        .search_vector(&alice(), &query, &filter, 2)
        .await
        .unwrap();
    assert!(!by_text.is_empty() && !by_vector.is_empty());
    assert_eq!(both.by_text, by_text);
    assert_eq!(both.by_vector, by_vector);
    let words_only = store
        .search_both(&alice(), &terms, None, &filter, 2)
        .await
        .unwrap();
    assert_eq!(words_only.by_text, by_text);
    assert!(words_only.by_vector.is_empty());
    let other = store
        .search_both(&bob(), &terms, Some(&query), &filter, 2)
        .await
        .unwrap();
    assert_eq!(other, Both::default());
}
