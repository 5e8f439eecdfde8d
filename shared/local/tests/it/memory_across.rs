//! Memory across conversations (D-43) on a laptop as shipped: the embedded store's file
//! keeps the memories, the offline model extracts them after each turn and the shipped
//! registry's memory specialist saves, recalls and forgets them in words.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use baton_core::Principal;
use baton_core::events::Event;
use baton_core::ports::clock::Clock;
use baton_core::ports::memory::HashedWordsEmbedder;
use baton_local::embedded_store::EmbeddedStore;
use baton_local::offline::OfflineModel;
use baton_runtime::registry_folder::{load_sources, read_sources};
use baton_runtime::{MemorySettings, Runtime, RuntimeConfig, TurnRequest};
use futures::StreamExt;

const DAY: u64 = 86_400_000;
const T0: u64 = 1_795_305_600_000;

struct Moving(AtomicU64);

impl Clock for Moving {
    fn now_ms(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

struct Laptop {
    runtime: Runtime,
    clock: Arc<Moving>,
    _dir: tempfile::TempDir,
}

fn laptop() -> Laptop {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(EmbeddedStore::open(dir.path()).unwrap());
    let root = baton_testkit::crate_dir().join("../registry");
    let connectors = baton_connectors::used_by(
        baton_connectors::default_connectors(&root),
        &load_sources(
            &read_sources(&root).unwrap(),
            &baton_connectors::default_connectors(&root),
            &Default::default(),
        )
        .unwrap(),
    );
    let registry = Arc::new(
        load_sources(
            &read_sources(&root).unwrap(),
            &connectors,
            &Default::default(),
        )
        .unwrap(),
    );
    let clock = Arc::new(Moving(AtomicU64::new(T0)));
    let runtime = Runtime::builder(registry.clone())
        .model_override(Arc::new(OfflineModel::new(registry)))
        .store(store.clone())
        .memory(store, Arc::new(HashedWordsEmbedder::default()))
        .connectors(connectors)
        .clock(clock.clone())
        .config(RuntimeConfig {
            memory: MemorySettings {
                on_by_default: true,
                extract_after_turn: true,
                ..MemorySettings::default()
            },
            ..RuntimeConfig::default()
        })
        .build()
        .unwrap();
    Laptop {
        runtime,
        clock,
        _dir: dir,
    }
}

fn me() -> Principal {
    Principal::new("me").unwrap()
}

/// One turn in a new conversation, to the end of its task (extraction included): who was
/// consulted, what was remembered, and the answer.
async fn say(laptop: &Laptop, text: &str, turn_id: &str) -> (Vec<String>, Vec<String>, String) {
    let request = TurnRequest {
        turn_id: Some(turn_id.to_owned()),
        locale: Some("en-US".into()),
        ..TurnRequest::new(me(), text)
    };
    let stream = laptop.runtime.run_turn(request).await.unwrap();
    let episode = stream.episode_id.clone();
    let events: Vec<Event> = stream.map(|e| e.event).collect().await;
    while laptop.runtime.is_running(&me(), &episode, turn_id) {
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    let (agents, memories) = events
        .iter()
        .find_map(|e| match e {
            Event::AgentsConsulted {
                agents, memories, ..
            } => Some((
                agents.iter().map(|a| a.agent_id.clone()).collect(),
                memories.iter().map(|m| m.subject.clone()).collect(),
            )),
            _ => None,
        })
        .unwrap();
    let text = events
        .iter()
        .filter_map(|e| match e {
            Event::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    (agents, memories, text)
}

#[tokio::test]
async fn facts_said_last_week_answer_a_question_in_a_new_conversation() {
    let laptop = laptop();
    say(
        &laptop,
        "My dog is called Biscuit and I'm saving for a Trek FX 2",
        "t1",
    )
    .await;
    let kept = laptop
        .runtime
        .memory()
        .list(&me(), &[], false, 10)
        .await
        .unwrap();
    let texts: Vec<&str> = kept.iter().map(|m| m.text.as_str()).collect();
    assert!(texts.contains(&"My dog is called Biscuit"), "{texts:?}");
    assert!(texts.contains(&"I'm saving for a Trek FX 2"), "{texts:?}");

    laptop.clock.0.store(T0 + 7 * DAY, Ordering::SeqCst);
    let (agents, remembered, answer) = say(&laptop, "what is my dog called?", "t2").await;
    assert_eq!(agents, ["memory"], "{answer}");
    assert_eq!(remembered, ["dog"]);
    assert!(answer.contains("Biscuit"), "{answer}");
    assert!(
        answer.contains("2026-11-22"),
        "says when it was said: {answer}"
    );
}

#[tokio::test]
async fn saying_remember_saves_a_newer_fact_replaces_and_forget_erases() {
    let laptop = laptop();
    let (agents, _, answer) = say(&laptop, "Remember that my locker code is 4417", "t1").await;
    assert_eq!(agents, ["memory"], "{answer}");
    let kept = laptop
        .runtime
        .memory()
        .list(&me(), &[], false, 10)
        .await
        .unwrap();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(kept[0].text, "my locker code is 4417");
    assert_eq!(kept[0].subject, "locker code");

    laptop.clock.0.store(T0 + DAY, Ordering::SeqCst);
    say(&laptop, "I'm saving for a Trek FX 2", "t2").await;
    laptop.clock.0.store(T0 + 2 * DAY, Ordering::SeqCst);
    say(&laptop, "I'm saving for a Trek FX 3 now", "t3").await;
    let goals = laptop
        .runtime
        .memory()
        .list(&me(), &[baton_core::recall::MemoryKind::Goal], false, 10)
        .await
        .unwrap();
    assert_eq!(goals.len(), 1, "{goals:?}");
    assert_eq!(goals[0].text, "I'm saving for a Trek FX 3 now");

    let (agents, _, answer) = say(&laptop, "forget my locker code", "t4").await;
    assert_eq!(agents, ["memory"], "{answer}");
    let found = laptop
        .runtime
        .memory()
        .search(&me(), "locker code 4417", &[], 5)
        .await
        .unwrap();
    assert!(
        found.iter().all(|f| !f.memory.text.contains("4417")),
        "{found:?}"
    );
}
