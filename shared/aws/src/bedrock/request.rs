//! A [`ModelRequest`] in ConverseStream's terms: system blocks with cache points, the
//! conversation, the tool configuration, the inference limits and the model-specific
//! fields (`additionalModelRequestFields`: Claude's extended thinking).

use aws_sdk_bedrockruntime::error::BuildError;
use aws_sdk_bedrockruntime::types::{
    AnyToolChoice, AutoToolChoice, CachePointBlock, CachePointType, ContentBlock, ConversationRole,
    ImageBlock, ImageFormat, ImageSource, InferenceConfiguration, Message as WireMessage,
    SpecificToolChoice, SystemContentBlock, Tool, ToolChoice as WireToolChoice, ToolConfiguration,
    ToolInputSchema, ToolResultBlock, ToolResultContentBlock, ToolResultStatus as WireStatus,
    ToolSpecification, ToolUseBlock,
};
use aws_smithy_types::{Blob, Document};
use baton_core::message::{Content, Message, Role, ToolResultStatus};
use baton_core::picture::MediaType;
use baton_core::ports::model::{ModelError, ModelRequest, ReasoningEffort, ToolChoice, ToolDef};
use baton_core::registry::{ModelCapabilities, ReasoningSupport};
use serde_json::{Value, json};

use super::document::to_document;

/// The parts of a ConverseStream call, ready to hand to the SDK's fluent builder.
#[derive(Debug, Clone)]
pub(crate) struct WireRequest {
    pub(crate) system: Vec<SystemContentBlock>,
    pub(crate) messages: Vec<WireMessage>,
    pub(crate) tool_config: Option<ToolConfiguration>,
    pub(crate) inference: Option<InferenceConfiguration>,
    pub(crate) additional: Option<Document>,
}

/// Converts a request for a model with `caps`.
///
/// # Errors
/// `Invalid` when an SDK builder rejects a part (a required field missing), or when the
/// request carries a setting the model cannot take (the registry refuses such a card at
/// load; sending the request without it would drop it unnoticed).
pub(crate) fn build(
    request: &ModelRequest,
    caps: ModelCapabilities,
) -> Result<WireRequest, ModelError> {
    let budget = thinking_budget(request, caps)?;
    Ok(WireRequest {
        system: system(request, caps).map_err(invalid)?,
        messages: messages(&request.messages).map_err(invalid)?,
        tool_config: tool_config(request, caps).map_err(invalid)?,
        inference: inference(request, budget),
        additional: budget.map(|budget_tokens| {
            to_document(&json!({
                "thinking": {"type": "enabled", "budget_tokens": budget_tokens}
            }))
        }),
    })
}

/// Claude's thinking budget per reasoning effort, in tokens (1,024 is the least it takes).
fn budget_for(effort: ReasoningEffort) -> u32 {
    match effort {
        ReasoningEffort::Low => 1_024,
        ReasoningEffort::Medium => 4_096,
        ReasoningEffort::High => 16_384,
    }
}

/// Room for the answer when a thinking card sets no output limit: Claude counts thinking
/// within `maxTokens` and wants the budget below it.
const ANSWER_TOKENS: u32 = 4_096;

/// The thinking budget of this call, if it thinks.
fn thinking_budget(
    request: &ModelRequest,
    caps: ModelCapabilities,
) -> Result<Option<u32>, ModelError> {
    let settings = request.inference;
    if settings.text_verbosity.is_some() && !caps.text_verbosity {
        return Err(ModelError::Invalid(format!(
            "{} takes no text verbosity setting on Bedrock",
            request.model_id
        )));
    }
    let Some(effort) = settings.reasoning_effort else {
        return Ok(None);
    };
    match caps.reasoning_effort {
        None => Err(ModelError::Invalid(format!(
            "{} takes no reasoning effort on Bedrock",
            request.model_id
        ))),
        Some(ReasoningSupport::Thinking) => {
            // Claude refuses thinking with a forced tool choice (obligation reminders).
            let forced = !request.tools.is_empty()
                && matches!(request.tool_choice, ToolChoice::Any | ToolChoice::Tool(_));
            // Mid tool loop Claude wants its signed thinking blocks back with its tool
            // calls; the engine does not keep them, so such a call goes without thinking.
            let mid_loop = request.messages.last().is_some_and(|m| {
                m.role == Role::User
                    && m.content
                        .iter()
                        .any(|c| matches!(c, Content::ToolResult { .. }))
            });
            Ok((!forced && !mid_loop).then(|| budget_for(effort)))
        }
    }
}

