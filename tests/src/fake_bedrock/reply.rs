//! Scripted answers of the fake and their event-stream framing.

use std::time::Duration;

use aws_smithy_eventstream::frame::write_message_to;
use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
use axum::body::{Body, Bytes};
use axum::http::{HeaderName, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// Input tokens reported when a reply sets no usage.
pub const DEFAULT_INPUT_TOKENS: u64 = 10;
/// Output tokens reported when a reply sets no usage.
pub const DEFAULT_OUTPUT_TOKENS: u64 = 5;

/// One tool call of a scripted reply.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    id: String,
    name: String,
    fragments: Vec<String>,
}

impl ToolCall {
    /// A call whose arguments (`args` as compact JSON) arrive in three fragments.
    pub fn new(id: impl Into<String>, name: impl Into<String>, args: Value) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            fragments: split(&args.to_string(), 3),
        }
    }

    /// A call whose argument text arrives exactly as these fragments (malformed JSON, an
    /// empty input, a non-object).
    pub fn raw<S: Into<String>>(
        id: impl Into<String>,
        name: impl Into<String>,
        fragments: impl IntoIterator<Item = S>,
    ) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            fragments: fragments.into_iter().map(Into::into).collect(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Block {
    Reasoning(Vec<String>),
    Text(Vec<String>),
    Tool(ToolCall),
}

/// How the body ends.
#[derive(Debug, Clone, PartialEq)]
enum End {
    /// `messageStop`, then `metadata` (when usage is on).
    Complete,
    /// An exception frame instead of `messageStop`.
    Exception { kind: String, message: String },
    /// The body ends cleanly without `messageStop`.
    Cut,
    /// The body ends in the middle of a frame.
    CutMidFrame,
    /// The connection is aborted after the content.
    Reset,
}

#[derive(Debug, Clone, PartialEq)]
struct HttpError {
    status: u16,
    kind: String,
    message: String,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Usage {
    input: u64,
    output: u64,
    cache_read: Option<u64>,
    cache_write: Option<u64>,
}

/// A scripted answer to one ConverseStream request: a stream of content blocks, or an
/// HTTP error before any stream.
///
/// Defaults: the stop reason is `tool_use` when the reply holds a tool call, else
/// `end_turn`; `metadata` follows `messageStop` with [`DEFAULT_INPUT_TOKENS`] and
/// [`DEFAULT_OUTPUT_TOKENS`]; frames are split across HTTP chunks (each chunk ends in the
/// middle of a frame).
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    blocks: Vec<Block>,
    raw_events: Option<Vec<(String, Value)>>,
    http_error: Option<HttpError>,
    stop_reason: Option<String>,
    usage: Option<Usage>,
    end: End,
    first_byte_delay: Option<Duration>,
}

impl Reply {
    fn stream(blocks: Vec<Block>) -> Self {
        Reply {
            blocks,
            raw_events: None,
            http_error: None,
            stop_reason: None,
            usage: Some(Usage {
                input: DEFAULT_INPUT_TOKENS,
                output: DEFAULT_OUTPUT_TOKENS,
                cache_read: None,
                cache_write: None,
            }),
            end: End::Complete,
            first_byte_delay: None,
        }
    }

    /// Text, sent word by word (each delta ends after a space).
    pub fn text(text: &str) -> Self {
        let deltas = text.split_inclusive(' ').map(str::to_owned).collect();
        Reply::stream(vec![Block::Text(deltas)])
    }

    /// Text sent as exactly these deltas.
    pub fn text_deltas<S: Into<String>>(deltas: impl IntoIterator<Item = S>) -> Self {
        Reply::stream(vec![Block::Text(
            deltas.into_iter().map(Into::into).collect(),
        )])
    }

    /// One tool call; its arguments arrive in fragments.
    pub fn tool_use(id: impl Into<String>, name: impl Into<String>, args: Value) -> Self {
        Reply::tool_uses([ToolCall::new(id, name, args)])
    }

    /// One tool call whose argument text is sent exactly as `fragments` (malformed args).
    pub fn tool_use_raw<S: Into<String>>(
        id: impl Into<String>,
        name: impl Into<String>,
        fragments: impl IntoIterator<Item = S>,
    ) -> Self {
        Reply::tool_uses([ToolCall::raw(id, name, fragments)])
    }

    /// Several tool calls in one message (parallel tool use), one content block each.
    pub fn tool_uses(calls: impl IntoIterator<Item = ToolCall>) -> Self {
        Reply::stream(calls.into_iter().map(Block::Tool).collect())
    }

    /// Text (word by word), then tool calls.
    pub fn text_then_tools(text: &str, calls: impl IntoIterator<Item = ToolCall>) -> Self {
        let mut reply = Reply::text(text);
        reply.blocks.extend(calls.into_iter().map(Block::Tool));
        reply
    }

    /// Exactly these events (`(event type, payload)`), nothing added: no `messageStart`,
    /// `messageStop` or `metadata` unless listed.
    pub fn events<S: Into<String>>(events: impl IntoIterator<Item = (S, Value)>) -> Self {
        let mut reply = Reply::stream(Vec::new());
        reply.raw_events = Some(events.into_iter().map(|(t, v)| (t.into(), v)).collect());
        reply
    }

    /// An HTTP error before any stream (`x-amzn-errortype: <kind>`, body
    /// `{"message": ...}`).
    pub fn http_error(status: u16, kind: &str, message: &str) -> Self {
        let mut reply = Reply::stream(Vec::new());
        reply.http_error = Some(HttpError {
            status,
            kind: kind.to_owned(),
            message: message.to_owned(),
        });
        reply
    }

    /// 429 `ThrottlingException`.
    pub fn throttled() -> Self {
        Reply::http_error(
            429,
            "ThrottlingException",
            "Too many requests, please wait before trying again.",
        )
    }

    /// 400 `ValidationException`.
    pub fn validation_error(message: &str) -> Self {
        Reply::http_error(400, "ValidationException", message)
    }

    /// 500 `InternalServerException`.
    pub fn internal_error() -> Self {
        Reply::http_error(500, "InternalServerException", "Internal server error.")
    }

    /// Adds a reasoning block (sent as these deltas) before the rest.
    pub fn with_reasoning<S: Into<String>>(mut self, deltas: impl IntoIterator<Item = S>) -> Self {
        self.blocks.insert(
            0,
            Block::Reasoning(deltas.into_iter().map(Into::into).collect()),
        );
        self
    }

    /// The stop reason on the wire (`end_turn`, `tool_use`, `max_tokens`, ...).
    pub fn stop_reason(mut self, reason: &str) -> Self {
        self.stop_reason = Some(reason.to_owned());
        self
    }

    /// Input and output tokens reported in `metadata`.
    pub fn usage(mut self, input: u64, output: u64) -> Self {
        let mut usage = self.usage.unwrap_or(Usage {
            input,
            output,
            cache_read: None,
            cache_write: None,
        });
        usage.input = input;
        usage.output = output;
        self.usage = Some(usage);
        self
    }

    /// Cache-read and cache-write tokens reported in `metadata`.
    pub fn cache_usage(mut self, read: u64, write: u64) -> Self {
        let mut usage = self.usage.unwrap_or(Usage {
            input: DEFAULT_INPUT_TOKENS,
            output: DEFAULT_OUTPUT_TOKENS,
            cache_read: None,
            cache_write: None,
        });
        usage.cache_read = Some(read);
        usage.cache_write = Some(write);
        self.usage = Some(usage);
        self
    }

    /// No `metadata` event after `messageStop`.
    pub fn without_metadata(mut self) -> Self {
        self.usage = None;
        self
    }

    /// After the content, an exception frame (e.g. `modelStreamErrorException`) instead
    /// of `messageStop`.
    pub fn exception_mid_stream(mut self, kind: &str, message: &str) -> Self {
        self.end = End::Exception {
            kind: kind.to_owned(),
            message: message.to_owned(),
        };
        self
    }

    /// After the content, the body ends cleanly without `messageStop` or `metadata`.
    pub fn cut(mut self) -> Self {
        self.end = End::Cut;
        self
    }

    /// After the content, the body ends halfway through the `messageStop` frame.
    pub fn cut_mid_frame(mut self) -> Self {
        self.end = End::CutMidFrame;
        self
    }

    /// After the content, the connection is aborted.
    pub fn reset(mut self) -> Self {
        self.end = End::Reset;
        self
    }

    /// The response headers go out at once; the first frame waits this long.
    pub fn first_byte_delay(mut self, delay: Duration) -> Self {
        self.first_byte_delay = Some(delay);
        self
    }

    /// The HTTP response.
    pub(super) fn into_response(self) -> Response {
        if let Some(e) = &self.http_error {
            return error_response(e.status, &e.kind, &e.message);
        }
        let frames = self.frames();
        let chunks = chunks(&frames, self.end == End::CutMidFrame);
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
        let delay = self.first_byte_delay;
        let reset = self.end == End::Reset;
        tokio::spawn(async move {
            if let Some(delay) = delay {
                tokio::time::sleep(delay).await;
            }
            for chunk in chunks {
                if tx.send(Ok(chunk)).await.is_err() {
                    return;
                }
                // Let each chunk go out on its own rather than coalesced with the next.
                tokio::task::yield_now().await;
            }
            if reset {
                let _ = tx
                    .send(Err(std::io::Error::other("fake bedrock: connection reset")))
                    .await;
            }
        });
        let body = Body::from_stream(tokio_stream::wrappers::ReceiverStream::new(rx));
        (
            StatusCode::OK,
            [
                (header::CONTENT_TYPE, "application/vnd.amazon.eventstream"),
                (HeaderName::from_static("x-amzn-requestid"), "fake-request"),
            ],
            body,
        )
            .into_response()
    }

    fn frames(&self) -> Vec<Bytes> {
        if let Some(events) = &self.raw_events {
            let mut frames: Vec<Bytes> = events.iter().map(|(t, v)| event(t, v)).collect();
            if let End::Exception { kind, message } = &self.end {
                frames.push(exception(kind, message));
            }
            return frames;
        }
        let mut frames = vec![event("messageStart", &json!({"role": "assistant"}))];
        let mut has_tool = false;
        for (index, block) in self.blocks.iter().enumerate() {
            let delta = |delta: Value| {
                event(
                    "contentBlockDelta",
                    &json!({"contentBlockIndex": index, "delta": delta}),
                )
            };
            match block {
                Block::Reasoning(deltas) => frames.extend(
                    deltas
                        .iter()
                        .map(|t| delta(json!({"reasoningContent": {"text": t}}))),
                ),
                Block::Text(deltas) => {
                    frames.extend(deltas.iter().map(|t| delta(json!({"text": t}))));
                }
                Block::Tool(call) => {
                    has_tool = true;
                    frames.push(event(
                        "contentBlockStart",
                        &json!({"contentBlockIndex": index,
                                "start": {"toolUse": {"toolUseId": call.id, "name": call.name}}}),
                    ));
                    frames.extend(
                        call.fragments
                            .iter()
                            .map(|f| delta(json!({"toolUse": {"input": f}}))),
                    );
                }
            }
            frames.push(event(
                "contentBlockStop",
                &json!({"contentBlockIndex": index}),
            ));
        }
        let reason = self
            .stop_reason
            .clone()
            .unwrap_or_else(|| if has_tool { "tool_use" } else { "end_turn" }.to_owned());
        let stop = event("messageStop", &json!({"stopReason": reason}));
        match &self.end {
            End::Complete => {
                frames.push(stop);
                if let Some(u) = self.usage {
                    let mut usage = json!({
                        "inputTokens": u.input,
                        "outputTokens": u.output,
                        "totalTokens": u.input + u.output
                            + u.cache_read.unwrap_or(0) + u.cache_write.unwrap_or(0),
                    });
                    if let Some(r) = u.cache_read {
                        usage["cacheReadInputTokens"] = json!(r);
                    }
                    if let Some(w) = u.cache_write {
                        usage["cacheWriteInputTokens"] = json!(w);
                    }
                    frames.push(event(
                        "metadata",
                        &json!({"usage": usage, "metrics": {"latencyMs": 1}}),
                    ));
                }
            }
            End::Exception { kind, message } => frames.push(exception(kind, message)),
            End::CutMidFrame => frames.push(stop),
            End::Cut | End::Reset => {}
        }
        frames
    }
}

/// A restJson1 error response, as Bedrock sends before any stream.
pub(super) fn error_response(status: u16, kind: &str, message: &str) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        status,
        [
            (header::CONTENT_TYPE, "application/json".to_owned()),
            (HeaderName::from_static("x-amzn-errortype"), kind.to_owned()),
            (
                HeaderName::from_static("x-amzn-requestid"),
                "fake-request".to_owned(),
            ),
        ],
        json!({ "message": message }).to_string(),
    )
        .into_response()
}

