//! A specialist is passed the message's pictures (D-42): only a card that takes pictures,
//! only the ones the orchestrator's call names, as its model gets pictures (the bytes to a
//! model that sees, a sentence to one that does not); a number that names no picture is a
//! tool error the orchestrator reads.

use std::sync::Arc;

use baton_core::events::Event;
use baton_core::message::{Content, Role};
use baton_core::picture::{Bytes, PictureLimits};
use baton_core::ports::model::{CallPurpose, ModelRequest};
use baton_core::ports::store::TurnStore as _;
use baton_core::trace::DropReason;
use baton_core::turn::TurnOutcome;
use baton_testkit::pictures::{product_photo, receipt_photo};

use crate::support::*;

/// The test registry's support card, taking pictures.
const SUPPORT: &str = r#"
id: support
description: Receipt problems and missing points.
role: native
model: m1
tools: [lookup_receipt]
prompt_blocks: [support-instructions]
limits: { timeout_ms: 5000 }
takes_pictures: true
"#;

/// The test registry's models, `m1` seeing pictures when `sees`.
fn models(sees: bool) -> String {
    format!(
        r#"
models:
  m1:
    provider: test
    model_id: test-model-1
    context_window: 100000
    prices: {{ input: 1.0, output: 2.0, cache_read: 0.1, cache_write: 1.25 }}
    capabilities: {{ tool_choice: true, cache_points: true, parallel_tool_calls: true, pictures: {sees} }}
  m2:
    provider: test
    model_id: test-model-2
    context_window: 100000
    prices: {{ input: 1.0, output: 2.0, cache_read: 0.1, cache_write: 1.25 }}
    capabilities: {{ tool_choice: false, cache_points: true, parallel_tool_calls: true }}
"#
    )
}

/// The orchestrator asks `tool` with `pictures`, then composes.
fn script(tool: &str, pictures: &str) -> String {
    format!(
        r#"
agents:
  orchestrator:
    - when: {{ purpose: route }}
      tool_calls: [{{ name: {tool}, args: {{ query: "this one didn't scan", intent_count: 1, pictures: {pictures} }} }}]
    - when: {{ purpose: compose }}
      text: ["Done."]
  support:
    - text: ["Support looked at it."]
  shop:
    - text: ["Shop looked at it."]
"#
    )
}

fn rig_for(sees: bool, script: &str) -> Rig {
    let registry = TestRegistry::default()
        .file("agents/support.yaml", SUPPORT)
        .file("models.yaml", models(sees));
    make_rig(&registry, script)
}

/// One turn of the message with `pictures`; its events.
async fn turn(rig: &Rig, pictures: &[Vec<u8>]) -> Vec<Event> {
    let request = baton_runtime::TurnRequest {
        pictures: pictures.iter().cloned().map(Bytes::from).collect(),
        ..request("this one didn't scan", None, "t1")
    };
    let (_, events) = run(rig, request).await;
    events.into_iter().map(|e| e.event).collect()
}

fn requests_of(rig: &Rig, agent: &str, purpose: CallPurpose) -> Vec<ModelRequest> {
    rig.model
        .requests()
        .into_iter()
        .filter(|r| &*r.agent_id == agent && r.purpose == purpose)
        .collect()
}

fn pictures_in(request: &ModelRequest) -> Vec<Bytes> {
    request
        .messages
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|c| match c {
            Content::Picture { data, .. } => Some(data.clone()),
            _ => None,
        })
        .collect()
}

fn stripped(sent: &[u8]) -> Bytes {
    baton_core::picture::take(sent, &PictureLimits::default())
        .unwrap()
        .bytes
}

fn completed(events: &[Event]) -> bool {
    events.iter().any(|e| {
        matches!(
            e,
            Event::Completed {
                outcome: TurnOutcome::Answered,
                ..
            }
        )
    })
}

#[tokio::test(start_paused = true)]
async fn the_pictures_the_call_names_reach_the_specialists_model_before_its_query() {
    let rig = rig_for(true, &script("ask_support", "[2]"));
    let (receipt, product) = (receipt_photo(), product_photo());
    let events = turn(&rig, &[receipt.clone(), product.clone()]).await;
    assert!(completed(&events), "{events:?}");
    let support = requests_of(&rig, "support", CallPurpose::Agent);
    let asked = support[0].messages.last().unwrap();
    assert_eq!(asked.role, Role::User);
    // Only the second picture, then the query.
    assert_eq!(pictures_in(&support[0]), [stripped(&product)]);
    assert!(matches!(asked.content[0], Content::Picture { .. }));
    assert_eq!(asked.user_text(), Some("this one didn't scan"));
    // Its number is no detail of the request in words.
    let system: String = support[0].system.iter().map(|b| &*b.text).collect();
    assert!(!system.contains("pictures"), "{system}");
    // The orchestrator still sees both.
    let route = &requests_of(&rig, "orchestrator", CallPurpose::Route)[0];
    assert_eq!(pictures_in(route), [stripped(&receipt), stripped(&product)]);
}

#[tokio::test(start_paused = true)]
async fn a_specialist_whose_model_cannot_see_is_told_of_the_picture_in_words() {
    let rig = rig_for(false, &script("ask_support", "[1]"));
    let events = turn(&rig, &[receipt_photo()]).await;
    assert!(completed(&events), "{events:?}");
    let support = &requests_of(&rig, "support", CallPurpose::Agent)[0];
    assert!(pictures_in(support).is_empty());
    let told = support.messages.last().unwrap().text();
    assert!(told.contains("image/jpeg, 360×900 pixels"), "{told}");
    assert!(told.contains("cannot see"), "{told}");
}