fn invalid(e: BuildError) -> ModelError {
    ModelError::Invalid(format!("building the Bedrock request: {e}"))
}

fn cache_point() -> Result<CachePointBlock, BuildError> {
    CachePointBlock::builder()
        .r#type(CachePointType::Default)
        .build()
}

fn system(
    request: &ModelRequest,
    caps: ModelCapabilities,
) -> Result<Vec<SystemContentBlock>, BuildError> {
    let mut out = Vec::with_capacity(request.system.len() + 1);
    for block in &request.system {
        out.push(SystemContentBlock::Text(block.text.to_string()));
        // A model without prompt caching rejects cachePoint blocks (D-3: only where the
        // registry says the model honours them).
        if block.cache_point && caps.cache_points {
            out.push(SystemContentBlock::CachePoint(cache_point()?));
        }
    }
    Ok(out)
}

/// The conversation. Bedrock rejects blank text blocks and two messages in a row from the
/// same role; the engine's history can produce both (a past turn with no narration), so
/// blank text is dropped and neighbours from the same role are merged.
fn messages(messages: &[Message]) -> Result<Vec<WireMessage>, BuildError> {
    let mut runs: Vec<(Role, Vec<ContentBlock>)> = Vec::with_capacity(messages.len());
    for message in messages {
        let mut blocks = Vec::with_capacity(message.content.len());
        for content in &message.content {
            if let Some(block) = content_block(content)? {
                blocks.push(block);
            }
        }
        if blocks.is_empty() {
            continue;
        }
        match runs.last_mut() {
            Some((role, run)) if *role == message.role => run.extend(blocks),
            _ => runs.push((message.role, blocks)),
        }
    }
    runs.into_iter()
        .map(|(role, blocks)| {
            WireMessage::builder()
                .role(match role {
                    Role::User => ConversationRole::User,
                    Role::Assistant => ConversationRole::Assistant,
                })
                .set_content(Some(blocks))
                .build()
        })
        .collect()
}

fn content_block(content: &Content) -> Result<Option<ContentBlock>, BuildError> {
    Ok(match content {
        Content::Text { text } if text.trim().is_empty() => None,
        Content::Text { text } => Some(ContentBlock::Text(text.clone())),
        Content::ToolUse { id, name, input } => Some(ContentBlock::ToolUse(
            ToolUseBlock::builder()
                .tool_use_id(id)
                .name(name)
                .input(to_document(&input.value()))
                .build()?,
        )),
        Content::ToolResult {
            id,
            status,
            content,
        } => Some(ContentBlock::ToolResult(
            ToolResultBlock::builder()
                .tool_use_id(id)
                .content(tool_result_content(content))
                .status(match status {
                    ToolResultStatus::Ok => WireStatus::Success,
                    ToolResultStatus::Error => WireStatus::Error,
                })
                .build()?,
        )),
        // A transcript read back keeps what a picture was, not its bytes: told in words.
        Content::Picture { picture, data } if data.is_empty() => {
            Some(ContentBlock::Text(Content::picture_in_words(picture)))
        }
        Content::Picture { picture, data } => Some(ContentBlock::Image(
            ImageBlock::builder()
                .format(match picture.media_type {
                    MediaType::Jpeg => ImageFormat::Jpeg,
                    MediaType::Png => ImageFormat::Png,
                    MediaType::Webp => ImageFormat::Webp,
                    MediaType::Gif => ImageFormat::Gif,
                })
                .source(ImageSource::Bytes(Blob::new(data.to_vec())))
                .build()?,
        )),
    })
}

