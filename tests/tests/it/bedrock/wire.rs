//! The request on the wire.

use super::*;
use baton_core::message::{Content, Role, ToolResultStatus};
use baton_tests::fake_bedrock::{SystemPart, WireToolChoice};

#[tokio::test]
async fn a_cache_point_follows_the_stable_prefix_only_for_capable_models() {
    let fake = FakeBedrock::with_handler(|_| Reply::text("ok"))
        .await
        .unwrap();
    let model = model(&fake).await;
    for id in [CAPABLE, PLAIN, UNKNOWN] {
        ok(events(&model, &request(id)).await);
    }
    let requests = fake.requests();
    let stable = SystemPart::Text("You route requests.".into());
    let dynamic = SystemPart::Text("Today is 2026-11-21.".into());
    assert_eq!(requests[0].model_id, CAPABLE);
    assert_eq!(
        requests[0].system(),
        vec![stable.clone(), SystemPart::CachePoint, dynamic.clone()]
    );
    assert_eq!(requests[1].system(), vec![stable.clone(), dynamic.clone()]);
    assert_eq!(requests[2].system(), vec![stable, dynamic]);
}

#[tokio::test]
async fn tool_choice_goes_on_the_wire_as_the_model_allows() {
    let fake = FakeBedrock::with_handler(|_| Reply::text("ok"))
        .await
        .unwrap();
    let model = model(&fake).await;
    let cases = [
        (CAPABLE, ToolChoice::Auto, WireToolChoice::Auto),
        (CAPABLE, ToolChoice::Any, WireToolChoice::Any),
        (
            CAPABLE,
            ToolChoice::Tool("ask_shop".into()),
            WireToolChoice::Tool("ask_shop".into()),
        ),
        // Forcing a named tool is not offered by this model: "any tool" instead.
        (
            PLAIN,
            ToolChoice::Tool("ask_shop".into()),
            WireToolChoice::Any,
        ),
        (
            UNKNOWN,
            ToolChoice::Tool("ask_shop".into()),
            WireToolChoice::Any,
        ),
        // Bedrock has no "none": the tools stay, with auto.
        (CAPABLE, ToolChoice::None, WireToolChoice::Auto),
    ];
    for (id, choice, _) in &cases {
        let mut req = request(id);
        req.tool_choice = choice.clone();
        ok(events(&model, &req).await);
    }
    let requests = fake.requests();
    for (i, (_, choice, wire)) in cases.iter().enumerate() {
        assert_eq!(
            requests[i].tool_choice().as_ref(),
            Some(wire),
            "{choice:?} on request {i}"
        );
        assert_eq!(requests[i].tool_names(), ["ask_shop", "ask_support"]);
    }
}

#[tokio::test]
async fn tool_schemas_and_limits_are_sent() {
    let fake = FakeBedrock::with_handler(|_| Reply::text("ok"))
        .await
        .unwrap();
    ok(events(&model(&fake).await, &request(CAPABLE)).await);
    let sent = &fake.requests()[0];
    assert_eq!(sent.tool_schema("ask_shop"), Some(&schema()));
    assert_eq!(sent.tool_schema("ask_support"), Some(&schema()));
    assert_eq!(sent.max_tokens(), Some(512));
    assert_eq!(sent.temperature(), Some(0.0));
    assert_eq!(sent.last_user_text().as_deref(), Some("any coffee deals?"));
}

#[tokio::test]
async fn tool_uses_and_results_go_back_with_their_status() {
    let fake = FakeBedrock::with_handler(|_| Reply::text("ok"))
        .await
        .unwrap();
    let mut req = request(CAPABLE);
    req.messages.push(Message {
        role: Role::Assistant,
        content: vec![
            Content::Text {
                text: "Checking.".into(),
            },
            Content::ToolUse {
                id: "t1".into(),
                name: "ask_shop".into(),
                input: json!({"query": "coffee"}).into(),
            },
            Content::ToolUse {
                id: "t2".into(),
                name: "ask_support".into(),
                input: json!({"query": "receipt"}).into(),
            },
        ],
    });
    req.messages.push(Message {
        role: Role::User,
        content: vec![
            Content::ToolResult {
                id: "t1".into(),
                status: ToolResultStatus::Ok,
                content: json!({"offers": ["Roast coffee"]}),
            },
            Content::ToolResult {
                id: "t2".into(),
                status: ToolResultStatus::Error,
                content: json!("The receipt service is unavailable."),
            },
        ],
    });
    ok(events(&model(&fake).await, &req).await);
    let sent = &fake.requests()[0];
    assert!(sent.last_has_tool_results());
    let results = sent.last_tool_results();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].id, "t1");
    assert!(!results[0].is_error);
    assert_eq!(
        results[0].content,
        [json!({"json": {"offers": ["Roast coffee"]}})]
    );
    assert_eq!(results[1].id, "t2");
    assert!(results[1].is_error);
    assert_eq!(
        results[1].content,
        [json!({"text": "The receipt service is unavailable."})]
    );
    let assistant = &sent.messages()[1];
    assert_eq!(
        assistant["content"][1],
        json!({"toolUse": {"toolUseId": "t1", "name": "ask_shop", "input": {"query": "coffee"}}})
    );
    // The user's text is still found behind the tool results.
    assert_eq!(sent.last_user_text().as_deref(), Some("any coffee deals?"));
}

