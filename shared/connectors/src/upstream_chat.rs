//! `upstream_chat`: a chat service that keeps its own conversation, over HTTP, streaming
//! its answer as JSON lines. It serves the specialist whose one tool it is (the runtime keeps
//! the conversation id and replays recent turns when a new conversation starts); it is
//! never called as a tool.
//!
//! The protocol (`docs/upstream.md`):
//! - start: `POST {url}` with `{"message", "principal", "context": [{"user", "assistant"}…]}`;
//! - continue: `PUT {url}/{conversation_id}` with `{"message", "principal"}`; 404 means
//!   the service no longer knows the conversation;
//! - the answer: `application/x-ndjson`, one object a line: `{"conversation_id": "…"}`
//!   first, then `{"text": "…"}` pieces; `{"error": "…"}` ends it as a failure. Unknown
//!   fields and blank lines are ignored.
//!
//! The principal also travels as the `x-baton-principal` header (D-29). `http://` and
//! `https://` URLs (the system's root certificates).

use std::time::Duration;

use async_trait::async_trait;
use baton_core::ports::connector::{Connector, ConnectorError, ConnectorRequest, Envelope};
use baton_core::ports::upstream::{
    ConversationPolicy, UpstreamChat, UpstreamError, UpstreamEvent, UpstreamRequest, UpstreamStream,
};
use futures::StreamExt;
use serde::Deserialize;
use serde_json::{Value, json};

/// The header that carries the principal to the service.
const PRINCIPAL_HEADER: &str = "x-baton-principal";
/// A line longer than this is not the protocol (a runaway answer is cut, not buffered).
const MAX_LINE_BYTES: usize = 256 * 1024;
/// How long one message may take, answer included, unless the tool says otherwise.
const DEFAULT_TIMEOUT_MS: u64 = 30_000;

/// The `upstream_chat` connector kind.
#[derive(Debug, Clone)]
pub struct UpstreamChatConnector {
    /// One client per process: its connection pool is shared by every call.
    client: reqwest::Client,
}

impl Default for UpstreamChatConnector {
    fn default() -> Self {
        Self::new()
    }
}

impl UpstreamChatConnector {
    /// The kind name used in `tools.yaml`.
    pub const KIND: &'static str = "upstream_chat";

    /// A connector with its own connection pool.
    pub fn new() -> Self {
        UpstreamChatConnector {
            client: crate::tls::client(),
        }
    }
}

/// One line of the answer.
#[derive(Debug, Deserialize)]
struct Line {
    #[serde(default)]
    conversation_id: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    error: Option<Value>,
}

fn url_of(config: &Value) -> Result<&str, String> {
    let url = config
        .get("url")
        .and_then(Value::as_str)
        .ok_or("needs a `url`, the service's conversation endpoint")?;
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    if rest.is_none_or(str::is_empty) {
        return Err(format!("url {url:?} must be an http:// or https:// URL"));
    }
    Ok(url.trim_end_matches('/'))
}

fn timeout_of(config: &Value) -> Result<Duration, String> {
    match config.get("timeout_ms") {
        None => Ok(Duration::from_millis(DEFAULT_TIMEOUT_MS)),
        Some(v) => v
            .as_u64()
            .filter(|ms| *ms > 0)
            .map(Duration::from_millis)
            .ok_or_else(|| format!("timeout_ms = {v}: must be a positive number")),
    }
}

#[async_trait]
impl Connector for UpstreamChatConnector {
    async fn call(&self, request: ConnectorRequest) -> Result<Envelope, ConnectorError> {
        Err(ConnectorError::Config(format!(
            "tool {} is a chat service: the card whose one tool it is converses with it; it is not called as a tool",
            request.tool_id
        )))
    }

    fn check_config(&self, _tool_id: &str, config: &Value) -> Result<(), String> {
        url_of(config)?;
        timeout_of(config)?;
        ConversationPolicy::from_config(config)?;
        Ok(())
    }

    fn upstream_chat(&self) -> Option<&dyn UpstreamChat> {
        Some(self)
    }
}

#[async_trait]
impl UpstreamChat for UpstreamChatConnector {
    async fn converse(&self, request: UpstreamRequest) -> Result<UpstreamStream, UpstreamError> {
        let url = url_of(&request.config).map_err(UpstreamError::Invalid)?;
        let timeout = timeout_of(&request.config).map_err(UpstreamError::Invalid)?;
        let principal = request.principal.as_str();
        let call = match &request.conversation_id {
            Some(id) => self
                .client
                .put(format!("{url}/{}", encode_segment(id)))
                .json(&json!({"message": request.message, "principal": principal})),
            None => self.client.post(url).json(&json!({
                "message": request.message,
                "principal": principal,
                "context": request.replay,
            })),
        };
        let response = call
            .header(PRINCIPAL_HEADER, principal)
            .timeout(timeout)
            .send()
            .await
            .map_err(|e| UpstreamError::Unavailable(describe(e)))?;
        let status = response.status();
        if status == reqwest::StatusCode::NOT_FOUND && request.conversation_id.is_some() {
            return Err(UpstreamError::UnknownConversation);
        }
        if !status.is_success() {
            return Err(UpstreamError::Unavailable(format!("it answered {status}")));
        }
        let bytes = response
            .bytes_stream()
            .map(|chunk| chunk.map_err(|e| UpstreamError::Unavailable(describe(e))));
        Ok(lines(bytes).boxed())
    }
}

