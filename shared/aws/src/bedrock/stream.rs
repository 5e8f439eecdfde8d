//! ConverseStream events as [`ModelEvent`]s, and the call's life as one stream: send, read
//! every event (usage arrives after `messageStop`), fail if the stream ends too early.

use aws_sdk_bedrockruntime::operation::converse_stream::builders::ConverseStreamFluentBuilder;
use aws_sdk_bedrockruntime::primitives::event_stream::EventReceiver;
use aws_sdk_bedrockruntime::types::error::ConverseStreamOutputError;
use aws_sdk_bedrockruntime::types::{
    ContentBlockDelta, ContentBlockStart, ConverseStreamOutput, ReasoningContentBlockDelta,
    StopReason as WireStop, TokenUsage as WireUsage,
};
use baton_core::ports::model::{ModelError, ModelEvent, ModelStream, StopReason, TokenUsage};
use futures::StreamExt as _;
use tracing::{Instrument as _, Span};

use super::error;

/// Turns the wire events of one message into normalized events.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    /// Open tool-use blocks: content block index → tool-use id. Tool input deltas carry
    /// only the index.
    tools: Vec<(i32, String)>,
    /// The raw stop reason once `messageStop` arrived.
    stopped: Option<WireStop>,
}

impl Decoder {
    /// Whether `messageStop` arrived: the answer is complete.
    pub(crate) fn stopped(&self) -> bool {
        self.stopped.is_some()
    }

    /// One wire event; `None` for events with no normalized form.
    ///
    /// # Errors
    /// `Malformed` when tool input arrives for a block that never started.
    pub(crate) fn on_event(
        &mut self,
        event: ConverseStreamOutput,
        span: &Span,
    ) -> Result<Option<ModelEvent>, ModelError> {
        Ok(match event {
            ConverseStreamOutput::ContentBlockStart(start) => match start.start {
                Some(ContentBlockStart::ToolUse(tool)) => {
                    self.tools
                        .push((start.content_block_index, tool.tool_use_id.clone()));
                    Some(ModelEvent::ToolUseStart {
                        id: tool.tool_use_id,
                        name: tool.name,
                    })
                }
                _ => None,
            },
            ConverseStreamOutput::ContentBlockDelta(delta) => match delta.delta {
                // Text blocks usually get no contentBlockStart: the first delta opens them.
                Some(ContentBlockDelta::Text(text)) => Some(ModelEvent::TextDelta(text)),
                Some(ContentBlockDelta::ReasoningContent(ReasoningContentBlockDelta::Text(
                    text,
                ))) => Some(ModelEvent::ReasoningDelta(text)),
                Some(ContentBlockDelta::ToolUse(tool)) => {
                    let Some(id) = self.tool_id(delta.content_block_index) else {
                        return Err(ModelError::Malformed(format!(
                            "tool input for content block {} which never started",
                            delta.content_block_index
                        )));
                    };
                    Some(ModelEvent::ToolUseDelta {
                        id: id.to_owned(),
                        fragment: tool.input,
                    })
                }
                // Signatures, redacted reasoning, citations, images: nothing the engine uses.
                _ => None,
            },
            ConverseStreamOutput::ContentBlockStop(stop) => {
                let index = stop.content_block_index;
                self.tools.iter().position(|(i, _)| *i == index).map(|pos| {
                    ModelEvent::ToolUseStop {
                        id: self.tools.swap_remove(pos).1,
                    }
                })
            }
            ConverseStreamOutput::MessageStop(stop) => {
                span.record("gen_ai.response.finish_reasons", stop.stop_reason.as_str());
                let reason = stop_reason(&stop.stop_reason);
                self.stopped = Some(stop.stop_reason);
                Some(ModelEvent::Stop(reason))
            }
            ConverseStreamOutput::Metadata(meta) => meta.usage.map(|u| {
                let usage = usage(&u);
                record_usage(span, &usage);
                ModelEvent::Usage(usage)
            }),
            // messageStart, and event kinds newer than this SDK.
            _ => None,
        })
    }

    fn tool_id(&self, index: i32) -> Option<&str> {
        self.tools
            .iter()
            .find(|(i, _)| *i == index)
            .map(|(_, id)| id.as_str())
    }
}

fn stop_reason(reason: &WireStop) -> StopReason {
    match reason {
        WireStop::EndTurn | WireStop::StopSequence => StopReason::EndTurn,
        WireStop::ToolUse => StopReason::ToolUse,
        WireStop::MaxTokens => StopReason::MaxTokens,
        _ => StopReason::Other,
    }
}

