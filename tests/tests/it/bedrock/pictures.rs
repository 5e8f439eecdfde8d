//! A receipt photo through the engine to Bedrock (D-42): the Converse requests of the
//! orchestrator and of the specialist it passes the photo to carry an image block whose
//! bytes are the stripped picture, byte for byte, and nothing of what the phone wrote
//! into it (its owner, device, GPS position).

use baton_core::Principal;
use baton_core::events::Event;
use baton_core::picture::{Bytes, HiddenData, PictureLimits};
use baton_core::turn::TurnOutcome;
use baton_runtime::TurnRequest;
use baton_testkit::pictures::{SECRETS, receipt_photo};
use baton_tests::fake_bedrock::FakeRequest;

use super::engine::{registry_with, run_over};
use super::*;

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// What a request must hold: the stripped photo, as a JPEG image block, and no secret
/// anywhere in its body.
fn assert_carries_only_the_stripped_photo(who: &str, request: &FakeRequest, stripped: &Bytes) {
    let sent = request.images();
    assert_eq!(sent.len(), 1, "{who}: one image block");
    let (format, bytes) = &sent[0];
    assert_eq!(format, "jpeg", "{who}");
    assert!(bytes[..] == stripped[..], "{who}: not the stripped picture");
    for secret in SECRETS {
        assert!(!contains(bytes, secret), "{who}: the image holds {secret}");
        assert!(
            !request.body.to_string().contains(secret),
            "{who}: the request holds {secret}"
        );
    }
    // Nothing hidden is left to take: no GPS position, device or owner.
    let again = baton_core::picture::take(bytes, &PictureLimits::default()).unwrap();
    assert!(again.removed.is_empty(), "{who}: {:?}", again.removed);
}

/// The photo as the phone sent it, and as it must reach a model.
fn photo() -> (Vec<u8>, Bytes) {
    let sent = receipt_photo();
    // Not a vacuous test: what the phone sent does hold the secrets.
    assert!(SECRETS.iter().all(|s| contains(&sent, s)));
    let taken = baton_core::picture::take(&sent, &PictureLimits::default()).unwrap();
    assert!(taken.removed.contains(&HiddenData::Location));
    (sent, taken.bytes)
}

fn request_with(text: &str, picture: Vec<u8>) -> TurnRequest {
    TurnRequest {
        turn_id: Some("t1".into()),
        locale: Some("en-US".into()),
        pictures: vec![Bytes::from(picture)],
        ..TurnRequest::new(Principal::new("alice").unwrap(), text)
    }
}

fn answered(events: &[Event]) -> bool {
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

#[tokio::test]
async fn the_orchestrator_and_the_specialist_get_the_stripped_photo_on_the_wire() {
    let fake = FakeBedrock::with_handler(|req| {
        if req.system_text().contains("SUPPORT:") {
            Reply::text("That receipt is pending review.")
        } else if req.last_has_tool_results() {
            Reply::text("Support says it is pending review.")
        } else {
            Reply::tool_use(
                "route_1",
                "ask_support",
                json!({"query": "this one didn't scan", "intent_count": 1, "pictures": [1]}),
            )
        }
    })
    .await
    .unwrap();
    let (sent, stripped) = photo();
    let (events, record) = run_over(
        &fake,
        registry_with(true),
        request_with("this one didn't scan", sent),
    )
    .await;
    assert!(answered(&events), "{events:?}");
    assert_eq!(record.consulted[0].agent_id, "support");
    let requests = fake.requests();
    // Routing, the specialist, the composition.
    assert_eq!(requests.len(), 3, "{requests:#?}");
    let route = &requests[0];
    assert!(route.offers_tool("ask_support"));
    assert_eq!(
        route.tool_schema("ask_support").unwrap()["properties"]["pictures"]["type"],
        "array"
    );
    assert!(
        route.tool_schema("ask_shop").unwrap()["properties"]
            .get("pictures")
            .is_none()
    );
    assert_carries_only_the_stripped_photo("the orchestrator", route, &stripped);
    let support = requests
        .iter()
        .find(|r| r.system_text().contains("SUPPORT:"))
        .unwrap();
    assert_carries_only_the_stripped_photo("support", support, &stripped);
    // The specialist's message: the photo, then its query.
    let asked = support.messages().last().unwrap();
    assert!(asked["content"][0].get("image").is_some(), "{asked}");
    assert_eq!(asked["content"][1]["text"], "this one didn't scan");
    for r in &requests {
        for secret in SECRETS {
            assert!(!r.body.to_string().contains(secret));
        }
    }
}

#[tokio::test]
async fn the_direct_line_sends_the_stripped_photo_to_the_specialist_on_the_wire() {
    let fake = FakeBedrock::with_handler(|req| {
        if req.system_text().contains("SUPPORT:") {
            Reply::text("That receipt is pending review.")
        } else {
            Reply::text("The orchestrator was not meant to be asked.")
        }
    })
    .await
    .unwrap();
    let (sent, stripped) = photo();
    let (events, record) = run_over(
        &fake,
        registry_with(true),
        request_with("#support this one didn't scan", sent),
    )
    .await;
    assert!(answered(&events), "{events:?}");
    assert_eq!(record.consulted[0].agent_id, "support");
    let requests = fake.requests();
    assert_eq!(requests.len(), 1, "only support: {requests:#?}");
    assert_carries_only_the_stripped_photo("support", &requests[0], &stripped);
}
