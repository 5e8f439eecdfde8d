//! One streamed chat-completions call as a [`ModelStream`]: the probe on first use, the
//! request, the status, then server-sent events decoded until `[DONE]` or the end.
//!
//! Bounds, so that a broken or hostile server cannot hold a turn or its memory: a stall
//! limit before the first event and between events, a limit on one line (a server that
//! never sends a newline) and on the whole answer. A stream cut before the server said
//! why the message ended is an error.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use baton_core::ports::model::{ModelError, ModelEvent, ModelStream};
use bytes::Bytes;
use eventsource_stream::Eventsource as _;
use futures::{Stream, StreamExt as _};
use serde_json::Value;
use tracing::Instrument as _;

use crate::assemble::Assembler;
use crate::wire::Chunk;
use crate::{Route, error, probe};

/// The longest line a server may send (one chunk is a line).
const MAX_LINE_BYTES: usize = 1024 * 1024;
/// The most a whole answer may take (an answer is bounded by its token limit; this is far
/// above any such limit).
const MAX_ANSWER_BYTES: usize = 32 * 1024 * 1024;
/// How much of an error body is kept for the logs.
const ERROR_BODY_BYTES: usize = 4 * 1024;

type Events =
    std::pin::Pin<Box<dyn Stream<Item = Result<eventsource_stream::Event, String>> + Send>>;

enum Phase {
    Start {
        client: reqwest::Client,
        route: Arc<Route>,
        body: Value,
        probe: bool,
    },
    Reading {
        events: Events,
        assembler: Assembler,
        server: Arc<str>,
    },
    Done,
}

struct State {
    phase: Phase,
    pending: VecDeque<ModelEvent>,
    stall: Duration,
    span: tracing::Span,
}

/// The call, with the probe first when the route was not probed yet.
pub(crate) fn stream(
    client: reqwest::Client,
    route: Arc<Route>,
    body: Value,
    stall: Duration,
) -> ModelStream {
    let span = tracing::info_span!(
        "chat",
        otel.name = %format_args!("chat {}", route.model_id),
        otel.kind = "client",
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = "openai_compatible",
        gen_ai.request.model = %route.model_id,
        server.address = %route.server,
    );
    raw(client, route, body, stall, true, span)
}

/// The call without the probe (the probe's own call).
pub(crate) fn unprobed(
    client: reqwest::Client,
    route: Arc<Route>,
    body: Value,
    stall: Duration,
) -> ModelStream {
    raw(client, route, body, stall, false, tracing::Span::current())
}

fn raw(
    client: reqwest::Client,
    route: Arc<Route>,
    body: Value,
    stall: Duration,
    probe: bool,
    span: tracing::Span,
) -> ModelStream {
    let state = State {
        phase: Phase::Start {
            client,
            route,
            body,
            probe,
        },
        pending: VecDeque::new(),
        stall,
        span,
    };
    let events = futures::stream::unfold(state, |state| {
        let span = state.span.clone();
        step(state).instrument(span)
    });
    Box::pin(events)
}

/// The stream's next item.
async fn step(mut state: State) -> Option<(Result<ModelEvent, ModelError>, State)> {
    {
        loop {
            if let Some(event) = state.pending.pop_front() {
                return Some((Ok(event), state));
            }
            match std::mem::replace(&mut state.phase, Phase::Done) {
                Phase::Done => return None,
                Phase::Start {
                    client,
                    route,
                    body,
                    probe,
                } => match start(&client, &route, &body, probe, state.stall).await {
                    Ok(events) => {
                        state.phase = Phase::Reading {
                            events,
                            assembler: Assembler::default(),
                            server: route.server.clone(),
                        }
                    }
                    Err(e) => return Some((Err(e), state)),
                },
                Phase::Reading {
                    mut events,
                    mut assembler,
                    server,
                } => match next(&mut events, &mut assembler, &server, state.stall).await {
                    Ok(Step::More(out)) => {
                        state.pending.extend(out);
                        state.phase = Phase::Reading {
                            events,
                            assembler,
                            server,
                        };
                    }
                    Ok(Step::End) => {
                        let mut out = Vec::new();
                        match assembler.finish(&mut out) {
                            Ok(()) => state.pending.extend(out),
                            Err(e) => return Some((Err(e), state)),
                        }
                    }
                    Err(e) => return Some((Err(e), state)),
                },
            }
        }
    }
}