/// The answer's events, one per line, from its body's chunks. An error ends the stream.
fn lines(
    body: impl futures::Stream<Item = Result<bytes::Bytes, UpstreamError>> + Send + 'static,
) -> impl futures::Stream<Item = Result<UpstreamEvent, UpstreamError>> + Send {
    type Ready = std::collections::VecDeque<Result<UpstreamEvent, UpstreamError>>;
    let state = (Box::pin(body), Vec::<u8>::new(), Ready::new(), false);
    futures::stream::unfold(
        state,
        |(mut body, mut buf, mut ready, mut done)| async move {
            loop {
                if let Some(item) = ready.pop_front() {
                    if item.is_err() {
                        // Errors are terminal: nothing after one is read or sent.
                        ready.clear();
                        done = true;
                    }
                    return Some((item, (body, buf, ready, done)));
                }
                if done {
                    return None;
                }
                match body.next().await {
                    Some(Ok(chunk)) => buf.extend_from_slice(&chunk),
                    Some(Err(e)) => ready.push_back(Err(e)),
                    // The last line may come without its newline.
                    None => {
                        done = true;
                        buf.push(b'\n');
                    }
                }
                while let Some(end) = buf.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = buf.drain(..=end).collect();
                    match parse(&line) {
                        Ok(events) => ready.extend(events.into_iter().map(Ok)),
                        Err(e) => {
                            ready.push_back(Err(e));
                            buf.clear();
                        }
                    }
                }
                if buf.len() > MAX_LINE_BYTES {
                    ready.push_back(Err(UpstreamError::Invalid(
                        "a line of the answer is too long".into(),
                    )));
                    buf.clear();
                }
            }
        },
    )
}

fn parse(line: &[u8]) -> Result<Vec<UpstreamEvent>, UpstreamError> {
    let text = std::str::from_utf8(line)
        .map_err(|_| UpstreamError::Invalid("a line is not UTF-8".into()))?
        .trim();
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let line: Line = serde_json::from_str(text)
        .map_err(|e| UpstreamError::Invalid(format!("a line is not a JSON object: {e}")))?;
    if let Some(error) = line.error {
        return Err(UpstreamError::Unavailable(format!(
            "it reported an error: {error}"
        )));
    }
    let mut events = Vec::new();
    if let Some(id) = line.conversation_id.filter(|id| !id.is_empty()) {
        events.push(UpstreamEvent::Conversation(id));
    }
    if let Some(t) = line.text.filter(|t| !t.is_empty()) {
        events.push(UpstreamEvent::Text(t));
    }
    Ok(events)
}

/// A conversation id as one path segment: anything but unreserved characters escaped.
fn encode_segment(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for b in id.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A transport error for logs: what failed, without the URL.
fn describe(e: reqwest::Error) -> String {
    if e.is_timeout() {
        "it took too long".into()
    } else if e.is_connect() {
        "it could not be reached".into()
    } else {
        e.without_url().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(body: &[&str]) -> Vec<Result<UpstreamEvent, UpstreamError>> {
        let chunks: Vec<Result<bytes::Bytes, UpstreamError>> = body
            .iter()
            .map(|c| Ok(bytes::Bytes::from(c.as_bytes().to_vec())))
            .collect();
        futures::executor::block_on(lines(futures::stream::iter(chunks)).collect())
    }

    #[test]
    fn lines_split_across_chunks_are_joined_and_the_last_needs_no_newline() {
        let got = events(&[
            "{\"conversation_id\":\"c-1\"}\n{\"te",
            "xt\":\"Hel\"}\n\n{\"text\":\"lo\",\"extra\":1}",
        ]);
        assert_eq!(
            got,
            vec![
                Ok(UpstreamEvent::Conversation("c-1".into())),
                Ok(UpstreamEvent::Text("Hel".into())),
                Ok(UpstreamEvent::Text("lo".into())),
            ]
        );
    }

    #[test]
    fn garbage_or_an_error_line_ends_the_answer_as_a_failure() {
        let got = events(&["{\"conversation_id\":\"c\"}\nnot json\n{\"text\":\"x\"}\n"]);
        assert!(
            matches!(got.last(), Some(Err(UpstreamError::Invalid(_)))),
            "{got:?}"
        );
        assert_eq!(got.len(), 2);
        let got = events(&["{\"error\":\"boom\"}\n"]);
        assert!(
            matches!(got[0], Err(UpstreamError::Unavailable(_))),
            "{got:?}"
        );
    }

    #[test]
    fn a_runaway_line_is_cut() {
        let long = "x".repeat(MAX_LINE_BYTES + 10);
        let got = events(&[&long]);
        assert!(
            matches!(got.last(), Some(Err(UpstreamError::Invalid(_)))),
            "{got:?}"
        );
    }

    #[test]
    fn the_config_needs_an_http_url_and_sane_numbers() {
        let c = UpstreamChatConnector::new();
        assert!(
            c.check_config("t", &json!({"url": "http://localhost:9/chat"}))
                .is_ok()
        );
        assert!(
            c.check_config("t", &json!({"url": "https://x/chat"}))
                .is_ok()
        );
        assert!(c.check_config("t", &json!({"url": "https://"})).is_err());
        assert!(c.check_config("t", &json!({})).is_err());
        assert!(c.check_config("t", &json!({"url": "ftp://x"})).is_err());
        assert!(
            c.check_config("t", &json!({"url": "http://x", "timeout_ms": 0}))
                .is_err()
        );
        assert!(
            c.check_config("t", &json!({"url": "http://x", "lifetime_s": -1}))
                .is_err()
        );
    }

    #[test]
    fn ids_are_one_path_segment() {
        assert_eq!(encode_segment("a/b c?"), "a%2Fb%20c%3F");
        assert_eq!(encode_segment("conv-1_x.y~"), "conv-1_x.y~");
    }
}
