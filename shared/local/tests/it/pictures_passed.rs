//! The specialist receives the picture (D-42), with the shipped registry and the offline
//! model: `support` and `shop` take pictures, so the orchestrator's call passes them the
//! message's pictures and their own model request carries the stripped bytes; `rewards`
//! takes none and never sees one. The Direct Line carries them the same way.

use std::sync::{Arc, Mutex};

use baton_core::Principal;
use baton_core::events::Event;
use baton_core::message::Content;
use baton_core::picture::{Bytes, PictureLimits};
use baton_core::ports::model::{CallPurpose, Model, ModelRequest, ModelStream};
use baton_core::ports::store::TurnStore;
use baton_inproc::HeapStore;
use baton_local::offline::OfflineModel;
use baton_runtime::{Runtime, TurnRequest};
use baton_testkit::pictures::{SECRETS, product_photo, receipt_photo};

use crate::shipped::{runtime_around, turn_events};

/// The offline model, keeping every request it is sent.
struct Recording {
    offline: OfflineModel,
    seen: Mutex<Vec<ModelRequest>>,
}

impl Model for Recording {
    fn stream(&self, request: &ModelRequest) -> ModelStream {
        self.seen.lock().unwrap().push(request.clone());
        self.offline.stream(request)
    }

    fn serves_as(&self) -> Option<(&str, &str)> {
        self.offline.serves_as()
    }
}

struct Rig {
    runtime: Runtime,
    model: Arc<Recording>,
    store: Arc<HeapStore>,
}

fn rig() -> Rig {
    let store = Arc::new(HeapStore::new());
    let mut kept = None;
    let runtime = runtime_around(store.clone(), |offline| {
        let model = Arc::new(Recording {
            offline,
            seen: Mutex::default(),
        });
        kept = Some(model.clone());
        model
    });
    Rig {
        runtime,
        model: kept.unwrap(),
        store,
    }
}

fn alice() -> Principal {
    Principal::new("alice").unwrap()
}

/// One turn of `text` with `pictures`: who was consulted, and the episode.
async fn turn(rig: &Rig, text: &str, pictures: &[Vec<u8>]) -> (Vec<String>, String) {
    let request = TurnRequest {
        pictures: pictures.iter().cloned().map(Bytes::from).collect(),
        ..TurnRequest::new(alice(), text)
    };
    let events = turn_events(&rig.runtime, request).await;
    let mut consulted = Vec::new();
    let mut episode = String::new();
    for e in events {
        match e {
            Event::AgentsConsulted { agents, .. } => {
                consulted = agents.into_iter().map(|a| a.agent_id).collect();
            }
            Event::ResponseId { episode_id, .. } => episode = episode_id,
            _ => {}
        }
    }
    (consulted, episode)
}

/// The bytes of every picture in the specialist `agent`'s own model requests (its tool
/// loop's calls), in order.
fn pictures_seen_by(rig: &Rig, agent: &str) -> Vec<Bytes> {
    let seen = rig.model.seen.lock().unwrap();
    let requests: Vec<&ModelRequest> = seen
        .iter()
        .filter(|r| &*r.agent_id == agent && r.purpose == CallPurpose::Agent)
        .collect();
    assert!(!requests.is_empty(), "{agent} was never called");
    requests
        .iter()
        .flat_map(|r| &r.messages)
        .flat_map(|m| &m.content)
        .filter_map(|c| match c {
            Content::Picture { data, .. } => Some(data.clone()),
            _ => None,
        })
        .collect()
}

/// What the picture is once taken: what a specialist must get, byte for byte.
fn stripped(sent: &[u8]) -> Bytes {
    baton_core::picture::take(sent, &PictureLimits::default())
        .unwrap()
        .bytes
}

fn assert_no_secrets(bytes: &[u8]) {
    for secret in SECRETS {
        let secret = secret.as_bytes();
        assert!(
            !bytes.windows(secret.len()).any(|w| w == secret),
            "{} reached a specialist",
            String::from_utf8_lossy(secret)
        );
    }
}