/// Sends the request and checks the answer's status; the events of a good answer.
async fn start(
    client: &reqwest::Client,
    route: &Arc<Route>,
    body: &Value,
    probe: bool,
    stall: Duration,
) -> Result<Events, ModelError> {
    if probe && forces_a_tool(body) {
        let send = |body| unprobed(client.clone(), route.clone(), body, stall);
        match probe::verdict(route, send).await? {
            probe::ProbeVerdict::Capable => {}
            probe::ProbeVerdict::CannotForceToolChoice(message) => {
                return Err(ModelError::Invalid(message));
            }
        }
    }
    let mut builder = client.post(&route.url).json(body);
    if let Some(key) = &route.api_key {
        builder = builder.bearer_auth(key);
    }
    let server = &*route.server;
    let response = tokio::time::timeout(stall, builder.send())
        .await
        .map_err(|_| ModelError::Timeout)?
        .map_err(|e| error::from_transport(&e, server))?;
    let status = response.status();
    if !status.is_success() {
        let body = bounded_text(response, ERROR_BODY_BYTES).await;
        let error = error::from_status(status, &body, server);
        tracing::warn!(server, status = status.as_u16(), body = %body, "the model server refused the call");
        return Err(error);
    }
    let json = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    let bytes = guarded(response.bytes_stream(), server.to_owned());
    if json {
        // A server that answered the whole completion at once: one "event" of it.
        let whole = futures::stream::once(async move {
            let mut all = Vec::new();
            let mut bytes = std::pin::pin!(bytes);
            while let Some(piece) = bytes.next().await {
                all.extend_from_slice(&piece?);
            }
            Ok(eventsource_stream::Event {
                data: String::from_utf8_lossy(&all).into_owned(),
                ..Default::default()
            })
        });
        return Ok(Box::pin(whole));
    }
    Ok(Box::pin(bytes.eventsource().map(|e| {
        e.map_err(|e| format!("the event stream is not valid: {e}"))
    })))
}

/// The byte stream with the line and answer bounds applied.
fn guarded<E: std::fmt::Display>(
    bytes: impl Stream<Item = Result<Bytes, E>> + Send + 'static,
    server: String,
) -> impl Stream<Item = Result<Bytes, String>> + Send + 'static {
    let mut line = 0usize;
    let mut total = 0usize;
    bytes.map(move |piece| {
        let piece = piece.map_err(|e| format!("reading from {server} failed: {e}"))?;
        total += piece.len();
        if total > MAX_ANSWER_BYTES {
            return Err(format!("{server} sent more than {MAX_ANSWER_BYTES} bytes"));
        }
        match piece.iter().rposition(|b| *b == b'\n') {
            Some(at) => line = piece.len() - at - 1,
            None => line += piece.len(),
        }
        if line > MAX_LINE_BYTES {
            return Err(format!(
                "{server} sent a line longer than {MAX_LINE_BYTES} bytes"
            ));
        }
        Ok(piece)
    })
}

enum Step {
    More(Vec<ModelEvent>),
    End,
}

/// The next event's normalized events, or the end.
async fn next(
    events: &mut Events,
    assembler: &mut Assembler,
    server: &str,
    stall: Duration,
) -> Result<Step, ModelError> {
    loop {
        let event = tokio::time::timeout(stall, events.next())
            .await
            .map_err(|_| ModelError::Timeout)?;
        let Some(event) = event else {
            return Ok(Step::End);
        };
        let event = event.map_err(ModelError::Unavailable)?;
        let data = event.data.trim();
        if data.is_empty() {
            continue;
        }
        if data == "[DONE]" {
            return Ok(Step::End);
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|e| {
            tracing::warn!(server, error = %e, "the model server sent a chunk that is not JSON");
            ModelError::Malformed(format!("{server} sent a chunk that is not JSON: {e}"))
        })?;
        let mut out = Vec::new();
        assembler.on_chunk(chunk, &mut out)?;
        if !out.is_empty() {
            return Ok(Step::More(out));
        }
    }
}

/// A whole answer already received (a recording), decoded by the same path as a live
/// stream.
pub(crate) async fn decode(pieces: Vec<Bytes>) -> Result<Vec<ModelEvent>, ModelError> {
    let bytes = guarded(
        futures::stream::iter(pieces.into_iter().map(Ok::<_, std::convert::Infallible>)),
        "the recording".to_owned(),
    );
    let mut events: Events = Box::pin(
        bytes
            .eventsource()
            .map(|e| e.map_err(|e| format!("the event stream is not valid: {e}"))),
    );
    let mut assembler = Assembler::default();
    let mut out = Vec::new();
    loop {
        match next(&mut events, &mut assembler, "the recording", STALL_NEVER).await? {
            Step::More(more) => out.extend(more),
            Step::End => {
                assembler.finish(&mut out)?;
                return Ok(out);
            }
        }
    }
}

/// No stall limit: a recording is all there.
const STALL_NEVER: Duration = Duration::from_secs(u64::MAX / 4);

/// Whether the body forces a tool call (a named function, or `required`).
fn forces_a_tool(body: &Value) -> bool {
    match body.get("tool_choice") {
        Some(Value::Object(_)) => true,
        Some(Value::String(s)) => s == "required",
        _ => false,
    }
}

/// At most `limit` bytes of a body, as text (for logs).
async fn bounded_text(response: reqwest::Response, limit: usize) -> String {
    let mut out = Vec::new();
    let mut bytes = response.bytes_stream();
    while let Some(Ok(piece)) = bytes.next().await {
        out.extend_from_slice(&piece);
        if out.len() >= limit {
            out.truncate(limit);
            break;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
