//! The Bedrock model through the real SDK client against the Bedrock-wire fake: what goes
//! on the wire, what comes back as model events, and a whole engine turn over it.

use std::sync::Arc;
use std::time::Duration;

use baton_aws::bedrock::BedrockModel;
use baton_core::message::Message;
use baton_core::ports::model::{
    CallPurpose, Inference, Model, ModelError, ModelEvent, ModelRequest, ReasoningEffort,
    StopReason, SystemBlock, TextVerbosity, TokenUsage, ToolChoice, ToolDef,
};
use baton_core::registry::{ModelCapabilities, ModelSpec, Prices, ReasoningSupport};
use baton_tests::fake_bedrock::{
    DEFAULT_INPUT_TOKENS, DEFAULT_OUTPUT_TOKENS, FakeBedrock, Reply, ToolCall,
};
use futures::StreamExt;
use serde_json::{Value, json};

mod client;
mod engine;
mod failures;
mod pictures;
mod wire;

const CAPABLE: &str = "us.anthropic.claude-haiku-4-5-20251001-v1:0";
const PLAIN: &str = "plain.model-v1";
const UNKNOWN: &str = "unknown.model-v1";

fn spec(model_id: &str, capable: bool) -> Arc<ModelSpec> {
    Arc::new(ModelSpec {
        key: Arc::from(model_id),
        provider: Arc::from("bedrock"),
        model_id: Arc::from(model_id),
        context_window: 200_000,
        prices: Prices::default(),
        capabilities: ModelCapabilities {
            tool_choice: capable,
            cache_points: capable,
            parallel_tool_calls: capable,
            reasoning_effort: capable.then_some(ReasoningSupport::Thinking),
            text_verbosity: false,
            pictures: false,
        },
        endpoint: None,
    })
}

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": { "type": "string" },
            "intent_count": { "type": "integer", "minimum": 1 }
        },
        "required": ["query"],
        "additionalProperties": false
    })
}

fn request(model_id: &str) -> ModelRequest {
    ModelRequest {
        agent_id: Arc::from("orchestrator"),
        model_id: Arc::from(model_id),
        purpose: CallPurpose::Route,
        system: vec![
            SystemBlock {
                text: Arc::from("You route requests."),
                cache_point: true,
            },
            SystemBlock {
                text: Arc::from("Today is 2026-11-21."),
                cache_point: false,
            },
        ],
        messages: vec![Message::user("any coffee deals?")],
        tools: Arc::from(vec![
            ToolDef {
                name: Arc::from("ask_shop"),
                description: Arc::from("Offers and deals."),
                input_schema: Arc::new(schema()),
            },
            ToolDef {
                name: Arc::from("ask_support"),
                description: Arc::from("Receipt problems."),
                input_schema: Arc::new(schema()),
            },
        ]),
        tool_choice: ToolChoice::Auto,
        inference: Inference {
            max_output_tokens: Some(512),
            temperature: Some(0.0),
            ..Inference::default()
        },
    }
}

async fn model(fake: &FakeBedrock) -> BedrockModel {
    fake.bedrock_model([spec(CAPABLE, true), spec(PLAIN, false)])
        .await
}

async fn events(
    model: &BedrockModel,
    request: &ModelRequest,
) -> Vec<Result<ModelEvent, ModelError>> {
    model.stream(request).collect().await
}

fn ok(events: Vec<Result<ModelEvent, ModelError>>) -> Vec<ModelEvent> {
    events
        .into_iter()
        .map(|e| e.unwrap_or_else(|e| panic!("unexpected error: {e}")))
        .collect()
}

/// Tool calls as (id, name, concatenated argument text), in start order.
fn calls(events: &[ModelEvent]) -> Vec<(String, String, String)> {
    let mut out: Vec<(String, String, String, bool)> = Vec::new();
    for e in events {
        match e {
            ModelEvent::ToolUseStart { id, name } => {
                out.push((id.clone(), name.clone(), String::new(), false));
            }
            ModelEvent::ToolUseDelta { id, fragment } => {
                let call = out.iter_mut().find(|c| &c.0 == id).unwrap();
                assert!(!call.3, "fragment after the call's stop");
                call.2.push_str(fragment);
            }
            ModelEvent::ToolUseStop { id } => out.iter_mut().find(|c| &c.0 == id).unwrap().3 = true,
            _ => {}
        }
    }
    assert!(out.iter().all(|c| c.3), "a tool call never stopped");
    out.into_iter()
        .map(|(id, name, args, _)| (id, name, args))
        .collect()
}

fn default_usage() -> ModelEvent {
    ModelEvent::Usage(TokenUsage {
        input: DEFAULT_INPUT_TOKENS,
        output: DEFAULT_OUTPUT_TOKENS,
        cache_read: 0,
        cache_write: 0,
    })
}

// ---- answers ----

#[tokio::test]
async fn text_streams_as_deltas_then_stop_then_usage() {
    let fake = FakeBedrock::with_replies([Reply::text("Roast coffee is 20% off.")])
        .await
        .unwrap();
    let got = ok(events(&model(&fake).await, &request(CAPABLE)).await);
    assert_eq!(
        got,
        vec![
            ModelEvent::TextDelta("Roast ".into()),
            ModelEvent::TextDelta("coffee ".into()),
            ModelEvent::TextDelta("is ".into()),
            ModelEvent::TextDelta("20% ".into()),
            ModelEvent::TextDelta("off.".into()),
            ModelEvent::Stop(StopReason::EndTurn),
            default_usage(),
        ]
    );
}

