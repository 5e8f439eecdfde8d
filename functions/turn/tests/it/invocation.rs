//! The end of an invocation: turns commit even when the client left, errors stay events,
//! metrics go out after the stream.

use futures::StreamExt;
use serde_json::Value;

use crate::support::*;

/// Composes slowly, so that the client can leave in the middle.
const SLOW_SCRIPT: &str = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      text: ["Checking offers. "]
      tool_calls: [{ name: ask_shop, args: { query: "coffee deals", intent_count: 1 } }]
    - when: { purpose: compose }
      chunk_delay_ms: 30
      text: ["Bean ", "Street ", "coffee ", "earns ", "1,000 ", "points."]
  shop:
    - delay_ms: 30
      text: ["Bean Street coffee earns 1,000 points."]
"#;

#[tokio::test]
async fn a_client_that_leaves_mid_stream_still_gets_its_turn_committed() {
    let function = function(SLOW_SCRIPT).await;
    let (prelude, mut stream) = start(&function, &event("function-url-turn.json")).await;
    assert_eq!(prelude.status_code, 200);
    // Read the first frames (thinking, response_id), then leave.
    let mut seen = String::new();
    while !seen.contains("event: response_id") {
        let chunk = stream.next().await.unwrap().unwrap();
        seen.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    let episode = serde_json::from_str::<Value>(
        seen.lines()
            .find_map(|l| {
                l.strip_prefix("data: ")
                    .filter(|d| d.contains("episode_id"))
            })
            .unwrap(),
    )
    .unwrap()["episode_id"]
        .as_str()
        .unwrap()
        .to_owned();
    drop(stream);
    assert_eq!(
        function.tracker.running(),
        1,
        "the turn goes on without its reader"
    );
    end_invocation(&function).await;
    assert_eq!(function.tracker.running(), 0);
    assert_eq!(committed(&function, ALICE, &episode).await, 1);
    let history = function
        .runtime
        .history(&baton_core::Principal::new(ALICE).unwrap(), &episode)
        .await
        .unwrap();
    let json = serde_json::to_value(&history).unwrap();
    assert!(
        json.to_string()
            .contains("Bean Street coffee earns 1,000 points."),
        "{json}"
    );
}

#[tokio::test]
async fn a_failed_model_call_is_an_error_event_then_the_stream_closes() {
    let script = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      error: invalid
"#;
    let function = function(script).await;
    let (out, _) = invoke(&function, &event("function-url-turn.json")).await;
    assert_eq!(out.status, 200);
    let names = out.names();
    assert!(names.contains(&"error".to_owned()), "{names:?}");
    assert_eq!(names.last().map(String::as_str), Some("completed"));
    let message = out.data_of("error")[0]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(message.starts_with("I'm having trouble"), "{message}");
    for leak in [
        "Runtime.StreamError",
        "invalid",
        "model rejected",
        "Error-Type",
    ] {
        assert!(
            !out.body.contains(leak),
            "{leak} reached the client: {}",
            out.body
        );
    }
}

fn line_with<'a>(lines: &'a [Value], metric: &str, dims: &[(&str, &str)]) -> &'a Value {
    lines
        .iter()
        .find(|l| l.get(metric).is_some() && dims.iter().all(|(k, v)| l[*k] == *v))
        .unwrap_or_else(|| panic!("no EMF line carries {metric} with {dims:?}: {lines:#?}"))
}

fn unit_of(line: &Value, metric: &str) -> String {
    line["_aws"]["CloudWatchMetrics"][0]["Metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["Name"] == metric)
        .map(|m| m["Unit"].as_str().unwrap().to_owned())
        .unwrap()
}

#[tokio::test]
async fn metrics_of_the_turn_are_written_once_the_invocation_ends() {
    let function = function(SHOP_SCRIPT).await;
    let (out, lines) = invoke(&function, &event("function-url-turn.json")).await;
    assert_eq!(out.status, 200);
    for line in &lines {
        assert_eq!(line["RequestId"], "req-1");
        assert_eq!(line["_aws"]["CloudWatchMetrics"][0]["Namespace"], "Baton");
    }
    let turn = line_with(&lines, "turns_total", &[("outcome", "answered")]);
    assert_eq!(turn["turns_total"], 1);
    let latency = line_with(&lines, "turn_latency_ms", &[("outcome", "answered")]);
    assert_eq!(unit_of(latency, "turn_latency_ms"), "Milliseconds");
    let ttfe = line_with(&lines, "time_to_first_event_ms", &[]);
    assert_eq!(unit_of(ttfe, "time_to_first_event_ms"), "Milliseconds");
    assert_eq!(ttfe["time_to_first_event_ms"].as_array().unwrap().len(), 1);
    let agent = line_with(
        &lines,
        "subagent_latency_ms",
        &[("agent", "shop"), ("outcome", "ok")],
    );
    assert_eq!(agent["subagent_invocations_total"], 1);
    assert_eq!(
        line_with(&lines, "fanout_width", &[])["fanout_width"],
        serde_json::json!([1.0])
    );
    let tokens = line_with(
        &lines,
        "model_tokens_total",
        &[("model", "claude-haiku"), ("kind", "input")],
    );
    assert_eq!(unit_of(tokens, "model_tokens_total"), "Count");
    let cost = line_with(&lines, "turn_cost_usd", &[]);
    assert_eq!(unit_of(cost, "turn_cost_usd"), "None");
    assert!(cost["turn_cost_usd"][0].as_f64().unwrap() > 0.0);
    // Nothing is left for the next invocation.
    assert!(end_invocation(&function).await.is_empty());
}

#[tokio::test]
async fn a_guard_firing_is_counted_by_guard() {
    // Two intents reported, one call made: the intent_count failsafe re-asks (D-7).
    let script = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      tool_calls: [{ name: ask_shop, args: { query: "coffee deals", intent_count: 2 } }]
    - when: { purpose: reminder }
      text: []
    - when: { purpose: compose }
      text: ["Done."]
  shop:
    - text: ["Bean Street coffee earns 1,000 points."]
"#;
    let function = function(script).await;
    let (out, lines) = invoke(&function, &event("function-url-turn.json")).await;
    assert_eq!(out.names().last().map(String::as_str), Some("completed"));
    let guards: Vec<&str> = lines
        .iter()
        .filter(|l| l.get("guard_firings_total").is_some())
        .map(|l| l["guard"].as_str().unwrap())
        .collect();
    assert!(guards.contains(&"intent_count"), "{guards:?} in {lines:#?}");
}
