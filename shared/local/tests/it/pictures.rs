//! Pictures through the engine with the shipped registry and the offline model (D-42): a
//! receipt photo reaches support and a product photo shopping, from the words beside them
//! or, when the words say nothing, from what the picture looks like; the journal keeps a
//! reference and the store the stripped bytes; the receipt names what was removed.

use std::sync::Arc;

use baton_core::Principal;
use baton_core::events::Event;
use baton_core::picture::{Bytes, HiddenData, MediaType};
use baton_core::ports::store::TurnStore;
use baton_inproc::HeapStore;
use baton_runtime::{RejectionKind, Runtime, TurnRequest};
use baton_testkit::pictures::{SECRETS, product_photo, receipt_photo};

use crate::shipped::{runtime_over, turn_events};

fn alice() -> Principal {
    Principal::new("alice").unwrap()
}

/// One turn of `text` with `pictures`: who was consulted, and the turn's events.
async fn turn(runtime: &Runtime, text: &str, pictures: Vec<Vec<u8>>) -> (Vec<String>, Vec<Event>) {
    let request = TurnRequest {
        pictures: pictures.into_iter().map(Bytes::from).collect(),
        ..TurnRequest::new(alice(), text)
    };
    let events = turn_events(runtime, request).await;
    let consulted = events
        .iter()
        .find_map(|e| match e {
            Event::AgentsConsulted { agents, .. } => {
                Some(agents.iter().map(|a| a.agent_id.clone()).collect())
            }
            _ => None,
        })
        .unwrap_or_default();
    (consulted, events)
}

#[tokio::test]
async fn a_receipt_photo_reaches_support_and_a_product_photo_shopping() {
    let runtime = runtime_over(Arc::new(HeapStore::new()));
    // The words decide when they name the need.
    let (who, _) = turn(&runtime, "this one didn't scan", vec![receipt_photo()]).await;
    assert_eq!(who, ["support"]);
    let (who, _) = turn(&runtime, "is there a deal on this?", vec![product_photo()]).await;
    assert_eq!(who, ["shop"]);
    // Words that name nothing, or none: the picture's look decides.
    let (who, _) = turn(&runtime, "what about this one?", vec![receipt_photo()]).await;
    assert_eq!(who, ["support"]);
    let (who, _) = turn(&runtime, "", vec![product_photo()]).await;
    assert_eq!(who, ["shop"]);
    let (who, _) = turn(&runtime, "", vec![receipt_photo()]).await;
    assert_eq!(who, ["support"]);
}

#[tokio::test]
async fn the_journal_keeps_a_reference_and_the_store_the_stripped_picture() {
    let store = Arc::new(HeapStore::new());
    let runtime = runtime_over(store.clone());
    let sent = receipt_photo();
    let (_, events) = turn(&runtime, "this one didn't scan", vec![sent.clone()]).await;
    let Some(Event::Completed { privacy, .. }) = events.last() else {
        panic!("the turn completes: {events:?}");
    };
    for kind in [HiddenData::Location, HiddenData::Device, HiddenData::Owner] {
        assert_eq!(
            privacy.pictures.get(&kind),
            Some(&1),
            "{kind:?}: {privacy:?}"
        );
    }
    let episode_id = events
        .iter()
        .find_map(|e| match e {
            Event::ResponseId { episode_id, .. } => Some(episode_id.clone()),
            _ => None,
        })
        .unwrap();
    let turns = store.turns(&alice(), &episode_id, 10).await.unwrap();
    let reference = &turns[0].pictures[0];
    assert_eq!(reference.media_type, MediaType::Jpeg);
    assert_eq!((reference.width, reference.height), (360, 900));
    let record = serde_json::to_string(&turns[0]).unwrap();
    assert!(record.len() < sent.len() / 2, "the record holds no bytes");
    let stored = store
        .picture(&alice(), &episode_id, &reference.sha256)
        .await
        .unwrap();
    assert_eq!(stored.bytes.len() as u64, reference.bytes);
    for secret in SECRETS {
        let secret = secret.as_bytes();
        assert!(
            !stored.bytes.windows(secret.len()).any(|w| w == secret),
            "{}",
            String::from_utf8_lossy(secret)
        );
        assert!(!record.contains(std::str::from_utf8(secret).unwrap()));
    }
    // Nobody else reads it.
    let bob = Principal::new("bob").unwrap();
    assert!(
        store
            .picture(&bob, &episode_id, &reference.sha256)
            .await
            .is_err()
    );
}

#[tokio::test]
async fn a_picture_that_is_not_one_or_too_many_is_refused_and_nothing_runs() {
    let store = Arc::new(HeapStore::new());
    let runtime = runtime_over(store.clone());
    let not_a_picture = TurnRequest {
        pictures: vec![Bytes::from_static(b"%PDF-1.7")],
        ..TurnRequest::new(alice(), "this one didn't scan")
    };
    let refused = runtime.run_turn(not_a_picture).await.err().unwrap();
    assert_eq!(refused.kind, RejectionKind::Invalid);
    assert!(refused.message.contains("Picture 1"), "{}", refused.message);
    let cut = receipt_photo();
    let cut_short = TurnRequest {
        pictures: vec![
            Bytes::from(receipt_photo()),
            Bytes::copy_from_slice(&cut[..cut.len() / 2]),
        ],
        ..TurnRequest::new(alice(), "this one didn't scan")
    };
    let refused = runtime.run_turn(cut_short).await.err().unwrap();
    assert!(refused.message.contains("Picture 2"), "{}", refused.message);
    let five = TurnRequest {
        pictures: vec![Bytes::from(product_photo()); 5],
        ..TurnRequest::new(alice(), "deals?")
    };
    let refused = runtime.run_turn(five).await.err().unwrap();
    assert_eq!(refused.kind, RejectionKind::TooLarge);
}

/// The demo photos shipped beside the registry (for `baton chat --image`) are the test
/// kit's, byte for byte: the GPS tags a user sees stripped are the ones tested here.
#[test]
fn the_shipped_demo_photos_are_the_test_kits() {
    let dir = baton_testkit::crate_dir().join("../registry/pictures");
    if std::env::var_os("BATON_WRITE_PICTURES").is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("receipt.jpg"), receipt_photo()).unwrap();
        std::fs::write(dir.join("product.jpg"), product_photo()).unwrap();
    }
    assert_eq!(
        std::fs::read(dir.join("receipt.jpg")).unwrap(),
        receipt_photo()
    );
    assert_eq!(
        std::fs::read(dir.join("product.jpg")).unwrap(),
        product_photo()
    );
}