#[tokio::test(start_paused = true)]
async fn a_number_that_names_no_picture_is_a_tool_error_the_orchestrator_reads() {
    let rig = rig_for(true, &script("ask_support", "[1, 3]"));
    let events = turn(&rig, &[receipt_photo(), product_photo()]).await;
    assert!(completed(&events), "{events:?}");
    assert!(
        requests_of(&rig, "support", CallPurpose::Agent).is_empty(),
        "the refused call never ran"
    );
    let compose = &requests_of(&rig, "orchestrator", CallPurpose::Compose)[0];
    let refusal = compose
        .messages
        .iter()
        .flat_map(|m| &m.content)
        .find_map(|c| match c {
            Content::ToolResult {
                status, content, ..
            } if content.to_string().contains("names no picture") => Some((*status, content)),
            _ => None,
        });
    let Some((status, content)) = refusal else {
        panic!("no refusal in {:?}", compose.messages);
    };
    assert_eq!(status, baton_core::message::ToolResultStatus::Error);
    assert!(content.to_string().contains("numbered 1 to 2"), "{content}");
    let turns = rig.store.turns(&alice(), &episode_of(&events), 1).await;
    let routing = &turns.unwrap()[0].routing;
    assert!(
        routing
            .dropped
            .iter()
            .any(|d| d.tool == "ask_support" && d.reason == DropReason::InvalidArgs),
        "{routing:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_card_that_takes_no_pictures_is_passed_none_whatever_the_call_says() {
    let rig = rig_for(true, &script("ask_shop", "[1]"));
    let events = turn(&rig, &[receipt_photo()]).await;
    assert!(completed(&events), "{events:?}");
    let shop = &requests_of(&rig, "shop", CallPurpose::Agent)[0];
    assert!(pictures_in(shop).is_empty());
    let system: String = shop.system.iter().map(|b| &*b.text).collect();
    assert!(!system.contains("pictures"), "{system}");
    // Its tool has no such argument.
    let route = &requests_of(&rig, "orchestrator", CallPurpose::Route)[0];
    let ask_shop = route.tools.iter().find(|t| &*t.name == "ask_shop").unwrap();
    assert!(
        ask_shop.input_schema["properties"]
            .get("pictures")
            .is_none()
    );
    let ask_support = route
        .tools
        .iter()
        .find(|t| &*t.name == "ask_support")
        .unwrap();
    assert!(
        ask_support.input_schema["properties"]
            .get("pictures")
            .is_some()
    );
}

#[test]
fn a_card_served_by_a_chat_service_cannot_take_pictures() {
    let registry = TestRegistry {
        extra_tools: "  chat_service:\n    description: A chat service.\n    connector: { kind: upstream_chat, url: \"http://127.0.0.1:9/chat\" }\n    schema: { type: object, properties: {} }\n".into(),
        ..TestRegistry::default()
    }
    .file(
        "agents/support.yaml",
        SUPPORT.replace("tools: [lookup_receipt]", "tools: [chat_service]"),
    );
    let built = baton_runtime::Runtime::builder(Arc::new(registry.load().unwrap()))
        .model_override(Arc::new(
            baton_inproc::scripted::ScriptedModel::from_yaml("agents: {}").unwrap(),
        ))
        .store(Arc::new(baton_inproc::HeapStore::new()))
        .connector("test", Arc::new(ConfiguredConnector))
        .connector(
            "upstream_chat",
            Arc::new(baton_connectors::UpstreamChatConnector::new()),
        )
        .build();
    let Err(problems) = built else {
        panic!("a chat service's card that takes pictures was built");
    };
    assert!(
        problems
            .0
            .iter()
            .any(|p| p.contains("support takes pictures") && p.contains("words only")),
        "{problems:?}"
    );
}

fn episode_of(events: &[Event]) -> String {
    events
        .iter()
        .find_map(|e| match e {
            Event::ResponseId { episode_id, .. } => Some(episode_id.clone()),
            _ => None,
        })
        .unwrap()
}

/// An orchestrator whose model cannot see: by default it is told of the picture in words;
/// configured to refuse, the turn is refused before it runs, saying so, and nothing is
/// stored (D-42).
#[tokio::test(start_paused = true)]
async fn a_blind_orchestrator_is_told_in_words_or_the_turn_refused_as_configured() {
    let registry = TestRegistry::default()
        .file("agents/support.yaml", SUPPORT)
        .file("models.yaml", models(false));
    let told = make_rig(&registry, &script("ask_support", "[1]"));
    let events = turn(&told, &[receipt_photo()]).await;
    assert!(completed(&events), "{events:?}");
    let routed = &requests_of(&told, "orchestrator", CallPurpose::Route)[0];
    assert!(
        pictures_in(routed).is_empty(),
        "a blind model got the bytes"
    );
    let words = serde_json::to_string(&routed.messages).unwrap();
    assert!(words.contains("image/jpeg"), "{words}");

    let refusing = make_rig_with(
        &registry,
        &script("ask_support", "[1]"),
        baton_runtime::RuntimeConfig {
            blind_pictures: baton_runtime::BlindPictures::Refuse,
            ..baton_runtime::RuntimeConfig::default()
        },
    );
    let with_photo = baton_runtime::TurnRequest {
        pictures: vec![Bytes::from(receipt_photo())],
        ..request("this one didn't scan", None, "t1")
    };
    let refused = refusing.runtime.run_turn(with_photo).await.err().unwrap();
    assert_eq!(refused.kind, baton_runtime::RejectionKind::Invalid);
    assert!(
        refused.message.contains("cannot see pictures"),
        "{refused:?}"
    );
    assert!(refusing.model.requests().is_empty(), "nothing ran");
    // Words alone still go through.
    let (_, events) = run(&refusing, request("this one didn't scan", None, "t2")).await;
    assert!(completed(
        &events.into_iter().map(|e| e.event).collect::<Vec<_>>()
    ));
}