/// Bedrock's `inputTokens` already excludes the tokens read from or written to the cache.
fn usage(u: &WireUsage) -> TokenUsage {
    let count = |n: i32| u64::try_from(n).unwrap_or(0);
    TokenUsage {
        input: count(u.input_tokens),
        output: count(u.output_tokens),
        cache_read: u.cache_read_input_tokens.map(count).unwrap_or(0),
        cache_write: u.cache_write_input_tokens.map(count).unwrap_or(0),
    }
}

/// GenAI conventions: `input_tokens` counts cached tokens too, which are also given apart.
fn record_usage(span: &Span, usage: &TokenUsage) {
    span.record(
        "gen_ai.usage.input_tokens",
        usage.input + usage.cache_read + usage.cache_write,
    );
    span.record("gen_ai.usage.output_tokens", usage.output);
    span.record("gen_ai.usage.cache_read.input_tokens", usage.cache_read);
    span.record(
        "gen_ai.usage.cache_creation.input_tokens",
        usage.cache_write,
    );
}

/// Where a call is in its life.
enum Phase {
    /// Not sent yet: the stream is lazy, so nothing goes out until it is polled.
    Send(Box<ConverseStreamFluentBuilder>),
    /// Reading events.
    Receive(Box<EventReceiver<ConverseStreamOutput, ConverseStreamOutputError>>),
    /// Finished (successfully or not): nothing follows.
    Done,
}

struct Call {
    phase: Phase,
    decoder: Decoder,
    span: Span,
}

/// The call as a [`ModelStream`]. Dropping the stream drops the connection.
pub(crate) fn call(builder: ConverseStreamFluentBuilder, span: Span) -> ModelStream {
    let call = Call {
        phase: Phase::Send(Box::new(builder)),
        decoder: Decoder::default(),
        span,
    };
    futures::stream::unfold(call, |call| {
        let span = call.span.clone();
        step(call).instrument(span)
    })
    .boxed()
}

async fn step(mut call: Call) -> Option<(Result<ModelEvent, ModelError>, Call)> {
    loop {
        match std::mem::replace(&mut call.phase, Phase::Done) {
            Phase::Done => return None,
            Phase::Send(builder) => match builder.send().await {
                Ok(output) => call.phase = Phase::Receive(Box::new(output.stream)),
                Err(e) => return Some((Err(fail(&call.span, error::from_send(e))), call)),
            },
            Phase::Receive(mut receiver) => match receiver.recv().await {
                Ok(Some(event)) => match call.decoder.on_event(event, &call.span) {
                    Ok(Some(event)) => {
                        call.phase = Phase::Receive(receiver);
                        return Some((Ok(event), call));
                    }
                    Ok(None) => call.phase = Phase::Receive(receiver),
                    Err(e) => return Some((Err(fail(&call.span, e)), call)),
                },
                Ok(None) if call.decoder.stopped() => {
                    tracing::debug!("model call finished");
                    return None;
                }
                // A clean end of the body without messageStop: the stream was cut (a proxy,
                // a dropped connection). Never a silent success.
                Ok(None) => {
                    let e = ModelError::Unavailable(
                        "the Bedrock stream ended before messageStop".to_owned(),
                    );
                    return Some((Err(fail(&call.span, e)), call));
                }
                // The answer is complete; only the usage report was lost. Failing now would
                // throw a whole answer away for a missing token count.
                Err(e) if call.decoder.stopped() => {
                    let e = error::from_stream(e);
                    tracing::warn!(error = %e, "Bedrock stream failed after messageStop; usage lost");
                    return None;
                }
                Err(e) => return Some((Err(fail(&call.span, error::from_stream(e))), call)),
            },
        }
    }
}

/// Records the failure on the span; the caller logs the detail once (the engine).
fn fail(span: &Span, error: ModelError) -> ModelError {
    span.record("error.type", error_type(&error));
    error
}