#[tokio::test]
async fn one_tool_use_arrives_as_start_fragments_and_stop() {
    let args = json!({"query": "coffee deals", "intent_count": 1});
    let fake = FakeBedrock::with_replies([Reply::tool_use("tooluse_1", "ask_shop", args.clone())])
        .await
        .unwrap();
    let got = ok(events(&model(&fake).await, &request(CAPABLE)).await);
    let fragments = got
        .iter()
        .filter(|e| matches!(e, ModelEvent::ToolUseDelta { .. }))
        .count();
    assert!(
        fragments > 1,
        "arguments should arrive in several fragments"
    );
    let calls = calls(&got);
    assert_eq!(calls.len(), 1);
    assert_eq!((&*calls[0].0, &*calls[0].1), ("tooluse_1", "ask_shop"));
    assert_eq!(serde_json::from_str::<Value>(&calls[0].2).unwrap(), args);
    assert_eq!(
        &got[got.len() - 2..],
        &[ModelEvent::Stop(StopReason::ToolUse), default_usage()]
    );
}

#[tokio::test]
async fn parallel_tool_uses_keep_their_own_arguments_after_text() {
    let shop = json!({"query": "coffee deals", "intent_count": 2});
    let support = json!({"query": "receipt R-7 did not scan", "intent_count": 2});
    let fake = FakeBedrock::with_replies([Reply::text_then_tools(
        "Checking both. ",
        [
            ToolCall::new("t_shop", "ask_shop", shop.clone()),
            ToolCall::new("t_support", "ask_support", support.clone()),
        ],
    )])
    .await
    .unwrap();
    let got = ok(events(&model(&fake).await, &request(CAPABLE)).await);
    assert_eq!(got[0], ModelEvent::TextDelta("Checking ".into()));
    let calls = calls(&got);
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].1, "ask_shop");
    assert_eq!(serde_json::from_str::<Value>(&calls[0].2).unwrap(), shop);
    assert_eq!(calls[1].1, "ask_support");
    assert_eq!(serde_json::from_str::<Value>(&calls[1].2).unwrap(), support);
}

#[tokio::test]
async fn reasoning_is_kept_apart_from_the_answer() {
    let fake =
        FakeBedrock::with_replies([Reply::text("Yes.").with_reasoning(["The user ", "asks."])])
            .await
            .unwrap();
    let got = ok(events(&model(&fake).await, &request(CAPABLE)).await);
    assert_eq!(
        &got[..3],
        &[
            ModelEvent::ReasoningDelta("The user ".into()),
            ModelEvent::ReasoningDelta("asks.".into()),
            ModelEvent::TextDelta("Yes.".into()),
        ]
    );
}

#[tokio::test]
async fn malformed_tool_arguments_pass_through_unchanged() {
    let fragments = ["{\"query\": ", "\"coffee", "\", \"intent_count\": }"];
    let fake = FakeBedrock::with_replies([Reply::tool_use_raw("t1", "ask_shop", fragments)])
        .await
        .unwrap();
    let got = ok(events(&model(&fake).await, &request(CAPABLE)).await);
    let seen: Vec<&str> = got
        .iter()
        .filter_map(|e| match e {
            ModelEvent::ToolUseDelta { id, fragment } if id == "t1" => Some(fragment.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(seen, fragments);
    assert!(got.contains(&ModelEvent::ToolUseStop { id: "t1".into() }));
}

#[tokio::test]
async fn usage_with_cache_tokens_is_mapped() {
    let fake = FakeBedrock::with_replies([Reply::text("Hi.").usage(7, 3).cache_usage(1_200, 300)])
        .await
        .unwrap();
    let got = ok(events(&model(&fake).await, &request(CAPABLE)).await);
    assert_eq!(
        got.last(),
        Some(&ModelEvent::Usage(TokenUsage {
            input: 7,
            output: 3,
            cache_read: 1_200,
            cache_write: 300,
        }))
    );
}

#[tokio::test]
async fn a_slow_first_byte_still_streams_the_whole_answer() {
    let fake = FakeBedrock::with_replies([
        Reply::text("Late but whole.").first_byte_delay(Duration::from_millis(300))
    ])
    .await
    .unwrap();
    let got = ok(events(&model(&fake).await, &request(CAPABLE)).await);
    let text: String = got
        .iter()
        .filter_map(|e| match e {
            ModelEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Late but whole.");
    assert!(got.contains(&ModelEvent::Stop(StopReason::EndTurn)));
}

/// The events, and the error that ended the stream (which must be last).
fn split_error(events: Vec<Result<ModelEvent, ModelError>>) -> (Vec<ModelEvent>, ModelError) {
    let mut ok = Vec::new();
    let mut it = events.into_iter();
    for e in it.by_ref() {
        match e {
            Ok(e) => ok.push(e),
            Err(e) => {
                assert!(it.next().is_none(), "something followed an error");
                return (ok, e);
            }
        }
    }
    panic!("the stream ended without an error: {ok:?}");
}