/// Text results are JSON strings in the core type; objects go as JSON; anything else
/// (arrays, scalars) goes as its JSON text, because not every model accepts a non-object
/// JSON result.
fn tool_result_content(content: &Value) -> ToolResultContentBlock {
    match content {
        Value::String(s) => ToolResultContentBlock::Text(s.clone()),
        Value::Object(_) => ToolResultContentBlock::Json(to_document(content)),
        other => ToolResultContentBlock::Text(other.to_string()),
    }
}

fn tool_config(
    request: &ModelRequest,
    caps: ModelCapabilities,
) -> Result<Option<ToolConfiguration>, BuildError> {
    // Bedrock refuses an empty tool list, so no tools means no toolConfig at all.
    if request.tools.is_empty() {
        return Ok(None);
    }
    let mut tools = Vec::with_capacity(request.tools.len());
    for def in request.tools.iter() {
        tools.push(Tool::ToolSpec(tool_spec(def)?));
    }
    let choice = match &request.tool_choice {
        ToolChoice::Auto => WireToolChoice::Auto(AutoToolChoice::builder().build()),
        ToolChoice::Any => WireToolChoice::Any(AnyToolChoice::builder().build()),
        ToolChoice::Tool(name) if caps.tool_choice => {
            WireToolChoice::Tool(SpecificToolChoice::builder().name(name).build()?)
        }
        // Forcing a named tool is model-specific (Claude 3+, Nova); elsewhere "call some
        // tool" is the closest honest request.
        ToolChoice::Tool(_) => WireToolChoice::Any(AnyToolChoice::builder().build()),
        // Bedrock has no "none". The tools stay (Bedrock requires a toolConfig whenever the
        // history holds tool blocks) and the choice is auto: the engine ignores any tool
        // call made when none was wanted.
        ToolChoice::None => WireToolChoice::Auto(AutoToolChoice::builder().build()),
    };
    ToolConfiguration::builder()
        .set_tools(Some(tools))
        .tool_choice(choice)
        .build()
        .map(Some)
}

fn tool_spec(def: &ToolDef) -> Result<ToolSpecification, BuildError> {
    ToolSpecification::builder()
        .name(&*def.name)
        .description(&*def.description)
        .input_schema(ToolInputSchema::Json(to_document(&def.input_schema)))
        .build()
}

