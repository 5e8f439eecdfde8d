//! How every face starts a turn and answers one that waits: the request's body read within
//! its limits, the one call into the runtime under the caller's trace, and the ids a
//! response carries. `turns.rs` is the native route; each face uses this module too.

use axum::body::Bytes;
use axum::extract::Request;
use axum::http::header::CONTENT_LENGTH;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use baton_core::Principal;
use baton_core::interruption::Reply;
use baton_runtime::{Conversation, Resume, TurnRejection, TurnRequest, TurnStream};
use http_body_util::{BodyExt as _, LengthLimitError, Limited};
use tracing::Instrument as _;

use crate::error::Error;
use crate::state::AppState;

/// Protocol version of the event stream.
pub(crate) const PROTOCOL_HEADER: HeaderName = HeaderName::from_static("x-baton-protocol");
/// The turn's id (generated unless the client sent one).
pub(crate) const TURN_HEADER: HeaderName = HeaderName::from_static("x-baton-turn-id");
/// The episode's id (new unless the client continued one).
pub(crate) const EPISODE_HEADER: HeaderName = HeaderName::from_static("x-baton-episode-id");
/// Present when a completed turn is replayed rather than run (D-25).
const REPLAY_HEADER: HeaderName = HeaderName::from_static("x-baton-replay");
/// The caller's W3C trace context (D-33).
const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");
/// Asks buffering proxies (nginx) to pass frames through as they come.
const ACCEL_BUFFERING_HEADER: HeaderName = HeaderName::from_static("x-accel-buffering");

/// Reads the body of a request that may start a turn, within
/// [`AppState::turn_body_limit`] and the state's body timeout.
pub(crate) async fn read_body(state: &AppState, request: Request) -> Result<Bytes, Error> {
    read_body_within(state, request, state.turn_body_limit()).await
}

/// Reads a request body within `limit` bytes (413 past it, naming the limit) and the
/// state's body timeout.
pub(crate) async fn read_body_within(
    state: &AppState,
    request: Request,
    limit: usize,
) -> Result<Bytes, Error> {
    // A body that says it is too large is refused before any of it is read.
    let declared = request
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(Error::BodyTooLarge { limit });
    }
    let read = Limited::new(request.into_body(), limit).collect();
    let read = match state.body_timeout {
        Some(timeout) => tokio::time::timeout(timeout, read)
            .await
            .map_err(|_| Error::BodyTimeout)?,
        None => read.await,
    };
    match read {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => {
            Err(Error::BodyTooLarge { limit })
        }
        Err(e) => {
            tracing::info!(error = %e, "request body could not be read");
            Err(Error::UnreadableBody)
        }
    }
}

/// Body size past which parsing leaves the async threads: megabytes of JSON and base64
/// (a photo) would hold a thread that other requests need.
const PARSE_INLINE_BYTES: usize = 64 * 1024;

/// Parses `bytes` with `parse`, on a blocking thread when they are large; `Err` only when
/// that thread failed.
pub(crate) async fn parse_body<T: Send + 'static>(
    bytes: Bytes,
    parse: impl FnOnce(&[u8]) -> T + Send + 'static,
) -> Result<T, Error> {
    if bytes.len() <= PARSE_INLINE_BYTES {
        return Ok(parse(&bytes));
    }
    tokio::task::spawn_blocking(move || parse(&bytes))
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "parsing a request body failed");
            Error::UnreadableBody
        })
}

/// Starts a turn, or resumes one, as the request says (see `Runtime::run_turn`), under a
/// span continuing the caller's trace when the request carries a `traceparent` (D-33);
/// `span` names that span. Every face starts its turns here.
pub(crate) async fn start(
    state: &AppState,
    headers: &HeaderMap,
    request: TurnRequest,
    span: &'static str,
) -> Result<TurnStream, Error> {
    traced(state, headers, span, state.runtime.run_turn(request)).await
}

/// A request that answers `principal`'s turn `turn_id` of `episode_id`, which waits, with
/// `reply`, given through `face` (D-36).
pub(crate) fn answering(
    principal: Principal,
    episode_id: &str,
    turn_id: &str,
    reply: Reply,
    face: &'static str,
) -> TurnRequest {
    TurnRequest {
        episode_id: Some(episode_id.to_owned()),
        resume: Some(Resume {
            turn_id: turn_id.to_owned(),
            reply,
        }),
        face,
        ..TurnRequest::new(principal, String::new())
    }
}

/// `request` in the client's own conversation `id` (`new`: the id was just made).
pub(crate) fn in_conversation(request: TurnRequest, id: &str, new: bool) -> TurnRequest {
    TurnRequest {
        conversation: Some(Conversation {
            id: id.to_owned(),
            new,
        }),
        ..request
    }
}

/// Runs `run` (a turn's start) under the request's SERVER span when traces are exported,
/// continuing the caller's trace if it sent one.
async fn traced(
    state: &AppState,
    headers: &HeaderMap,
    span: &'static str,
    run: impl Future<Output = Result<TurnStream, TurnRejection>>,
) -> Result<TurnStream, Error> {
    let traceparent = headers.get(TRACEPARENT).and_then(|v| v.to_str().ok());
    let ran = match state.trace_continuation {
        Some(continuing) => {
            let request = continuing(span, traceparent);
            let ran = run.instrument(request.clone()).await;
            let status = match &ran {
                Ok(_) => StatusCode::OK,
                Err(r) => Error::Rejected(r.clone()).status(),
            };
            request.record("http.response.status_code", status.as_u16());
            ran
        }
        None => run.await,
    };
    let stream = ran.map_err(|r| {
        tracing::info!(kind = ?r.kind, message = %r.message, "turn refused");
        Error::Rejected(r)
    })?;
    tracing::info!(turn_id = %stream.turn_id, episode_id = %stream.episode_id, replay = stream.replay, "turn streaming");
    Ok(stream)
}

/// The headers every face's response carries: the turn's and the episode's ids, whether
/// the turn is replayed, and no buffering by proxies.
pub(crate) fn id_headers(stream: &TurnStream) -> HeaderMap {
    let mut extra = HeaderMap::new();
    extra.insert(ACCEL_BUFFERING_HEADER, HeaderValue::from_static("no"));
    // Ids were checked by the runtime (letters, digits, `-_.:`), so they are valid headers.
    for (name, value) in [
        (TURN_HEADER, &stream.turn_id),
        (EPISODE_HEADER, &stream.episode_id),
    ] {
        if let Ok(v) = HeaderValue::from_str(value) {
            extra.insert(name, v);
        }
    }
    if stream.replay {
        extra.insert(REPLAY_HEADER, HeaderValue::from_static("true"));
    }
    extra
}
