//! `GET /v1/episodes/{id}/pictures/{sha256}`: a picture a user sent, served back to them
//! alone, as stored (D-42).

use std::sync::Arc;

use axum::http::{Request, StatusCode};
use baton_core::Principal;
use baton_core::picture::Bytes;
use baton_core::ports::store::Store;
use baton_inproc::HeapStore;
use baton_runtime::TurnRequest;
use baton_testkit::pictures::{SECRETS, receipt_photo};
use futures::StreamExt;

use crate::support::*;

/// A state whose store keeps what its turns commit, with one turn of alice's that sent the
/// receipt photo: the state, the episode and the stored picture's SHA-256 and bytes.
async fn with_a_sent_picture() -> (baton_http::AppState, String, String, Vec<u8>) {
    let store: Arc<dyn Store> = Arc::new(HeapStore::new());
    let state = Rig {
        store: store.clone(),
        ..Rig::default()
    }
    .state();
    let alice = Principal::new("alice").unwrap();
    let request = TurnRequest {
        pictures: vec![Bytes::from(receipt_photo())],
        ..TurnRequest::new(alice.clone(), "this didn't scan")
    };
    let stream = state.runtime.run_turn(request).await.unwrap();
    let episode = stream.episode_id.clone();
    let events: Vec<_> = stream.collect().await;
    assert!(events.last().unwrap().event.is_terminal(), "{events:?}");
    let turns = store.turns(&alice, &episode, 10).await.unwrap();
    let reference = turns[0].pictures[0].clone();
    let stored = store
        .picture(&alice, &episode, &reference.sha256)
        .await
        .unwrap();
    (state, episode, reference.sha256, stored.bytes.to_vec())
}

fn picture_path(episode: &str, sha256: &str) -> String {
    format!("/v1/episodes/{episode}/pictures/{sha256}")
}

async fn bytes_of(response: axum::http::Response<axum::body::Body>) -> Vec<u8> {
    axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap()
        .to_vec()
}

#[tokio::test]
async fn a_sent_picture_is_served_to_its_owner_as_stored_with_its_type() {
    let (state, episode, sha256, stored) = with_a_sent_picture().await;
    let response = send(&state, get(&picture_path(&episode, &sha256), None)).await;
    assert_eq!(response.status(), StatusCode::OK);
    let h = response.headers().clone();
    assert_eq!(h["content-type"], "image/jpeg");
    assert_eq!(h["x-content-type-options"], "nosniff");
    let cache = h["cache-control"].to_str().unwrap();
    assert!(
        cache.starts_with("private, max-age=") && !cache.contains("public"),
        "{cache}"
    );
    assert_eq!(h["etag"].to_str().unwrap(), format!("\"{sha256}\""));
    assert_eq!(h["content-length"], stored.len().to_string().as_str());
    let body = bytes_of(response).await;
    assert_eq!(body, stored);
    // What was served is the stripped picture: no name, device or position in it.
    assert_ne!(body, receipt_photo());
    for secret in SECRETS {
        let secret = secret.as_bytes();
        assert!(!body.windows(secret.len()).any(|w| w == secret));
    }

    // Asked again with its tag: not modified, no bytes.
    let again = Request::get(picture_path(&episode, &sha256))
        .header("if-none-match", format!("\"{sha256}\""))
        .body(axum::body::Body::empty())
        .unwrap();
    let response = send(&state, again).await;
    assert_eq!(response.status(), StatusCode::NOT_MODIFIED);
    assert!(bytes_of(response).await.is_empty());
}

#[tokio::test]
async fn a_picture_posted_with_a_turn_is_served_back_stripped() {
    use base64::Engine as _;
    let state = Rig::default().state();
    let sent = receipt_photo();
    let body = serde_json::json!({
        "message": "this didn't scan",
        "pictures": [{
            "media_type": "image/jpeg",
            "data": base64::engine::general_purpose::STANDARD.encode(&sent),
        }],
    });
    let response = send(&state, post_turn(&body.to_string(), None)).await;
    assert_eq!(response.status(), StatusCode::OK);
    let episode = response.headers()["x-baton-episode-id"]
        .to_str()
        .unwrap()
        .to_owned();
    text(response).await;
    let taken = baton_core::picture::take(&sent, &Default::default()).unwrap();
    let response = send(&state, get(&picture_path(&episode, &taken.sha256), None)).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "image/jpeg");
    assert_eq!(bytes_of(response).await, taken.bytes.to_vec());
}

#[tokio::test]
async fn another_principals_picture_an_unknown_one_and_a_bad_name_are_the_same_not_found() {
    let (state, episode, sha256, _) = with_a_sent_picture().await;
    let theirs = send(&state, get(&picture_path(&episode, &sha256), Some("bob"))).await;
    assert_eq!(theirs.status(), StatusCode::NOT_FOUND);
    let refused = error_of(theirs).await;
    assert_eq!(refused.0, "not_found");
    for path in [
        // A picture no turn of the episode sent.
        picture_path(&episode, &"0".repeat(64)),
        // An episode that is not there.
        picture_path("ep_unknown", &sha256),
        // Names that are not a SHA-256: upper case, short, a path.
        picture_path(&episode, &sha256.to_uppercase()),
        picture_path(&episode, &sha256[..63]),
        picture_path(&episode, "..%2F..%2Fetc%2Fpasswd"),
    ] {
        let response = send(&state, get(&path, None)).await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{path}");
        assert_eq!(
            response.headers()["content-type"],
            "application/json",
            "{path}"
        );
        assert_eq!(error_of(response).await, refused, "{path}");
    }
}

#[tokio::test]
async fn a_store_that_is_down_is_unavailable_not_missing() {
    let state = Rig {
        store: Arc::new(DownStore),
        ..Rig::default()
    }
    .state();
    let response = send(&state, get(&picture_path("ep_1", &"a".repeat(64)), None)).await;
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    let (code, message) = error_of(response).await;
    assert_eq!(code, "unavailable");
    assert!(!message.contains("/var/lib"), "{message}");
}
