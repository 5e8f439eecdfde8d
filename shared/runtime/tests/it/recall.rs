//! Memory across conversations (D-43) over the public API: what a user says in one
//! episode is extracted after the turn, found in a new episode days later and given to the
//! orchestrator, named in the consulted record; a contradicted fact is replaced; personal
//! data is never extracted; off means nothing is read or written; another principal sees
//! nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use baton_core::events::{Event, WireEvent};
use baton_core::ports::clock::Clock;
use baton_core::ports::memory::HashedWordsEmbedder;
use baton_core::ports::model::CallPurpose;
use baton_core::recall::{MemoryKind, MemorySource};
use baton_inproc::scripted::ScriptedModel;
use baton_inproc::{HeapMemory, HeapStore};
use baton_runtime::metrics::LocalMetrics;
use baton_runtime::{MemoryFailure, MemorySettings, Runtime, RuntimeConfig};

use crate::support::*;

const DAY: u64 = 86_400_000;
const T0: u64 = 1_795_305_600_000;

/// The orchestrator's extraction answers name what the user said; routing asks shop.
const SCRIPT: &str = r#"
agents:
  orchestrator:
    - when: { purpose: remember, user_contains: "Biscuit" }
      text: ['{"memories": [{"kind": "fact", "subject": "dog", "text": "my dog is called Biscuit"}, {"kind": "goal", "subject": "saving", "text": "I am saving for a Trek FX 2"}]}']
    - when: { purpose: remember, user_contains: "FX 3" }
      text: ['{"memories": [{"kind": "goal", "subject": "saving", "text": "I am saving for a Trek FX 3 now"}]}']
    - when: { purpose: remember, user_contains: "4111" }
      text: ['{"memories": [{"kind": "fact", "subject": "card", "text": "my card is 4111 1111 1111 1111"}]}']
    - when: { purpose: remember, user_contains: "R-10234" }
      text: ['{"memories": [{"kind": "finding", "subject": "receipt R-10234", "text": "Receipt R-10234 was rejected: the photo was blurry", "expires_in_days": 90}]}']
    - when: { purpose: remember }
      text: ['{"memories": []}']
    - when: { purpose: route, user_contains: "rejected" }
      tool_calls: [{ name: ask_support, args: { query: "why was my receipt rejected", intent_count: 1 } }]
    - when: { purpose: route, user_contains: "for my dog" }
      tool_calls: [{ name: ask_shop, args: { query: "treats for Biscuit", intent_count: 1 } }]
    - when: { purpose: compose, user_contains: "for my dog" }
      text: ["Biscuit would like these: roast coffee earns 500 points."]
    - when: { purpose: route }
      tool_calls: [{ name: ask_shop, args: { query: "deals", intent_count: 1 } }]
    - when: { purpose: compose }
      text: ["Done."]
  shop:
    - text: ["Roast coffee earns 500 points."]
  support:
    - text: ["Receipt R-10234 was rejected: the photo was blurry."]
"#;

/// A clock the test moves.
struct Moving(AtomicU64);

