//! The stream protocol on the wire: one turn event per Server-Sent Events frame, and a
//! small decoder for clients (tests, the CLI, the benchmark client).
//!
//! A frame is
//!
//! ```text
//! id: <seq>
//! event: <event name>
//! data: <the WireEvent as one line of JSON>
//!
//! ```
//!
//! JSON escapes every newline and carriage return inside strings, so `data` is always one
//! line and a frame never depends on how the text inside it is shaped.

use std::time::Duration;

use axum::response::sse::{Event as SseEvent, KeepAlive};
use baton_core::events::WireEvent;
use serde_json::json;

/// How often an idle stream sends a comment so that proxies keep it open.
pub const KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(15);

/// The keep-alive every turn stream uses: a comment frame every [`KEEP_ALIVE_INTERVAL`].
pub fn keep_alive() -> KeepAlive {
    KeepAlive::new().interval(KEEP_ALIVE_INTERVAL)
}

/// The SSE frame of one turn event: `id` is its `seq`, `event` its name, `data` its JSON.
pub fn event(wire: &WireEvent) -> SseEvent {
    SseEvent::default()
        .id(wire.seq.to_string())
        .event(wire.event.name())
        .json_data(wire)
        .unwrap_or_else(|e| {
            tracing::error!(error = %e, turn_id = %wire.turn_id, seq = wire.seq, "event does not serialize");
            fallback(wire)
        })
}

/// A plain error event in place of one that could not be serialized (never expected: every
/// event is plain data), so the client still sees the sequence advance.
fn fallback(wire: &WireEvent) -> SseEvent {
    let data = json!({
        "v": wire.v,
        "turn_id": &*wire.turn_id,
        "seq": wire.seq,
        "type": "error",
        "message": "Part of the answer could not be sent.",
    });
    SseEvent::default()
        .id(wire.seq.to_string())
        .event("error")
        .data(data.to_string())
}

/// One decoded frame.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseFrame {
    /// The `id` field, if the frame had one.
    pub id: Option<String>,
    /// The `event` field, if the frame had one.
    pub event: Option<String>,
    /// The `data` lines, joined with `\n`.
    pub data: String,
}

impl SseFrame {
    /// The turn event this frame carries.
    ///
    /// # Errors
    /// The data is not a turn event's JSON.
    pub fn wire_event(&self) -> Result<WireEvent, serde_json::Error> {
        serde_json::from_str(&self.data)
    }
}

/// Decodes frames from a complete text: `id`, `event` and `data` fields, frames ended by
/// a blank line, comments and other fields ignored. An unfinished last frame is dropped.
///
/// # Examples
///
/// ```
/// let text = ": keep-alive\n\nid: 1\nevent: thinking\ndata: {\"v\":1,\"turn_id\":\"t1\",\"seq\":1,\"type\":\"thinking\"}\n\n";
/// let frames = baton_http::sse::decode(text);
/// assert_eq!(frames.len(), 1);
/// assert_eq!(frames[0].event.as_deref(), Some("thinking"));
/// assert_eq!(frames[0].wire_event().unwrap().seq, 1);
/// ```
pub fn decode(text: &str) -> Vec<SseFrame> {
    let mut decoder = SseDecoder::new();
    let mut frames = decoder.push(text.as_bytes());
    frames.extend(decoder.finish());
    frames
}

/// An incremental decoder for a byte stream that arrives in arbitrary chunks (a chunk may
/// end inside a line, or inside a UTF-8 character).
///
/// Lines end with `\n`, `\r\n` or `\r`, as the SSE format allows.
#[derive(Debug, Default)]
pub struct SseDecoder {
    buf: Vec<u8>,
    frame: Partial,
}

#[derive(Debug, Default)]
struct Partial {
    id: Option<String>,
    event: Option<String>,
    data: Option<String>,
}

impl SseDecoder {
    /// An empty decoder.
    pub fn new() -> Self {
        SseDecoder::default()
    }

    /// Adds bytes; returns the frames they complete.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<SseFrame> {
        self.buf.extend_from_slice(chunk);
        let mut frames = Vec::new();
        let mut start = 0;
        while let Some(offset) = self.buf[start..]
            .iter()
            .position(|b| *b == b'\n' || *b == b'\r')
        {
            let end = start + offset;
            let ending = match (self.buf[end], self.buf.get(end + 1)) {
                (b'\r', Some(b'\n')) => 2,
                // A `\r` at the end of the buffer may be the first half of `\r\n`.
                (b'\r', None) => break,
                _ => 1,
            };
            let line = String::from_utf8_lossy(&self.buf[start..end]).into_owned();
            start = end + ending;
            if let Some(frame) = self.line(&line) {
                frames.push(frame);
            }
        }
        self.buf.drain(..start);
        frames
    }

    /// Ends the stream: a pending `\r` ends its line; an unfinished frame is dropped.
    pub fn finish(mut self) -> Vec<SseFrame> {
        let mut frames = Vec::new();
        if self.buf.ends_with(b"\r") {
            self.buf.pop();
            let line = String::from_utf8_lossy(&self.buf).into_owned();
            self.buf.clear();
            frames.extend(self.line(&line));
        }
        frames
    }

    fn line(&mut self, line: &str) -> Option<SseFrame> {
        if line.is_empty() {
            let frame = std::mem::take(&mut self.frame);
            // As in browsers, a frame without data is not delivered.
            return frame.data.map(|data| SseFrame {
                id: frame.id,
                event: frame.event,
                data,
            });
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "id" if !value.contains('\0') => self.frame.id = Some(value.to_owned()),
            "event" => self.frame.event = Some(value.to_owned()),
            "data" => match &mut self.frame.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.frame.data = Some(value.to_owned()),
            },
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests;