/// `request(id)` with a reasoning effort and no temperature (thinking takes none).
fn thinking_request(id: &str, effort: ReasoningEffort) -> ModelRequest {
    let mut req = request(id);
    req.inference = Inference {
        max_output_tokens: Some(512),
        reasoning_effort: Some(effort),
        ..Inference::default()
    };
    req
}

#[tokio::test]
async fn a_reasoning_effort_goes_on_the_wire_as_extended_thinking() {
    let fake = FakeBedrock::with_handler(|_| Reply::text("ok"))
        .await
        .unwrap();
    let model = model(&fake).await;
    for effort in [
        ReasoningEffort::Low,
        ReasoningEffort::Medium,
        ReasoningEffort::High,
    ] {
        ok(events(&model, &thinking_request(CAPABLE, effort)).await);
    }
    let requests = fake.requests();
    for (sent, budget) in requests.iter().zip([1_024u64, 4_096, 16_384]) {
        assert_eq!(
            sent.body["additionalModelRequestFields"],
            json!({"thinking": {"type": "enabled", "budget_tokens": budget}}),
            "{:#}",
            sent.body
        );
        // The budget comes on top of the answer's own limit (Claude wants it below
        // maxTokens), and thinking runs at the model's own temperature.
        assert_eq!(sent.max_tokens(), Some(512 + budget));
        assert_eq!(sent.temperature(), None);
    }
    // Without a reasoning effort, nothing extra is sent.
    ok(events(&model, &request(CAPABLE)).await);
    let plain = fake.requests().pop().unwrap();
    assert!(plain.body.get("additionalModelRequestFields").is_none());
    assert_eq!(plain.max_tokens(), Some(512));
}

#[tokio::test]
async fn thinking_is_left_off_where_claude_cannot_take_it() {
    let fake = FakeBedrock::with_handler(|_| Reply::text("ok"))
        .await
        .unwrap();
    let model = model(&fake).await;
    // A forced tool choice: Claude refuses thinking with one.
    let mut forced = thinking_request(CAPABLE, ReasoningEffort::Low);
    forced.tool_choice = ToolChoice::Tool("ask_shop".into());
    ok(events(&model, &forced).await);
    // Mid tool loop: Claude would want its signed thinking blocks back with its tool
    // calls, and the engine does not keep them.
    let mut looping = thinking_request(CAPABLE, ReasoningEffort::Low);
    looping.messages.push(Message {
        role: Role::Assistant,
        content: vec![Content::ToolUse {
            id: "t1".into(),
            name: "ask_shop".into(),
            input: json!({"query": "coffee"}).into(),
        }],
    });
    looping.messages.push(Message {
        role: Role::User,
        content: vec![Content::ToolResult {
            id: "t1".into(),
            status: ToolResultStatus::Ok,
            content: json!({"offers": []}),
        }],
    });
    ok(events(&model, &looping).await);
    for sent in fake.requests() {
        assert!(
            sent.body.get("additionalModelRequestFields").is_none(),
            "{:#}",
            sent.body
        );
        assert_eq!(sent.max_tokens(), Some(512));
    }
}

#[tokio::test]
async fn a_setting_the_model_cannot_take_is_refused_not_dropped() {
    let fake = FakeBedrock::with_handler(|_| Reply::text("ok"))
        .await
        .unwrap();
    let model = model(&fake).await;
    let effort = events(&model, &thinking_request(PLAIN, ReasoningEffort::Low)).await;
    assert!(
        matches!(&effort[..], [Err(ModelError::Invalid(m))] if m.contains("reasoning")),
        "{effort:?}"
    );
    let mut verbose = request(CAPABLE);
    verbose.inference.text_verbosity = Some(TextVerbosity::Low);
    let verbosity = events(&model, &verbose).await;
    assert!(
        matches!(&verbosity[..], [Err(ModelError::Invalid(m))] if m.contains("verbosity")),
        "{verbosity:?}"
    );
    assert_eq!(fake.request_count(), 0, "nothing was sent");
}