impl Clock for Moving {
    fn now_ms(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

struct MemoryRig {
    runtime: Runtime,
    model: Arc<ScriptedModel>,
    clock: Arc<Moving>,
    metrics: Arc<LocalMetrics>,
}

fn rig(on_by_default: bool) -> MemoryRig {
    let model = Arc::new(ScriptedModel::from_yaml(SCRIPT).unwrap().recording());
    let clock = Arc::new(Moving(AtomicU64::new(T0)));
    let metrics = Arc::new(LocalMetrics::default());
    let config = RuntimeConfig {
        memory: MemorySettings {
            on_by_default,
            extract_after_turn: true,
            ..MemorySettings::default()
        },
        ..RuntimeConfig::default()
    };
    let runtime = Runtime::builder(Arc::new(TestRegistry::default().load().unwrap()))
        .model_override(model.clone())
        .store(Arc::new(HeapStore::new()))
        .memory(
            Arc::new(HeapMemory::new()),
            Arc::new(HashedWordsEmbedder::default()),
        )
        .connector("test", Arc::new(ConfiguredConnector))
        .clock(clock.clone())
        .metrics(metrics.clone())
        .config(config)
        .build()
        .unwrap();
    MemoryRig {
        runtime,
        model,
        clock,
        metrics,
    }
}

/// Runs a turn and waits for its task to end (extraction runs after the stream closes).
async fn turn(rig: &MemoryRig, text: &str, turn_id: &str) -> (String, Vec<WireEvent>) {
    let stream = rig
        .runtime
        .run_turn(request(text, None, turn_id))
        .await
        .unwrap();
    let episode = stream.episode_id.clone();
    let events: Vec<WireEvent> = futures::StreamExt::collect(stream).await;
    while rig.runtime.is_running(&alice(), &episode, turn_id) {
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    (episode, events)
}

/// Everything alice's memory holds, history included.
async fn everything(rig: &MemoryRig) -> Vec<baton_core::recall::Memory> {
    rig.runtime
        .memory()
        .list(&alice(), &[], true, 10)
        .await
        .unwrap()
}

/// Saves a fact alice said in words; the memory.
async fn said(rig: &MemoryRig, subject: &str, text: &str) -> baton_core::recall::Memory {
    rig.runtime
        .memory()
        .remember(
            &alice(),
            MemoryKind::Fact,
            subject,
            text,
            MemorySource::default(),
        )
        .await
        .unwrap()
        .0
}

fn route_prompts(rig: &MemoryRig) -> Vec<String> {
    rig.model
        .requests()
        .iter()
        .filter(|r| r.purpose == CallPurpose::Route)
        .map(|r| r.system.iter().map(|b| b.text.to_string()).collect())
        .collect()
}

fn consulted(events: &[WireEvent]) -> (Vec<String>, String) {
    events
        .iter()
        .find_map(|e| match &e.event {
            Event::AgentsConsulted {
                memories, footer, ..
            } => Some((
                memories.iter().map(|m| m.subject.clone()).collect(),
                footer.clone(),
            )),
            _ => None,
        })
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn what_was_said_in_one_episode_reaches_another_days_later_and_is_named() {
    let rig = rig(true);
    let (first, events) = turn(
        &rig,
        "My dog is called Biscuit and I'm saving for a Trek FX 2",
        "t1",
    )
    .await;
    assert_eq!(
        consulted(&events).0,
        Vec::<String>::new(),
        "nothing known yet"
    );
    let kept = rig
        .runtime
        .memory()
        .list(&alice(), &[], false, 10)
        .await
        .unwrap();
    let mut texts: Vec<&str> = kept.iter().map(|m| m.text.as_str()).collect();
    texts.sort_unstable();
    assert_eq!(
        texts,
        ["I am saving for a Trek FX 2", "my dog is called Biscuit"]
    );
    assert_eq!(kept[0].source.episode_id.as_deref(), Some(first.as_str()));
    assert_eq!(
        rig.metrics
            .counter(baton_runtime::recall::MEMORY_EXTRACTIONS_TOTAL),
        1
    );

    rig.clock.0.store(T0 + 3 * DAY, Ordering::SeqCst);
    let (second, events) = turn(&rig, "any treats for my dog?", "t2").await;
    assert_ne!(second, first, "a new conversation");
    let prompt = route_prompts(&rig).pop().unwrap();
    assert!(prompt.contains("<memory>"), "{prompt}");
    assert!(
        prompt.contains(r#"dog (fact, said 2026-11-22): "my dog is called Biscuit""#),
        "{prompt}"
    );
    let requests = rig.model.requests();
    let cached = &requests.last().unwrap().system[0];
    assert!(
        !cached.text.contains("Biscuit"),
        "memories stay after the cache point"
    );
    let (memories, footer) = consulted(&events);
    assert_eq!(memories, ["dog"]);
    assert_eq!(footer, "Consulted: Shop · Remembered: dog");
    assert!(answer(&events).starts_with("Biscuit would like these"));
    let shop = rig
        .model
        .requests()
        .into_iter()
        .find(|r| r.purpose == CallPurpose::Agent && &*r.agent_id == "shop")
        .unwrap();
    let shop_prompt: String = shop.system.iter().map(|b| b.text.to_string()).collect();
    assert!(
        !shop_prompt.contains("<memory>"),
        "a specialist gets its mission, not the user's memory"
    );
}

#[tokio::test(start_paused = true)]
async fn a_contradicted_fact_is_replaced_and_kept_as_history() {
    let rig = rig(true);
    turn(
        &rig,
        "My dog is called Biscuit and I'm saving for a Trek FX 2",
        "t1",
    )
    .await;
    rig.clock.0.store(T0 + DAY, Ordering::SeqCst);
    turn(&rig, "I'm saving for a Trek FX 3 now", "t2").await;
    let current = rig
        .runtime
        .memory()
        .list(&alice(), &[MemoryKind::Goal], false, 10)
        .await
        .unwrap();
    assert_eq!(current.len(), 1);
    assert_eq!(current[0].text, "I am saving for a Trek FX 3 now");
    let all = rig
        .runtime
        .memory()
        .list(&alice(), &[MemoryKind::Goal], true, 10)
        .await
        .unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(all[1].replaced_by.as_ref(), Some(&current[0].id));
    let found = rig
        .runtime
        .memory()
        .search(&alice(), "which bike am I saving for", &[], 5)
        .await
        .unwrap();
    assert_eq!(found[0].memory.text, "I am saving for a Trek FX 3 now");
    assert!(found.iter().all(|f| !f.memory.text.contains("FX 2")));
}

#[tokio::test(start_paused = true)]
async fn personal_data_is_never_extracted_but_a_saved_one_is_masked_in_the_prompt() {
    let rig = rig(true);
    turn(&rig, "my card is 4111 1111 1111 1111", "t1").await;
    assert!(everything(&rig).await.is_empty());
    said(&rig, "card", "my card is 4111 1111 1111 1111").await;
    turn(&rig, "which card do I use for deals?", "t2").await;
    let prompt = route_prompts(&rig).pop().unwrap();
    assert!(prompt.contains("[card number]"), "{prompt}");
    assert!(!prompt.contains("4111"), "{prompt}");
}

#[tokio::test(start_paused = true)]
async fn memory_off_reads_and_extracts_nothing() {
    let rig = rig(false);
    turn(&rig, "My dog is called Biscuit", "t1").await;
    assert!(everything(&rig).await.is_empty());
    assert!(
        rig.model
            .requests()
            .iter()
            .all(|r| r.purpose != CallPurpose::Remember)
    );
    said(&rig, "dog", "my dog is called Biscuit").await;
    turn(&rig, "what is my dog called?", "t2").await;
    assert!(!route_prompts(&rig).pop().unwrap().contains("<memory>"));
    // The principal's own setting wins over the deployment's.
    rig.runtime
        .memory()
        .set_setting(&alice(), Some(true))
        .await
        .unwrap();
    assert_eq!(
        rig.runtime.memory().setting(&alice()).await.unwrap(),
        (true, true)
    );
    turn(&rig, "what is my dog called?", "t3").await;
    assert!(route_prompts(&rig).pop().unwrap().contains("<memory>"));
}

#[tokio::test(start_paused = true)]
async fn another_principal_finds_nothing_and_forged_ids_are_not_found() {
    let rig = rig(true);
    let memory = said(&rig, "dog", "my dog is called Biscuit").await;
    let bob = baton_core::Principal::new("bob").unwrap();
    let id = memory.id.as_str();
    assert_eq!(
        rig.runtime.memory().get(&bob, id).await,
        Err(MemoryFailure::NotFound)
    );
    assert_eq!(
        rig.runtime.memory().forget(&bob, id).await,
        Err(MemoryFailure::NotFound)
    );
    assert!(
        rig.runtime
            .memory()
            .search(&bob, "dog Biscuit", &[], 5)
            .await
            .unwrap()
            .is_empty()
    );
    for forged in [
        "mem_../../x",
        "",
        "mem_0000",
        "MEM_0123456789abcdef0123456789abcdef",
    ] {
        assert_eq!(
            rig.runtime.memory().get(&alice(), forged).await,
            Err(MemoryFailure::NotFound)
        );
    }
    assert_eq!(rig.runtime.memory().forget(&alice(), id).await, Ok(1));
    assert!(
        rig.runtime
            .memory()
            .search(&alice(), "Biscuit", &[], 5)
            .await
            .unwrap()
            .is_empty()
    );
    let megabyte = "a".repeat(1 << 20);
    assert!(matches!(
        rig.runtime
            .memory()
            .remember(
                &alice(),
                MemoryKind::Fact,
                "",
                &megabyte,
                MemorySource::default()
            )
            .await,
        Err(MemoryFailure::Invalid(_))
    ));
}

#[tokio::test(start_paused = true)]
async fn what_a_specialist_settled_is_kept_as_its_finding_for_a_while() {
    let rig = rig(true);
    let (episode, _) = turn(&rig, "why was my receipt rejected?", "t1").await;
    let extraction = rig
        .model
        .requests()
        .into_iter()
        .find(|r| r.purpose == CallPurpose::Remember)
        .expect("a settled finding is worth asking about");
    let asked: String = extraction
        .messages
        .iter()
        .filter_map(|m| m.user_text())
        .collect();
    assert!(
        asked.contains("<specialist_answer agent=\"support\">"),
        "{asked}"
    );
    let kept = rig
        .runtime
        .memory()
        .list(&alice(), &[MemoryKind::Finding], false, 10)
        .await
        .unwrap();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(kept[0].source.specialist.as_deref(), Some("support"));
    assert_eq!(kept[0].source.episode_id.as_deref(), Some(episode.as_str()));
    assert_eq!(kept[0].expires_ms, Some(T0 + 90 * DAY));
    // Past its end it is history: never read into a prompt again.
    rig.clock.0.store(T0 + 91 * DAY, Ordering::SeqCst);
    assert!(
        rig.runtime
            .memory()
            .list(&alice(), &[], false, 10)
            .await
            .unwrap()
            .is_empty()
    );
}