fn error_type(error: &ModelError) -> &'static str {
    match error {
        ModelError::Throttled => "throttled",
        ModelError::Unavailable(_) => "unavailable",
        ModelError::Invalid(_) => "invalid",
        ModelError::Timeout => "timeout",
        ModelError::Malformed(_) => "malformed",
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use aws_sdk_bedrockruntime::types::{
        ContentBlockDeltaEvent, ContentBlockStartEvent, ContentBlockStopEvent,
        ConverseStreamMetadataEvent, MessageStopEvent, ToolUseBlockDelta, ToolUseBlockStart,
    };

    use super::*;

    fn start_tool(index: i32, id: &str, name: &str) -> ConverseStreamOutput {
        ConverseStreamOutput::ContentBlockStart(
            ContentBlockStartEvent::builder()
                .content_block_index(index)
                .start(ContentBlockStart::ToolUse(
                    ToolUseBlockStart::builder()
                        .tool_use_id(id)
                        .name(name)
                        .build()
                        .unwrap(),
                ))
                .build()
                .unwrap(),
        )
    }

    fn delta(index: i32, delta: ContentBlockDelta) -> ConverseStreamOutput {
        ConverseStreamOutput::ContentBlockDelta(
            ContentBlockDeltaEvent::builder()
                .content_block_index(index)
                .delta(delta)
                .build()
                .unwrap(),
        )
    }

    fn input(index: i32, fragment: &str) -> ConverseStreamOutput {
        delta(
            index,
            ContentBlockDelta::ToolUse(
                ToolUseBlockDelta::builder()
                    .input(fragment)
                    .build()
                    .unwrap(),
            ),
        )
    }

    fn stop_block(index: i32) -> ConverseStreamOutput {
        ConverseStreamOutput::ContentBlockStop(
            ContentBlockStopEvent::builder()
                .content_block_index(index)
                .build()
                .unwrap(),
        )
    }

    fn decode(events: Vec<ConverseStreamOutput>) -> Vec<ModelEvent> {
        let mut decoder = Decoder::default();
        let span = Span::none();
        events
            .into_iter()
            .filter_map(|e| decoder.on_event(e, &span).unwrap())
            .collect()
    }

    #[test]
    fn interleaved_tool_inputs_are_keyed_by_their_block() {
        let events = decode(vec![
            start_tool(1, "a", "ask_shop"),
            start_tool(2, "b", "ask_support"),
            input(2, "{\"q\":"),
            input(1, "{}"),
            input(2, "1}"),
            stop_block(2),
            stop_block(1),
        ]);
        assert_eq!(
            events,
            vec![
                ModelEvent::ToolUseStart {
                    id: "a".into(),
                    name: "ask_shop".into()
                },
                ModelEvent::ToolUseStart {
                    id: "b".into(),
                    name: "ask_support".into()
                },
                ModelEvent::ToolUseDelta {
                    id: "b".into(),
                    fragment: "{\"q\":".into()
                },
                ModelEvent::ToolUseDelta {
                    id: "a".into(),
                    fragment: "{}".into()
                },
                ModelEvent::ToolUseDelta {
                    id: "b".into(),
                    fragment: "1}".into()
                },
                ModelEvent::ToolUseStop { id: "b".into() },
                ModelEvent::ToolUseStop { id: "a".into() },
            ]
        );
    }

    #[test]
    fn a_text_block_stop_yields_nothing_and_reasoning_is_kept_apart() {
        let events = decode(vec![
            delta(
                0,
                ContentBlockDelta::ReasoningContent(ReasoningContentBlockDelta::Text("hmm".into())),
            ),
            delta(
                0,
                ContentBlockDelta::ReasoningContent(ReasoningContentBlockDelta::Signature(
                    "sig".into(),
                )),
            ),
            stop_block(0),
            delta(1, ContentBlockDelta::Text("Hi".into())),
            stop_block(1),
        ]);
        assert_eq!(
            events,
            vec![
                ModelEvent::ReasoningDelta("hmm".into()),
                ModelEvent::TextDelta("Hi".into()),
            ]
        );
    }

    #[test]
    fn tool_input_for_a_block_that_never_started_is_malformed() {
        let mut decoder = Decoder::default();
        let err = decoder.on_event(input(3, "{}"), &Span::none()).unwrap_err();
        assert!(matches!(err, ModelError::Malformed(_)));
    }

    #[test]
    fn stop_reasons_and_usage_are_normalized() {
        let stop = |r: WireStop| {
            ConverseStreamOutput::MessageStop(
                MessageStopEvent::builder().stop_reason(r).build().unwrap(),
            )
        };
        let usage = ConverseStreamOutput::Metadata(
            ConverseStreamMetadataEvent::builder()
                .usage(
                    WireUsage::builder()
                        .input_tokens(10)
                        .output_tokens(3)
                        .total_tokens(113)
                        .cache_read_input_tokens(80)
                        .cache_write_input_tokens(20)
                        .build()
                        .unwrap(),
                )
                .build(),
        );
        let events = decode(vec![
            stop(WireStop::StopSequence),
            stop(WireStop::MaxTokens),
            stop(WireStop::GuardrailIntervened),
            stop(WireStop::ToolUse),
            usage,
        ]);
        assert_eq!(
            events,
            vec![
                ModelEvent::Stop(StopReason::EndTurn),
                ModelEvent::Stop(StopReason::MaxTokens),
                ModelEvent::Stop(StopReason::Other),
                ModelEvent::Stop(StopReason::ToolUse),
                ModelEvent::Usage(TokenUsage {
                    input: 10,
                    output: 3,
                    cache_read: 80,
                    cache_write: 20
                }),
            ]
        );
    }
}