fn event(kind: &str, payload: &Value) -> Bytes {
    frame("event", ":event-type", kind, payload.to_string())
}

fn exception(kind: &str, message: &str) -> Bytes {
    frame(
        "exception",
        ":exception-type",
        kind,
        json!({ "message": message }).to_string(),
    )
}

/// One event-stream message: its type, its kind under `kind_header`, a JSON payload.
fn frame(message_type: &str, kind_header: &str, kind: &str, payload: String) -> Bytes {
    encode(
        Message::new(payload.into_bytes())
            .add_header(Header::new(
                kind_header.to_owned(),
                HeaderValue::String(kind.to_owned().into()),
            ))
            .add_header(Header::new(
                ":content-type",
                HeaderValue::String("application/json".into()),
            ))
            .add_header(Header::new(
                ":message-type",
                HeaderValue::String(message_type.to_owned().into()),
            )),
    )
}

fn encode(message: Message) -> Bytes {
    let mut buf = Vec::new();
    // Encoding fails only for oversized headers or payloads, which no script here makes;
    // a frame that failed would show up as a decoding error on the client.
    if let Err(e) = write_message_to(&message, &mut buf) {
        tracing::error!(error = %e, "fake bedrock: cannot encode a frame");
    }
    Bytes::from(buf)
}

