//! The sample events in `events/` through the handler: who the caller is, what streams out,
//! what is refused.

use lambda_http::request::LambdaRequest;

use crate::support::*;

#[tokio::test]
async fn a_function_url_event_streams_a_turn_as_the_iam_caller() {
    let function = function(SHOP_SCRIPT).await;
    let (out, _) = invoke(&function, &event("function-url-turn.json")).await;
    assert_eq!(out.status, 200);
    assert_eq!(out.headers["content-type"], "text/event-stream");
    let names = out.names();
    assert_eq!(names.first().map(String::as_str), Some("thinking"));
    assert_eq!(names.last().map(String::as_str), Some("completed"));
    assert!(names.contains(&"agents_consulted".to_owned()));
    assert!(
        out.text()
            .ends_with("Bean Street coffee earns 1,000 points.")
    );
    // The turn belongs to the IAM caller of the event, and nobody else.
    assert_eq!(committed(&function, ALICE, &out.episode_id()).await, 1);
    assert_eq!(committed(&function, BOB, &out.episode_id()).await, 0);
}

#[tokio::test]
async fn a_rest_event_streams_a_turn_as_the_iam_identity() {
    let function = function(SHOP_SCRIPT).await;
    let (out, _) = invoke(&function, &event("api-gateway-rest-turn.json")).await;
    assert_eq!(out.status, 200, "{}", out.body);
    assert_eq!(out.headers["content-type"], "text/event-stream");
    assert_eq!(out.names().last().map(String::as_str), Some("completed"));
    assert_eq!(committed(&function, BOB, &out.episode_id()).await, 1);
}

#[tokio::test]
async fn a_rest_event_on_any_stage_reaches_the_turn_route() {
    let function = function(SHOP_SCRIPT).await;
    let mut event = event_json("api-gateway-rest-turn.json");
    event["requestContext"]["stage"] = "prod".into();
    let (out, _) = invoke(&function, &serde_json::to_vec(&event).unwrap()).await;
    assert_eq!(out.status, 200, "{}", out.body);
}

#[tokio::test]
async fn a_request_without_identity_is_forbidden_in_plain_words() {
    let function = function(SHOP_SCRIPT).await;
    let (out, _) = invoke(&function, &event("function-url-turn-no-identity.json")).await;
    assert_eq!(out.status, 403);
    let (code, message) = out.error();
    assert_eq!(code, "forbidden");
    assert_eq!(
        message,
        "this request carries no authenticated identity, so it cannot be served"
    );
}

#[tokio::test]
async fn a_principal_header_never_names_the_caller() {
    // The event carries `x-baton-principal: mallory`; the IAM context says alice.
    let function = function(SHOP_SCRIPT).await;
    let mut event = event_json("function-url-turn.json");
    event["headers"]["x-baton-principal"] = "mallory".into();
    let (out, _) = invoke(&function, &serde_json::to_vec(&event).unwrap()).await;
    assert_eq!(out.status, 200);
    assert_eq!(committed(&function, ALICE, &out.episode_id()).await, 1);
    assert_eq!(committed(&function, "mallory", &out.episode_id()).await, 0);
}

#[tokio::test]
async fn a_principal_in_the_body_is_ignored_and_the_auth_context_wins() {
    // The IAM context says alice; the body claims mallory.
    let function = function(SHOP_SCRIPT).await;
    let event = with_body(
        event_json("function-url-turn.json"),
        r#"{"message":"find me coffee deals","principal":"mallory"}"#,
    );
    let (out, _) = invoke(&function, &event).await;
    assert_eq!(out.status, 200, "{}", out.body);
    assert_eq!(committed(&function, ALICE, &out.episode_id()).await, 1);
    assert_eq!(committed(&function, "mallory", &out.episode_id()).await, 0);
}

#[tokio::test]
async fn a_body_over_the_limit_is_refused_with_413() {
    let function = function_with(SHOP_SCRIPT, &[("BATON_MAX_BODY_BYTES", "64")]).await;
    // A turn's body may add its pictures' room to the limit (D-42), up to Lambda's 6 MB.
    let long = format!(r#"{{"message":"{}"}}"#, "coffee ".repeat(1_000_000));
    let event = with_body(event_json("function-url-turn.json"), &long);
    let (out, _) = invoke(&function, &event).await;
    assert_eq!(out.status, 413);
    assert_eq!(out.error().0, "body_too_large");
    assert!(
        out.error()
            .1
            .contains(&baton_turn::LAMBDA_MAX_REQUEST_BYTES.to_string()),
        "{}",
        out.body
    );
}

#[tokio::test]
async fn a_base64_body_from_the_front_door_is_decoded() {
    let function = function(SHOP_SCRIPT).await;
    let mut event = event_json("function-url-turn.json");
    // `{"message":"find me coffee deals"}`
    event["body"] = "eyJtZXNzYWdlIjoiZmluZCBtZSBjb2ZmZWUgZGVhbHMifQ==".into();
    event["isBase64Encoded"] = true.into();
    let (out, _) = invoke(&function, &serde_json::to_vec(&event).unwrap()).await;
    assert_eq!(out.status, 200, "{}", out.body);
}

#[test]
fn a_malformed_event_is_a_clear_error_not_a_panic() {
    let Err(error) = serde_json::from_slice::<LambdaRequest>(&event("malformed-turn.json")) else {
        panic!("an event of the wrong shape must not parse");
    };
    let text = error.to_string();
    assert!(
        text.contains("expects a JSON payload from Amazon API Gateway"),
        "{text}"
    );
    for bytes in [&b"not json"[..], b"", b"[]", b"{\"version\":\"2.0\"}"] {
        assert!(serde_json::from_slice::<LambdaRequest>(bytes).is_err());
    }
}
