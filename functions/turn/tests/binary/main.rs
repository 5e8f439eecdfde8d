//! The real `turn` binary under a local Lambda Runtime API
//! ([`baton_tests::runtime_api::FakeRuntimeApi`]), talking to DynamoDB Local, an S3 server
//! (s3s over HTTP on a loopback port) and the Bedrock-wire fake, all through the SDK's
//! standard endpoint variables. What the binary posts back is checked byte for byte: the
//! response-mode headers, the JSON prelude, 8 NUL bytes, then the SSE frames.
//!
//! Cargo builds the binary for this package's integration tests (`CARGO_BIN_EXE_turn`),
//! with the same code and features as the tests themselves.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod rig;

use baton_tests::otlp_receiver::{OtlpReceiver, Traces};
use baton_tests::runtime_api::PostKind;
use serde_json::{Value, json};

use crate::rig::*;

#[tokio::test]
async fn the_binary_streams_a_turn_in_the_lambda_wire_format() {
    let rig = Rig::start().await;
    let init = rig
        .running
        .wait_line(WAIT, |l| l.contains("\"init_us\""))
        .await;
    let init: Value = serde_json::from_str(&init).unwrap();
    assert!(init["init_us"].as_u64().is_some(), "{init}");

    let body = json!({"message": "find me coffee deals", "turn_id": "t-binary-1"});
    let posted = rig
        .invoke("req-1", with_body(event("function-url-turn.json"), body))
        .await;
    assert_streaming_headers(&posted);
    let bytes = posted.body();
    let (prelude, nuls, sse) = split(&bytes);
    assert_eq!(nuls, [0u8; 8]);
    let episode = serde_json::from_str::<Value>(prelude).unwrap()["headers"]["x-baton-episode-id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        prelude,
        format!(
            "{{\"statusCode\":200,\"headers\":{{\"content-type\":\"text/event-stream\",\
             \"cache-control\":\"no-cache\",\"x-baton-protocol\":\"1\",\"x-accel-buffering\":\"no\",\
             \"x-baton-turn-id\":\"t-binary-1\",\"x-baton-episode-id\":\"{episode}\"}},\
             \"cookies\":[]}}"
        )
    );
    let expected = EXPECTED_FRAMES.replace("{episode}", &episode);
    assert_eq!(without_durations(sse), expected);
    // The prelude went out as its own chunk, before any frame.
    assert_eq!(posted.chunks[0], prelude.as_bytes());
    // Every model call used the id the deployment gave (BATON_MODEL_IDS).
    let models: Vec<String> = rig
        .services
        .bedrock
        .requests()
        .into_iter()
        .map(|r| r.model_id)
        .collect();
    assert_eq!(models, vec![HAIKU_ID; 3], "{models:?}");

    // After the stream: metrics for this invocation, then a request for the next event.
    let emf = rig
        .running
        .wait_line(WAIT, |l| {
            l.contains("\"_aws\"") && l.contains("\"turns_total\"")
        })
        .await;
    let emf: Value = serde_json::from_str(&emf).unwrap();
    assert_eq!(emf["RequestId"], "req-1");
    assert_eq!(emf["outcome"], "answered");
    assert!(rig.api.wait_for_next_calls(2, WAIT).await);
}

