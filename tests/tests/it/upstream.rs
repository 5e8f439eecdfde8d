//! Upstream conversation continuity (seed 000) against a real local chat service that keeps
//! its own conversations: an external-wrapper `support` continues its conversation within
//! the lifetime, starts a new one with its last turns replayed after expiry or when the
//! service forgets, and turns a service that is down, slow, confused or garbled into a plain
//! acknowledgement.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use baton_connectors::ConfiguredConnector;
use baton_connectors::UpstreamChatConnector;
use baton_core::Principal;
use baton_core::events::{Event, WireEvent};
use baton_core::ports::clock::Clock;
use baton_core::ports::store::Store;
use baton_core::ports::upstream::UpstreamConversation;
use baton_core::trace::{GuardName, ToolOutcome};
use baton_core::turn::{AgentStatus, TurnRecord};
use baton_inproc::HeapStore;
use baton_inproc::scripted::ScriptedModel;
use baton_runtime::{Runtime, RuntimeConfig, TurnRequest};
use baton_testkit::registry::TestRegistry;
use baton_tests::dynamodb_local::LocalJournal;
use baton_tests::upstream_chat::{Behaviour, FakeUpstream};
use futures::StreamExt;

const MINUTE: u64 = 60_000;
const START: u64 = 1_795_305_600_000;

/// Wall time a test moves forward.
struct MovableClock(AtomicU64);