/// The limits; with a thinking `budget`, the budget on top of the answer's limit and no
/// temperature (thinking runs at the model's own).
fn inference(request: &ModelRequest, budget: Option<u32>) -> Option<InferenceConfiguration> {
    let limits = request.inference;
    let (max_tokens, temperature) = match budget {
        Some(budget) => (
            Some(
                limits
                    .max_output_tokens
                    .unwrap_or(ANSWER_TOKENS)
                    .saturating_add(budget),
            ),
            None,
        ),
        None => (limits.max_output_tokens, limits.temperature),
    };
    if max_tokens.is_none() && temperature.is_none() {
        return None;
    }
    Some(
        InferenceConfiguration::builder()
            .set_max_tokens(max_tokens.map(|n| i32::try_from(n).unwrap_or(i32::MAX)))
            .set_temperature(temperature)
            .build(),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use std::sync::Arc;

    use baton_core::ports::model::{
        CallPurpose, Inference, ReasoningEffort, SystemBlock, TextVerbosity,
    };
    use baton_core::registry::ReasoningSupport;
    use serde_json::json;

    use super::*;

    fn caps(cache_points: bool, tool_choice: bool) -> ModelCapabilities {
        ModelCapabilities {
            tool_choice,
            cache_points,
            parallel_tool_calls: true,
            ..ModelCapabilities::default()
        }
    }

    fn request() -> ModelRequest {
        ModelRequest {
            agent_id: Arc::from("orchestrator"),
            model_id: Arc::from("m"),
            purpose: CallPurpose::Route,
            system: vec![
                SystemBlock {
                    text: Arc::from("stable"),
                    cache_point: true,
                },
                SystemBlock {
                    text: Arc::from("dynamic"),
                    cache_point: false,
                },
            ],
            messages: vec![Message::user("hi")],
            tools: Arc::from(vec![ToolDef {
                name: Arc::from("ask_shop"),
                description: Arc::from("Shop."),
                input_schema: Arc::new(json!({"type": "object"})),
            }]),
            tool_choice: ToolChoice::Auto,
            inference: Inference::default(),
        }
    }

    fn choice(req: &ModelRequest, caps: ModelCapabilities) -> WireToolChoice {
        build(req, caps)
            .unwrap()
            .tool_config
            .unwrap()
            .tool_choice
            .unwrap()
    }

    #[test]
    fn a_cache_point_follows_the_stable_prefix_only_for_capable_models() {
        let with = build(&request(), caps(true, true)).unwrap().system;
        assert_eq!(with.len(), 3);
        assert!(matches!(&with[0], SystemContentBlock::Text(t) if t == "stable"));
        assert!(with[1].is_cache_point());
        assert!(matches!(&with[2], SystemContentBlock::Text(t) if t == "dynamic"));
        let without = build(&request(), caps(false, true)).unwrap().system;
        assert_eq!(without.len(), 2);
        assert!(!without.iter().any(SystemContentBlock::is_cache_point));
    }

    #[test]
    fn a_named_tool_is_forced_only_where_the_model_can_be_forced() {
        let mut req = request();
        req.tool_choice = ToolChoice::Tool("ask_shop".into());
        assert!(
            matches!(choice(&req, caps(true, true)), WireToolChoice::Tool(t) if t.name == "ask_shop")
        );
        assert!(choice(&req, caps(true, false)).is_any());
    }

    #[test]
    fn no_tool_choice_keeps_the_tools_with_auto() {
        let mut req = request();
        req.tool_choice = ToolChoice::None;
        let config = build(&req, caps(true, true)).unwrap().tool_config.unwrap();
        assert_eq!(config.tools.len(), 1);
        assert!(config.tool_choice.unwrap().is_auto());
    }

    #[test]
    fn no_tools_means_no_tool_config() {
        let mut req = request();
        req.tools = Arc::from(Vec::new());
        req.tool_choice = ToolChoice::Any;
        assert!(build(&req, caps(true, true)).unwrap().tool_config.is_none());
    }

    #[test]
    fn tool_results_carry_their_error_status_and_their_content_kind() {
        let mut req = request();
        req.messages = vec![
            Message::user("balance?"),
            Message {
                role: Role::Assistant,
                content: vec![Content::ToolUse {
                    id: "t1".into(),
                    name: "points".into(),
                    input: json!({"q": 1}).into(),
                }],
            },
            Message {
                role: Role::User,
                content: vec![
                    Content::ToolResult {
                        id: "t1".into(),
                        status: ToolResultStatus::Error,
                        content: json!("the service is down"),
                    },
                    Content::ToolResult {
                        id: "t2".into(),
                        status: ToolResultStatus::Ok,
                        content: json!({"points": 5}),
                    },
                ],
            },
        ];
        let messages = build(&req, caps(true, true)).unwrap().messages;
        let results: Vec<&ToolResultBlock> = messages[2]
            .content
            .iter()
            .filter_map(|c| c.as_tool_result().ok())
            .collect();
        assert_eq!(results[0].status, Some(WireStatus::Error));
        assert!(results[0].content[0].is_text());
        assert_eq!(results[1].status, Some(WireStatus::Success));
        assert!(results[1].content[0].is_json());
        let use_block = messages[1].content[0].as_tool_use().unwrap();
        assert_eq!(use_block.tool_use_id, "t1");
        assert_eq!(use_block.name, "points");
    }

    #[test]
    fn blank_text_is_dropped_and_neighbours_from_one_role_merge() {
        let mut req = request();
        req.messages = vec![
            Message::user("first"),
            Message::assistant("  "),
            Message::user("second"),
        ];
        let messages = build(&req, caps(true, true)).unwrap().messages;
        assert_eq!(messages.len(), 1);
        assert_eq!(messages[0].role, ConversationRole::User);
        assert_eq!(messages[0].content.len(), 2);
    }

    fn thinker() -> ModelCapabilities {
        ModelCapabilities {
            reasoning_effort: Some(ReasoningSupport::Thinking),
            ..caps(true, true)
        }
    }

    fn thinking(effort: ReasoningEffort, max_output_tokens: Option<u32>) -> ModelRequest {
        let mut req = request();
        req.inference = Inference {
            max_output_tokens,
            reasoning_effort: Some(effort),
            ..Inference::default()
        };
        req
    }

    #[test]
    fn a_reasoning_effort_is_a_thinking_budget_on_top_of_the_answer() {
        let wire = build(&thinking(ReasoningEffort::Medium, Some(600)), thinker()).unwrap();
        assert_eq!(
            wire.additional,
            Some(to_document(
                &json!({"thinking": {"type": "enabled", "budget_tokens": 4096}})
            ))
        );
        let inference = wire.inference.unwrap();
        assert_eq!(inference.max_tokens, Some(600 + 4096));
        assert_eq!(inference.temperature, None);
        // A card with no output limit still leaves room for the answer.
        let wire = build(&thinking(ReasoningEffort::Low, None), thinker()).unwrap();
        assert_eq!(wire.inference.unwrap().max_tokens, Some(4096 + 1024));
    }

    #[test]
    fn thinking_is_off_for_a_forced_tool_choice_and_mid_tool_loop() {
        let mut forced = thinking(ReasoningEffort::High, Some(600));
        forced.tool_choice = ToolChoice::Any;
        let wire = build(&forced, thinker()).unwrap();
        assert_eq!(wire.additional, None);
        assert_eq!(wire.inference.unwrap().max_tokens, Some(600));

        let mut looping = thinking(ReasoningEffort::High, Some(600));
        looping.messages.push(Message {
            role: Role::Assistant,
            content: vec![Content::ToolUse {
                id: "t1".into(),
                name: "ask_shop".into(),
                input: json!({}).into(),
            }],
        });
        looping.messages.push(Message {
            role: Role::User,
            content: vec![Content::ToolResult {
                id: "t1".into(),
                status: ToolResultStatus::Ok,
                content: json!("none"),
            }],
        });
        assert_eq!(build(&looping, thinker()).unwrap().additional, None);
    }

    #[test]
    fn a_setting_the_model_cannot_take_is_an_error() {
        let effort = build(&thinking(ReasoningEffort::Low, None), caps(true, true));
        assert!(matches!(effort, Err(ModelError::Invalid(m)) if m.contains("reasoning")));
        let mut verbose = request();
        verbose.inference.text_verbosity = Some(TextVerbosity::High);
        let verbosity = build(&verbose, thinker());
        assert!(matches!(verbosity, Err(ModelError::Invalid(m)) if m.contains("verbosity")));
    }

    #[test]
    fn limits_are_sent_only_when_set() {
        assert!(
            build(&request(), caps(true, true))
                .unwrap()
                .inference
                .is_none()
        );
        let mut req = request();
        req.inference = Inference {
            max_output_tokens: Some(512),
            temperature: Some(0.5),
            ..Inference::default()
        };
        let inference = build(&req, caps(true, true)).unwrap().inference.unwrap();
        assert_eq!(inference.max_tokens, Some(512));
        assert_eq!(inference.temperature, Some(0.5));
    }
}