/// Every frame of the turn, durations zeroed: routing preamble, the composed answer word
/// by word (the fake streams word by word; the privacy guard holds back what could still
/// start a value, so `1,000 ` leaves in two pieces), the consulted record, usage at the registry's
/// prices (3 calls x 10 in / 5 out tokens of claude-haiku), completion.
const EXPECTED_FRAMES: &str = concat!(
    "id: 1\nevent: thinking\ndata: {\"v\":1,\"turn_id\":\"t-binary-1\",\"seq\":1,\"type\":\"thinking\"}\n\n",
    "id: 2\nevent: response_id\ndata: {\"v\":1,\"turn_id\":\"t-binary-1\",\"seq\":2,\"type\":\"response_id\",\"response_id\":\"t-binary-1\",\"episode_id\":\"{episode}\"}\n\n",
    "id: 3\nevent: text\ndata: {\"v\":1,\"turn_id\":\"t-binary-1\",\"seq\":3,\"type\":\"text\",\"source\":\"orchestrator\",\"text\":\"Let me check. \"}\n\n",
    "id: 4\nevent: text\ndata: {\"v\":1,\"turn_id\":\"t-binary-1\",\"seq\":4,\"type\":\"text\",\"source\":\"orchestrator\",\"text\":\"\\n\\nBean \"}\n\n",
    "id: 5\nevent: text\ndata: {\"v\":1,\"turn_id\":\"t-binary-1\",\"seq\":5,\"type\":\"text\",\"source\":\"orchestrator\",\"text\":\"Street \"}\n\n",
    "id: 6\nevent: text\ndata: {\"v\":1,\"turn_id\":\"t-binary-1\",\"seq\":6,\"type\":\"text\",\"source\":\"orchestrator\",\"text\":\"coffee \"}\n\n",
    "id: 7\nevent: text\ndata: {\"v\":1,\"turn_id\":\"t-binary-1\",\"seq\":7,\"type\":\"text\",\"source\":\"orchestrator\",\"text\":\"earns \"}\n\n",
    "id: 8\nevent: text\ndata: {\"v\":1,\"turn_id\":\"t-binary-1\",\"seq\":8,\"type\":\"text\",\"source\":\"orchestrator\",\"text\":\"1,\"}\n\n",
    "id: 9\nevent: text\ndata: {\"v\":1,\"turn_id\":\"t-binary-1\",\"seq\":9,\"type\":\"text\",\"source\":\"orchestrator\",\"text\":\"000 \"}\n\n",
    "id: 10\nevent: text\ndata: {\"v\":1,\"turn_id\":\"t-binary-1\",\"seq\":10,\"type\":\"text\",\"source\":\"orchestrator\",\"text\":\"points.\"}\n\n",
    "id: 11\nevent: agents_consulted\ndata: {\"v\":1,\"turn_id\":\"t-binary-1\",\"seq\":11,\"type\":\"agents_consulted\",\"agents\":[{\"agent_id\":\"shop\",\"label\":\"Shopping\",\"status\":\"ok\",\"duration_ms\":0,\"tool_calls\":0}],\"footer\":\"Consulted: Shopping\"}\n\n",
    "id: 12\nevent: usage\ndata: {\"v\":1,\"turn_id\":\"t-binary-1\",\"seq\":12,\"type\":\"usage\",\"models\":[{\"model\":\"claude-haiku\",\"calls\":3,\"input\":30,\"output\":15,\"cache_read\":0,\"cache_write\":0,\"cost_usd\":0.000105}],\"cost_usd\":0.000105}\n\n",
    "id: 13\nevent: completed\ndata: {\"v\":1,\"turn_id\":\"t-binary-1\",\"seq\":13,\"type\":\"completed\",\"outcome\":\"answered\",\"privacy\":{\"total\":0,\"by_kind\":{}}}\n\n",
);

#[tokio::test]
async fn the_binary_refuses_no_identity_survives_a_malformed_event_and_goes_on() {
    let rig = Rig::start().await;

    let posted = rig
        .invoke(
            "req-anon",
            serde_json::to_vec(&event("function-url-turn-no-identity.json")).unwrap(),
        )
        .await;
    assert_streaming_headers(&posted);
    let bytes = posted.body();
    let (prelude, _, body) = split(&bytes);
    assert_eq!(
        prelude,
        "{\"statusCode\":403,\"headers\":{\"content-type\":\"application/json\",\"content-length\":\"152\"},\"cookies\":[]}"
    );
    assert_eq!(
        body,
        "{\"error\":{\"code\":\"forbidden\",\"message\":\"this request carries no authenticated identity, so it cannot be served\",\"param\":null,\"type\":\"permission_error\"}}"
    );

    let posted = rig
        .invoke(
            "req-bad",
            serde_json::to_vec(&event("malformed-turn.json")).unwrap(),
        )
        .await;
    assert_eq!(posted.kind, PostKind::Error);
    let error: Value = serde_json::from_slice(&posted.body()).unwrap();
    let message = error["errorMessage"].as_str().unwrap();
    assert!(
        message.contains("expects a JSON payload from Amazon API Gateway"),
        "{error}"
    );

    // Still serving.
    let posted = rig
        .invoke(
            "req-ok",
            serde_json::to_vec(&event("api-gateway-rest-turn.json")).unwrap(),
        )
        .await;
    assert_streaming_headers(&posted);
    let bytes = posted.body();
    let (prelude, _, sse) = split(&bytes);
    assert!(prelude.starts_with("{\"statusCode\":200,"), "{prelude}");
    assert!(sse.contains("event: completed"), "{sse}");
}