impl Clock for MovableClock {
    fn now_ms(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

const SCRIPT: &str = r#"
agents:
  orchestrator:
    - when: { purpose: route, user_contains: "coffee" }
      tool_calls:
        - { name: ask_support, args: { query: "my receipt", intent_count: 2 } }
        - { name: ask_shop, args: { query: "coffee deals", intent_count: 2 } }
    - when: { purpose: route }
      tool_calls: [{ name: ask_support, args: { query: "my receipt", intent_count: 1 } }]
    - when: { purpose: compose }
      text: ["Done."]
  shop:
    - text: ["Roast coffee earns 500 points."]
"#;

struct Rig {
    runtime: Runtime,
    store: Arc<dyn Store>,
    clock: Arc<MovableClock>,
    upstream: FakeUpstream,
    model: Arc<ScriptedModel>,
}

async fn rig_on(store: Arc<dyn Store>, composition: &'static str, timeout_ms: u64) -> Rig {
    rig_with(store, composition, timeout_ms, RuntimeConfig::default()).await
}

async fn rig_with(
    store: Arc<dyn Store>,
    composition: &'static str,
    timeout_ms: u64,
    config: RuntimeConfig,
) -> Rig {
    let upstream = FakeUpstream::start().await;
    let registry = TestRegistry {
        composition,
        extra_tools: format!(
            "  support_chat:\n    description: The support desk's own assistant.\n    \
             connector: {{ kind: upstream_chat, url: \"{}\", timeout_ms: 5000 }}\n    \
             schema: {{ type: object, properties: {{}} }}\n",
            upstream.url()
        ),
        ..TestRegistry::default()
    }
    .file(
        "agents/support.yaml",
        format!(
            "id: support\ndescription: Receipt problems and missing points.\n\
             role: external-wrapper\nmodel: m1\ntools: [support_chat]\n\
             prompt_blocks: [support-instructions]\nlimits: {{ timeout_ms: {timeout_ms} }}\n"
        ),
    )
    .load()
    .expect("the registry loads");
    let clock = Arc::new(MovableClock(AtomicU64::new(START)));
    let model = Arc::new(ScriptedModel::from_yaml(SCRIPT).unwrap().recording());
    let runtime = Runtime::builder(Arc::new(registry))
        .model_override(model.clone())
        .store(store.clone())
        .connector("test", Arc::new(ConfiguredConnector))
        .connector("upstream_chat", Arc::new(UpstreamChatConnector::new()))
        .clock(clock.clone())
        .config(config)
        .build()
        .expect("the runtime builds");
    Rig {
        runtime,
        store,
        clock,
        upstream,
        model,
    }
}

fn alice() -> Principal {
    Principal::new("alice").unwrap()
}

impl Rig {
    async fn turn(&self, episode: Option<&str>, text: &str) -> (String, Vec<WireEvent>) {
        let request = TurnRequest {
            episode_id: episode.map(str::to_owned),
            ..TurnRequest::new(alice(), text)
        };
        let stream = self.runtime.run_turn(request).await.unwrap();
        let episode = stream.episode_id.clone();
        (episode, stream.collect().await)
    }

    async fn last(&self, episode: &str) -> TurnRecord {
        self.store
            .turns(&alice(), episode, 1)
            .await
            .unwrap()
            .pop()
            .unwrap()
    }

    fn advance(&self, ms: u64) {
        self.clock.0.fetch_add(ms, Ordering::SeqCst);
    }
}

fn support_text(record: &TurnRecord) -> (&str, AgentStatus) {
    let s = record
        .segments
        .iter()
        .find(|s| s.agent_id == "support")
        .expect("support answered");
    (s.text.as_str(), s.status)
}

fn restarts(record: &TurnRecord) -> Vec<&str> {
    record
        .routing
        .guards
        .iter()
        .filter(|g| g.guard == GuardName::UpstreamRestart)
        .map(|g| g.detail.as_str())
        .collect()
}

fn shown(events: &[WireEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_conversation_continues_within_its_lifetime_and_restarts_with_replay_after_it() {
    let rig = rig_on(Arc::new(HeapStore::new()), "mediated", 5_000).await;
    let (episode, _) = rig.turn(None, "my receipt R-1 didn't scan").await;
    let first = rig.last(&episode).await;
    assert!(
        support_text(&first)
            .0
            .starts_with("New conversation conv-1 (replayed 0"),
        "{first:?}"
    );
    assert!(
        restarts(&first).is_empty(),
        "a first conversation is no restart"
    );
    let kept = rig
        .store
        .upstream_conversation(&alice(), &episode, "support")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(kept.conversation_id, "conv-1");
    assert_eq!(kept.expires_ms, START + 55 * MINUTE);

    // Ten minutes later: the same conversation, and its lifetime is refreshed.
    rig.advance(10 * MINUTE);
    rig.turn(Some(&episode), "any news on my receipt?").await;
    let second = rig.last(&episode).await;
    assert!(
        support_text(&second)
            .0
            .starts_with("Continuing conv-1 (2 message(s)"),
        "{second:?}"
    );
    let kept = rig
        .store
        .upstream_conversation(&alice(), &episode, "support")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(kept.expires_ms, START + 65 * MINUTE);

    // A mixed turn: support's part is its own segment, beside shop's.
    rig.advance(MINUTE);
    rig.turn(Some(&episode), "my receipt and coffee deals")
        .await;
    let mixed = rig.last(&episode).await;
    assert!(
        support_text(&mixed).0.starts_with("Continuing conv-1 (3"),
        "{mixed:?}"
    );
    assert_eq!(mixed.segments.len(), 2);
    assert_eq!(
        mixed
            .segments
            .iter()
            .find(|s| s.agent_id == "shop")
            .unwrap()
            .text,
        "Roast coffee earns 500 points."
    );

    // Past the lifetime: a new conversation with support's last turns as its context.
    rig.advance(56 * MINUTE);
    rig.turn(Some(&episode), "and my receipt now?").await;
    let after = rig.last(&episode).await;
    assert!(
        support_text(&after)
            .0
            .starts_with("New conversation conv-2 (replayed 3 exchange(s))"),
        "{after:?}"
    );
    assert_eq!(restarts(&after).len(), 1, "{:?}", after.routing.guards);
    assert!(
        restarts(&after)[0].contains("expired"),
        "{:?}",
        restarts(&after)
    );
    let start = rig.upstream.received().pop().unwrap();
    assert_eq!(start.conversation_id, None);
    assert_eq!(
        start.body["context"][0]["assistant"].as_str().unwrap(),
        support_text(&first).0
    );
    // The principal travels on every call, as a header and in the body.
    for r in rig.upstream.received() {
        assert_eq!(r.principal_header.as_deref(), Some("alice"));
        assert_eq!(r.body["principal"], "alice");
    }
    // Shop never saw the service's words.
    for r in rig
        .model
        .requests()
        .iter()
        .filter(|r| &*r.agent_id == "shop")
    {
        assert!(
            !format!("{:?}", r.messages).contains("conv-"),
            "{:?}",
            r.messages
        );
    }
}

/// The exchange with the remote service is the specialist's one call: it shows as a tool
/// call on the stream, as the record counts it (D-20), and a failed one as unavailable.
#[tokio::test]
async fn the_remote_exchange_is_a_tool_call_on_the_stream_and_in_the_record() {
    let rig = rig_on(Arc::new(HeapStore::new()), "mediated", 5_000).await;
    let (episode, events) = rig.turn(None, "my receipt R-1 didn't scan").await;
    let calls = |events: &[WireEvent]| -> Vec<(String, Option<ToolOutcome>)> {
        events
            .iter()
            .filter_map(|e| match &e.event {
                Event::ToolCallStart { agent, .. } => Some((format!("start {agent}"), None)),
                Event::ToolResult { agent, status, .. } => {
                    Some((format!("result {agent}"), Some(*status)))
                }
                Event::ToolCallEnd { agent, .. } => Some((format!("end {agent}"), None)),
                _ => None,
            })
            .collect()
    };
    assert_eq!(
        calls(&events),
        [
            ("start support".to_owned(), None),
            ("result support".to_owned(), Some(ToolOutcome::Ok)),
            ("end support".to_owned(), None),
        ]
    );
    let record = rig.last(&episode).await;
    let support = record
        .consulted
        .iter()
        .find(|c| c.agent_id == "support")
        .unwrap();
    let recorded = record
        .routing
        .tool_calls
        .iter()
        .filter(|c| c.agent_id == "support")
        .count();
    assert_eq!((support.tool_calls, recorded), (1, 1));

    rig.upstream.set(Behaviour::Down);
    rig.advance(MINUTE);
    let (_, events) = rig.turn(Some(&episode), "my receipt again").await;
    assert!(
        calls(&events).contains(&("result support".to_owned(), Some(ToolOutcome::Unavailable))),
        "{:?}",
        calls(&events)
    );
}

#[tokio::test]
async fn a_restart_replays_six_exchanges_even_when_the_loaded_history_holds_fewer() {
    // The orchestrator's prompt holds only the last 2 turns (as after a compaction folded
    // the rest): the replay reads the specialist's earlier exchanges from the journal.
    let config = RuntimeConfig {
        history_turns: 2,
        ..RuntimeConfig::default()
    };
    let rig = rig_with(Arc::new(HeapStore::new()), "mediated", 5_000, config).await;
    let (episode, _) = rig.turn(None, "my receipt R-1 didn't scan").await;
    for i in 2..=8 {
        rig.advance(MINUTE);
        rig.turn(Some(&episode), &format!("receipt question {i}"))
            .await;
    }
    rig.advance(56 * MINUTE);
    rig.turn(Some(&episode), "and my receipt now?").await;
    let after = rig.last(&episode).await;
    assert!(
        support_text(&after)
            .0
            .starts_with("New conversation conv-2 (replayed 6 exchange(s))"),
        "{after:?}"
    );
    let start = rig.upstream.received().pop().unwrap();
    let asked: Vec<&str> = start.body["context"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["user"].as_str().unwrap())
        .collect();
    assert_eq!(
        asked,
        (3..=8)
            .map(|i| format!("receipt question {i}"))
            .collect::<Vec<_>>(),
        "the last six, oldest first"
    );
}

#[tokio::test]
async fn a_service_that_forgot_the_conversation_gets_a_new_one_with_the_replay() {
    let rig = rig_on(Arc::new(HeapStore::new()), "mediated", 5_000).await;
    let (episode, _) = rig.turn(None, "my receipt R-1").await;
    rig.upstream.forget_all();
    rig.advance(MINUTE);
    rig.turn(Some(&episode), "my receipt again").await;
    let record = rig.last(&episode).await;
    assert!(
        support_text(&record)
            .0
            .starts_with("New conversation conv-2 (replayed 1"),
        "{record:?}"
    );
    assert!(
        restarts(&record)[0].contains("no longer knew"),
        "{:?}",
        restarts(&record)
    );
    let kinds: Vec<Option<String>> = rig
        .upstream
        .received()
        .into_iter()
        .map(|r| r.conversation_id)
        .collect();
    assert_eq!(kinds, [None, Some("conv-1".into()), None]);
}

#[tokio::test]
async fn a_broken_service_gets_a_plain_acknowledgement_and_never_its_error_text() {
    for behaviour in [
        Behaviour::Down,
        Behaviour::WrongId,
        Behaviour::Garbage,
        Behaviour::Slow(std::time::Duration::from_secs(3)),
    ] {
        let rig = rig_on(Arc::new(HeapStore::new()), "passthrough", 1_000).await;
        let (episode, _) = rig.turn(None, "my receipt R-1").await;
        let before = rig
            .store
            .upstream_conversation(&alice(), &episode, "support")
            .await
            .unwrap();
        rig.upstream.set(behaviour);
        rig.advance(MINUTE);
        let (_, events) = rig.turn(Some(&episode), "my receipt again").await;
        let text = shown(&events);
        // Everything but the random ids (an episode id may contain "503").
        let all = serde_json::to_string(
            &events
                .iter()
                .map(|e| &e.event)
                .filter(|e| !matches!(e, Event::ResponseId { .. }))
                .collect::<Vec<_>>(),
        )
        .unwrap();
        for leaked in [
            "maintenance",
            "503",
            "<html>",
            "conv-someone-else",
            "Continuing",
            "protocol",
        ] {
            assert!(
                !all.contains(leaked),
                "{behaviour:?} leaked {leaked:?}: {all}"
            );
        }
        let record = rig.last(&episode).await;
        let (segment, status) = support_text(&record);
        let slow = matches!(behaviour, Behaviour::Slow(_));
        let expected = if slow {
            AgentStatus::Timeout
        } else {
            AgentStatus::Error
        };
        assert_eq!(status, expected, "{behaviour:?}");
        if !slow {
            assert!(
                text.contains("couldn't be reached just now"),
                "{behaviour:?}: {text}"
            );
            assert!(
                segment.contains("couldn't be reached just now"),
                "{behaviour:?}: {segment}"
            );
        }
        // The conversation id is kept as it was: another conversation's is never taken.
        let after = rig
            .store
            .upstream_conversation(&alice(), &episode, "support")
            .await
            .unwrap();
        assert_eq!(
            after.map(|c| c.conversation_id),
            before.map(|c| c.conversation_id),
            "{behaviour:?}"
        );
    }
}

#[tokio::test]
async fn an_expired_item_still_in_dynamodb_is_treated_as_expired() {
    let journal = LocalJournal::start().await;
    let store: Arc<dyn Store> = Arc::new(journal.store.clone());
    let rig = rig_on(store, "mediated", 5_000).await;
    let (episode, _) = rig.turn(None, "my receipt R-1").await;
    // DynamoDB deletes expired items late: one whose time has passed is still there.
    let stale = UpstreamConversation {
        agent_id: "support".into(),
        conversation_id: "conv-1".into(),
        expires_ms: START - 1,
        pending: None,
    };
    rig.store
        .save_upstream_conversation(&alice(), &episode, &stale)
        .await
        .unwrap();
    assert_eq!(
        rig.store
            .upstream_conversation(&alice(), &episode, "support")
            .await
            .unwrap(),
        Some(stale)
    );
    rig.advance(MINUTE);
    rig.turn(Some(&episode), "my receipt again").await;
    let record = rig.last(&episode).await;
    assert!(
        support_text(&record)
            .0
            .starts_with("New conversation conv-2 (replayed 1"),
        "{record:?}"
    );
    assert!(restarts(&record)[0].contains("expired"));
    let kinds: Vec<Option<String>> = rig
        .upstream
        .received()
        .into_iter()
        .map(|r| r.conversation_id)
        .collect();
    assert_eq!(kinds, [None, None], "the stale id was never sent");
}

#[tokio::test]
async fn a_chat_service_serves_the_card_whose_one_tool_it_is_whatever_its_role_label() {
    let tool = "  support_chat:\n    description: A desk.\n    connector: { kind: upstream_chat, url: \"http://127.0.0.1:9/chat\" }\n    schema: { type: object, properties: {} }\n";
    let build = |card: &str| {
        let registry = TestRegistry {
            extra_tools: tool.to_owned(),
            ..TestRegistry::default()
        }
        .file("agents/support.yaml", card.to_owned())
        .load()
        .expect("the registry loads");
        Runtime::builder(Arc::new(registry))
            .model_override(Arc::new(ScriptedModel::from_yaml("agents: {}").unwrap()))
            .store(Arc::new(HeapStore::new()))
            .connector("test", Arc::new(ConfiguredConnector))
            .connector("upstream_chat", Arc::new(UpstreamChatConnector::new()))
            .build()
            .err()
            .map(|e| e.to_string())
    };
    let card = |role: &str, tools: &str| {
        format!("id: support\ndescription: Receipts.\nrole: {role}\nmodel: m1\ntools: [{tools}]\n")
    };
    // The role is a label: the tool's connector kind decides.
    assert_eq!(build(&card("external-wrapper", "support_chat")), None);
    assert_eq!(build(&card("native", "support_chat")), None);
    let e = build(&card("external-wrapper", "support_chat, lookup_receipt")).expect("refused");
    assert!(e.contains("exactly that one tool"), "{e}");
    // A wrapper label on a card with ordinary tools is a native specialist.
    assert_eq!(build(&card("external-wrapper", "lookup_receipt")), None);
}

#[tokio::test]
async fn in_direct_composition_the_services_answer_stays_its_own_segment() {
    let rig = rig_on(Arc::new(HeapStore::new()), "direct", 5_000).await;
    let (episode, events) = rig.turn(None, "my receipt and coffee deals").await;
    let record = rig.last(&episode).await;
    assert_eq!(record.segments.len(), 2, "{record:?}");
    let (support, status) = support_text(&record);
    assert_eq!(status, AgentStatus::Ok);
    assert!(support.starts_with("New conversation conv-1"), "{support}");
    let shop = record
        .segments
        .iter()
        .find(|s| s.agent_id == "shop")
        .unwrap();
    assert!(!shop.text.contains("conv-"), "{shop:?}");
    // What the user saw came from the two answers, nothing else.
    let text = shown(&events);
    assert!(
        text.contains("conv-1") || text.contains("Roast coffee"),
        "{text}"
    );
}
