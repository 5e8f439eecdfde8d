//! Every way a request is refused: status, code and a plain message.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};

use crate::support::*;

async fn refused(state: &baton_http::AppState, req: Request<Body>) -> (StatusCode, String, String) {
    let response = send(state, req).await;
    let status = response.status();
    assert_eq!(
        response.headers()["content-type"],
        "application/json",
        "refusals are JSON"
    );
    let (code, message) = error_of(response).await;
    (status, code, message)
}

#[tokio::test]
async fn no_principal_and_no_default_is_401() {
    let state = Rig {
        default_principal: None,
        ..Rig::default()
    }
    .state();
    let (status, code, message) = refused(&state, post_turn(r#"{"message":"hi"}"#, None)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(code, "unauthorized");
    assert!(message.contains("not authenticated"), "{message}");
}

#[tokio::test]
async fn an_invalid_principal_header_is_401() {
    let state = Rig::default().state();
    let (status, _, message) =
        refused(&state, post_turn(r#"{"message":"hi"}"#, Some("two words"))).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(message.contains("principal is not valid"), "{message}");
}

#[tokio::test]
async fn the_principal_is_checked_before_the_body() {
    let state = Rig {
        default_principal: None,
        ..Rig::default()
    }
    .state();
    let (status, ..) = refused(&state, post_turn("not json", None)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn an_unknown_field_is_400_naming_it() {
    let state = Rig::default().state();
    let (status, _, message) = refused(
        &state,
        post_turn(r#"{"message":"hi","colour":"red"}"#, None),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(message.contains("\"colour\""), "{message}");
    assert!(!message.contains(" line "), "no serde positions: {message}");
    assert!(!message.contains("column"), "no serde positions: {message}");
}

#[tokio::test]
async fn malformed_json_is_400() {
    let state = Rig::default().state();
    let (status, code, message) = refused(&state, post_turn(r#"{"message": "hi"#, None)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(code, "malformed_json");
    assert_eq!(message, "the request body is not valid JSON");
}

#[tokio::test]
async fn a_wrong_content_type_is_400() {
    let state = Rig::default().state();
    let req = Request::post("/v1/turns")
        .header("content-type", "text/plain")
        .body(Body::from(r#"{"message":"hi"}"#))
        .unwrap();
    let (status, code, _) = refused(&state, req).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(code, "unsupported_content_type");
}

#[tokio::test]
async fn a_body_over_the_limit_is_413() {
    // No pictures: a turn's body has no room beyond the limit (D-42).
    let state = Rig {
        max_body_bytes: Some(64),
        pictures: baton_core::picture::PictureLimits {
            max_pictures: 0,
            ..Default::default()
        },
        ..Rig::default()
    }
    .state();
    let body = format!(r#"{{"message":"{}"}}"#, "a".repeat(100));
    let (status, code, message) = refused(&state, post_turn(&body, None)).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(code, "body_too_large");
    assert!(message.contains("64 bytes"), "{message}");
}

#[tokio::test]
async fn an_empty_message_is_400() {
    let state = Rig::default().state();
    let (status, code, message) = refused(&state, post_turn(r#"{"message":"   "}"#, None)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(code, "invalid_request");
    assert!(message.contains("empty"), "{message}");
}

#[tokio::test]
async fn a_message_over_the_character_limit_is_413() {
    let state = Rig {
        max_message_chars: 10,
        ..Rig::default()
    }
    .state();
    let (status, code, message) = refused(
        &state,
        post_turn(r#"{"message":"this is far too long"}"#, None),
    )
    .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(code, "message_too_large");
    assert!(message.contains("limit is 10"), "{message}");
}

#[tokio::test]
async fn a_turn_on_an_unknown_episode_is_404() {
    let state = Rig::default().state();
    let (status, code, _) = refused(
        &state,
        post_turn(r#"{"message":"hi","episode_id":"ep_nope"}"#, None),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(code, "not_found");
}

#[tokio::test]
async fn a_bad_turn_id_is_400() {
    let state = Rig::default().state();
    let (status, _, message) = refused(
        &state,
        post_turn(r#"{"message":"hi","turn_id":"has space"}"#, None),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(message.contains("turn id"), "{message}");
}

/// A turn whose routing call takes a minute holds its claim for the whole test.
async fn a_running_turn(state: &baton_http::AppState) -> String {
    let response = send(
        state,
        post_turn(r#"{"message":"coffee deals","turn_id":"t1"}"#, None),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    response.headers()["x-baton-episode-id"]
        .to_str()
        .unwrap()
        .to_owned()
}

fn slow() -> Rig {
    Rig {
        script: script(60_000, 0),
        ..Rig::default()
    }
}

#[tokio::test]
async fn the_same_turn_id_while_it_runs_is_409() {
    let state = slow().state();
    a_running_turn(&state).await;
    let (status, code, message) = refused(
        &state,
        post_turn(r#"{"message":"coffee deals","turn_id":"t1"}"#, None),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(code, "turn_in_flight");
    assert!(message.contains("not finished yet"), "{message}");
}

#[tokio::test]
async fn the_same_turn_id_with_another_message_is_422() {
    let state = slow().state();
    let episode = a_running_turn(&state).await;
    let (status, code, message) = refused(
        &state,
        post_turn(r#"{"message":"something else","turn_id":"t1"}"#, None),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(code, "turn_id_reused");
    assert!(message.contains("different message;"), "{message}");
    // The message names what differs, whichever it is.
    for (body, differs) in [
        (
            r#"{"message":"coffee deals","turn_id":"t1","locale":"fr-FR"}"#,
            "different locale;",
        ),
        (
            r#"{"message":"coffee deals","turn_id":"t1","location":"Leeds"}"#,
            "different location;",
        ),
        (
            r#"{"message":"coffee deals","turn_id":"t1","must_consult":["support"]}"#,
            "different required specialists;",
        ),
        (
            r#"{"message":"coffee deals","turn_id":"t1","direct_line_mode":"strict"}"#,
            "different Direct Line mode;",
        ),
        (
            r#"{"message":"tea deals","turn_id":"t1","locale":"fr-FR"}"#,
            "different message and locale;",
        ),
    ] {
        let (status, _, message) = refused(&state, post_turn(body, None)).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert!(message.contains(differs), "{body}: {message}");
    }
    let body = r#"{"message":"coffee deals","turn_id":"t1","episode_id":"ep_elsewhere"}"#;
    let (status, code, message) = refused(&state, post_turn(body, None)).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, "turn_id_reused")
    );
    assert!(message.contains(&episode), "{message}");
}

#[tokio::test]
async fn another_turn_on_a_busy_episode_is_409() {
    let state = slow().state();
    let episode = a_running_turn(&state).await;
    let body = format!(r#"{{"message":"more","turn_id":"t2","episode_id":"{episode}"}}"#);
    let (status, code, message) = refused(&state, post_turn(&body, None)).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(code, "episode_busy");
    assert!(message.contains("in progress"), "{message}");
}

#[tokio::test]
async fn a_store_that_is_down_is_503_without_its_detail() {
    let state = Rig {
        store: Arc::new(DownStore),
        ..Rig::default()
    }
    .state();
    let (status, code, message) = refused(&state, post_turn(r#"{"message":"hi"}"#, None)).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(code, "unavailable");
    assert!(!message.contains("/var/lib"), "{message}");
    let (status, ..) = refused(&state, get("/v1/episodes/ep_1", None)).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    // Not ready, though alive.
    let (status, code, message) = refused(&state, get("/readyz", None)).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, "unavailable")
    );
    assert!(!message.contains("/var/lib"), "{message}");
    assert_eq!(
        send(&state, get("/healthz", None)).await.status(),
        StatusCode::OK
    );
}

#[tokio::test]
async fn a_store_that_answers_is_ready() {
    let state = Rig::default().state();
    assert_eq!(
        send(&state, get("/readyz", None)).await.status(),
        StatusCode::OK
    );
}

#[tokio::test]
async fn two_principal_headers_are_a_400() {
    let state = Rig::default().state();
    let mut req = post_turn(r#"{"message":"hi"}"#, Some("alice"));
    req.headers_mut()
        .append(baton_http::PRINCIPAL_HEADER, "mallory".parse().unwrap());
    let (status, code, _) = refused(&state, req).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::BAD_REQUEST, "ambiguous_principal")
    );
}

#[tokio::test]
async fn an_unknown_route_is_a_json_404() {
    let state = Rig::default().state();
    let (status, code, _) = refused(&state, get("/v2/nothing", None)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(code, "no_route");
}

#[tokio::test]
async fn metrics_are_absent_unless_configured() {
    let state = Rig {
        metrics: false,
        ..Rig::default()
    }
    .state();
    let (status, ..) = refused(&state, get("/metrics", None)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_wrong_method_is_a_json_405() {
    let state = Rig::default().state();
    let (status, code, _) = refused(&state, get("/v1/turns", None)).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(code, "method_not_allowed");
}