#[tokio::test]
async fn the_invocations_spans_and_metrics_are_sent_before_it_asks_for_the_next_event() {
    // A stand-in for the collector extension.
    let receiver = OtlpReceiver::start(Traces::Take);
    // The exporters' own schedules would wait ten minutes: only the flush at the end of
    // the invocation can send the spans and metrics in time.
    let rig = Rig::start_with(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url.as_str()),
        ("OTEL_BSP_SCHEDULE_DELAY", "600000"),
        ("OTEL_METRIC_EXPORT_INTERVAL", "600000"),
    ])
    .await;
    assert!(receiver.span_names().is_empty());
    let body = json!({"message": "find me coffee deals", "turn_id": "t-binary-otel"});
    let posted = rig
        .invoke("req-otel", with_body(event("function-url-turn.json"), body))
        .await;
    assert_streaming_headers(&posted);
    assert!(
        rig.api.wait_for_next_calls(2, WAIT).await,
        "the binary never asked for its next event; stdout: {:#?}",
        rig.running.lines()
    );
    let names = receiver.span_names();
    assert!(
        names.iter().any(|n| n == "invoke_agent") && names.iter().any(|n| n == "chat"),
        "the turn's spans did not reach the receiver before the next event was asked for: \
         {names:?}; stdout: {:#?}",
        rig.running.lines()
    );
    // The same counters and measurements as the EMF lines, with the same dimensions.
    assert_eq!(
        receiver.counter("turns_total", &[("outcome", "answered")]),
        Some(1),
        "stdout: {:#?}",
        rig.running.lines()
    );
    assert!(
        receiver
            .histogram_count("turn_latency_ms", &[])
            .is_some_and(|n| n >= 1)
    );
    assert!(
        receiver
            .counter("model_tokens_total", &[])
            .is_some_and(|n| n > 0)
    );
    assert!(
        receiver
            .histogram_count("time_to_first_event_ms", &[])
            .is_some_and(|n| n >= 1)
    );
}

#[tokio::test]
async fn the_binary_serves_chat_completions_streamed_in_the_lambda_wire_format() {
    let rig = Rig::start().await;
    let mut url_event = event("function-url-turn.json");
    url_event["rawPath"] = "/v1/chat/completions".into();
    url_event["requestContext"]["http"]["path"] = "/v1/chat/completions".into();
    let body = json!({
        "model": "baton",
        "messages": [{"role": "user", "content": "find me coffee deals"}],
        "stream": true,
    });
    let posted = rig.invoke("req-chat", with_body(url_event, body)).await;
    assert_streaming_headers(&posted);
    let bytes = posted.body();
    let (prelude, _, sse) = split(&bytes);
    let prelude: Value = serde_json::from_str(prelude).unwrap();
    assert_eq!(prelude["statusCode"], 200, "{prelude}");
    assert_eq!(prelude["headers"]["content-type"], "text/event-stream");
    let data: Vec<&str> = sse
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .collect();
    assert_eq!(data.last(), Some(&"[DONE]"), "{sse}");
    let chunks: Vec<Value> = data[..data.len() - 1]
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let content: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert!(!content.is_empty(), "{sse}");
    let finish = chunks.last().unwrap();
    assert_eq!(finish["choices"][0]["finish_reason"], "stop", "{sse}");
    assert_eq!(finish["baton"]["consulted"][0]["agent_id"], "shop", "{sse}");
}

#[tokio::test]
async fn the_binary_serves_an_ag_ui_run_in_the_lambda_wire_format() {
    let rig = Rig::start().await;
    let mut url_event = event("function-url-turn.json");
    url_event["rawPath"] = "/v1/agui".into();
    url_event["requestContext"]["http"]["path"] = "/v1/agui".into();
    let input = json!({
        "threadId": "thread-lambda",
        "runId": "run-lambda",
        "messages": [{"id": "m1", "role": "user", "content": "find me coffee deals"}],
    });
    let posted = rig.invoke("req-agui", with_body(url_event, input)).await;
    assert_streaming_headers(&posted);
    let bytes = posted.body();
    let (prelude, _, sse) = split(&bytes);
    let prelude: Value = serde_json::from_str(prelude).unwrap();
    assert_eq!(prelude["statusCode"], 200, "{prelude}");
    let events: Vec<Value> = sse
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert_eq!(events.first().unwrap()["type"], "RUN_STARTED", "{sse}");
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED", "{sse}");
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "CUSTOM" && e["value"]["agents"][0]["agent_id"] == "shop"),
        "{sse}"
    );
}