#[tokio::test]
async fn a_specialist_that_takes_pictures_gets_the_stripped_picture_in_its_own_request() {
    let rig = rig();
    let sent = receipt_photo();
    let (consulted, episode) =
        turn(&rig, "this one didn't scan", std::slice::from_ref(&sent)).await;
    assert_eq!(consulted, ["support"]);
    let seen = pictures_seen_by(&rig, "support");
    assert!(!seen.is_empty(), "support's request carries the picture");
    for bytes in &seen {
        assert_eq!(
            *bytes,
            stripped(&sent),
            "the stripped picture, byte for byte"
        );
        assert_no_secrets(bytes);
    }
    // Its first request: the picture, then the query, in one user message.
    let first = rig
        .model
        .seen
        .lock()
        .unwrap()
        .iter()
        .find(|r| &*r.agent_id == "support" && r.purpose == CallPurpose::Agent)
        .cloned()
        .unwrap();
    let asked = first.messages.last().unwrap();
    assert!(matches!(asked.content[0], Content::Picture { .. }));
    assert_eq!(asked.user_text(), Some("this one didn't scan"));
    // The record says which pictures the call passed, by number.
    let turns = rig.store.turns(&alice(), &episode, 1).await.unwrap();
    let call = &turns[0].routing.calls[0];
    assert_eq!(call.agent_id, "support");
    assert_eq!(call.args.value()["pictures"], serde_json::json!([1]));
}

#[tokio::test]
async fn every_specialist_routed_to_that_takes_pictures_gets_all_of_them() {
    let rig = rig();
    let (receipt, product) = (receipt_photo(), product_photo());
    let (consulted, _) = turn(
        &rig,
        "my receipt didn't scan and find me coffee deals",
        &[receipt.clone(), product.clone()],
    )
    .await;
    assert_eq!(consulted, ["support", "shop"]);
    let both = [stripped(&receipt), stripped(&product)];
    assert_eq!(pictures_seen_by(&rig, "support")[..2], both);
    assert_eq!(pictures_seen_by(&rig, "shop")[..2], both);
}

#[tokio::test]
async fn a_specialist_that_takes_no_pictures_is_never_passed_one() {
    let rig = rig();
    let (consulted, _) = turn(&rig, "what is my points balance?", &[receipt_photo()]).await;
    assert_eq!(consulted, ["rewards"]);
    assert!(pictures_seen_by(&rig, "rewards").is_empty());
    // The orchestrator saw it; its call to rewards passed nothing.
    let seen = rig.model.seen.lock().unwrap();
    let calls: Vec<&Content> = seen
        .iter()
        .flat_map(|r| &r.messages)
        .flat_map(|m| &m.content)
        .filter(|c| matches!(c, Content::ToolUse { name, .. } if name == "ask_rewards"))
        .collect();
    assert!(!calls.is_empty());
    for call in calls {
        let Content::ToolUse { input, .. } = call else {
            unreachable!()
        };
        assert!(!input.to_string().contains("pictures"), "{input}");
    }
}

#[tokio::test]
async fn a_message_without_pictures_passes_none() {
    let rig = rig();
    let (consulted, episode) = turn(&rig, "my receipt didn't scan", &[]).await;
    assert_eq!(consulted, ["support"]);
    assert!(pictures_seen_by(&rig, "support").is_empty());
    let turns = rig.store.turns(&alice(), &episode, 1).await.unwrap();
    assert!(
        !turns[0].routing.calls[0]
            .args
            .to_string()
            .contains("pictures")
    );
}

#[tokio::test]
async fn the_direct_line_carries_the_pictures_to_a_specialist_that_takes_them() {
    let rig = rig();
    let sent = receipt_photo();
    let (consulted, _) = turn(
        &rig,
        "#support this one didn't scan",
        std::slice::from_ref(&sent),
    )
    .await;
    assert_eq!(consulted, ["support"]);
    let seen = pictures_seen_by(&rig, "support");
    assert!(!seen.is_empty(), "the Direct Line carries the picture");
    assert!(seen.iter().all(|b| *b == stripped(&sent)));
    // Nobody routed it: the orchestrator made no routing call.
    assert!(
        !rig.model
            .seen
            .lock()
            .unwrap()
            .iter()
            .any(|r| r.purpose == CallPurpose::Route)
    );

    let rig = self::rig();
    let (consulted, _) = turn(&rig, "#rewards what is my balance?", &[sent]).await;
    assert_eq!(consulted, ["rewards"]);
    assert!(pictures_seen_by(&rig, "rewards").is_empty());
}