/// HTTP chunks that cut every frame in two: each chunk holds the second half of one frame
/// and the first half of the next, so the client must both split and join. With
/// `cut_last`, the last frame's second half is never sent.
fn chunks(frames: &[Bytes], cut_last: bool) -> Vec<Bytes> {
    let mut out = Vec::with_capacity(frames.len() + 1);
    let mut pending: Vec<u8> = Vec::new();
    for (i, frame) in frames.iter().enumerate() {
        let mid = frame.len() / 2;
        pending.extend_from_slice(&frame[..mid]);
        out.push(Bytes::from(std::mem::take(&mut pending)));
        if !(cut_last && i + 1 == frames.len()) {
            pending.extend_from_slice(&frame[mid..]);
        }
    }
    if !pending.is_empty() {
        out.push(Bytes::from(pending));
    }
    out.retain(|c| !c.is_empty());
    out
}

/// `text` in up to `parts` pieces, cut on character boundaries.
fn split(text: &str, parts: usize) -> Vec<String> {
    let size = text.len().div_ceil(parts.max(1)).max(1);
    let mut out = Vec::with_capacity(parts);
    let mut rest = text;
    while !rest.is_empty() {
        let mut cut = size.min(rest.len());
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        let (head, tail) = rest.split_at(cut);
        out.push(head.to_owned());
        rest = tail;
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn chunks_rebuild_the_frames_exactly() {
        let frames = vec![
            Bytes::from_static(b"aaaa"),
            Bytes::from_static(b"bbbbbb"),
            Bytes::from_static(b"cc"),
        ];
        let joined: Vec<u8> = chunks(&frames, false).concat();
        assert_eq!(joined, b"aaaabbbbbbcc");
        let cut: Vec<u8> = chunks(&frames, true).concat();
        assert_eq!(cut, b"aaaabbbbbbc");
    }

    #[test]
    fn split_respects_character_boundaries() {
        let parts = split("{\"q\":\"café\"}", 3);
        assert_eq!(parts.concat(), "{\"q\":\"café\"}");
        assert!(parts.len() >= 2);
    }
}