#[tokio::test]
async fn the_binary_serves_a2a_discovery_and_a_streamed_task_in_the_lambda_wire_format() {
    let rig = Rig::start().await;
    let mut card_event = event("function-url-turn.json");
    card_event["rawPath"] = "/.well-known/agent-card.json".into();
    card_event["requestContext"]["http"]["path"] = "/.well-known/agent-card.json".into();
    card_event["requestContext"]["http"]["method"] = "GET".into();
    card_event["body"] = Value::Null;
    let card = rig
        .invoke("req-card", serde_json::to_vec(&card_event).unwrap())
        .await;
    let bytes = card.body();
    let (prelude, _, body) = split(&bytes);
    let prelude: Value = serde_json::from_str(prelude).unwrap();
    assert_eq!(prelude["statusCode"], 200, "{prelude}");
    let card: Value = serde_json::from_str(body).unwrap();
    // The card points at the function URL the client used, over https.
    assert_eq!(
        card["supportedInterfaces"][0]["url"],
        "https://abcdefghijklmnopqrstuvwxyz012345.lambda-url.us-east-1.on.aws/a2a",
        "{card}"
    );
    assert!(card["securitySchemes"]["sigv4"].is_object(), "{card}");

    let mut url_event = event("function-url-turn.json");
    url_event["rawPath"] = "/a2a".into();
    url_event["requestContext"]["http"]["path"] = "/a2a".into();
    let call = json!({
        "jsonrpc": "2.0", "id": "1", "method": "SendStreamingMessage",
        "params": { "message": {
            "messageId": "m-lambda", "role": "ROLE_USER",
            "parts": [{ "text": "find me coffee deals" }]
        } },
    });
    let posted = rig.invoke("req-a2a", with_body(url_event, call)).await;
    assert_streaming_headers(&posted);
    let bytes = posted.body();
    let (prelude, _, sse) = split(&bytes);
    let prelude: Value = serde_json::from_str(prelude).unwrap();
    assert_eq!(prelude["statusCode"], 200, "{prelude}");
    let results: Vec<Value> = sse
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str::<Value>(d).unwrap()["result"].clone())
        .collect();
    assert_eq!(
        results[0]["task"]["status"]["state"], "TASK_STATE_SUBMITTED",
        "{sse}"
    );
    let last = &results.last().unwrap()["statusUpdate"];
    assert_eq!(last["status"]["state"], "TASK_STATE_COMPLETED", "{sse}");
    assert_eq!(
        last["metadata"]["baton"]["consulted"][0]["agent_id"], "shop",
        "{sse}"
    );
}

#[tokio::test]
async fn the_binary_serves_an_mcp_tool_call_in_the_lambda_wire_format() {
    let rig = Rig::start().await;
    let mut url_event = event("function-url-turn.json");
    url_event["rawPath"] = "/mcp".into();
    url_event["requestContext"]["http"]["path"] = "/mcp".into();
    url_event["headers"]["accept"] = "application/json, text/event-stream".into();
    let call = json!({
        "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {
            "name": "ask",
            "arguments": { "message": "find me coffee deals" },
            "_meta": { "progressToken": "p-lambda" },
        },
    });
    let posted = rig.invoke("req-mcp", with_body(url_event, call)).await;
    assert_streaming_headers(&posted);
    let bytes = posted.body();
    let (prelude, _, sse) = split(&bytes);
    let prelude: Value = serde_json::from_str(prelude).unwrap();
    // The function URL's host is answered: its requests arrive authenticated.
    assert_eq!(prelude["statusCode"], 200, "{prelude} {sse}");
    let messages: Vec<Value> = sse
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let result = &messages
        .iter()
        .find(|m| m["id"] == 3)
        .unwrap_or_else(|| panic!("no result in {sse}"))["result"];
    assert_ne!(result["isError"], true, "{sse}");
    assert_eq!(
        result["structuredContent"]["consulted"][0]["agent_id"], "shop",
        "{sse}"
    );
}
