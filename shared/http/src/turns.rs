//! `POST /v1/turns`: start a turn and stream its events.

use std::convert::Infallible;

use axum::body::Bytes;
use axum::extract::rejection::PathRejection;
use axum::extract::{FromRequest, Path, Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::sse::Sse;
use axum::response::{IntoResponse, Response};
use baton_core::Principal;
use baton_core::events::PROTOCOL_VERSION;
use baton_core::interruption::{Answer, Reply};
use baton_runtime::{TurnRejection, TurnRequest, TurnStream};
use futures::StreamExt;
use serde::Deserialize;
use tracing::Instrument as _;

use crate::body;
use crate::caller::Caller;
use crate::error::Error;
use crate::sse;
use crate::state::AppState;

/// Protocol version of the event stream.
const PROTOCOL_HEADER: HeaderName = HeaderName::from_static("x-baton-protocol");
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

/// Reads a request body within the size limit (the router's `DefaultBodyLimit`) and the
/// state's body timeout.
pub(crate) async fn read_body(state: &AppState, request: Request) -> Result<Bytes, Error> {
    let read = Bytes::from_request(request, state);
    let read = match state.body_timeout {
        Some(limit) => tokio::time::timeout(limit, read)
            .await
            .map_err(|_| Error::BodyTimeout)?,
        None => read.await,
    };
    read.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            Error::BodyTooLarge {
                limit: state.max_body_bytes,
            }
        } else {
            tracing::info!(error = %rejection.body_text(), "turn body could not be read");
            Error::UnreadableBody
        }
    })
}

/// The caller is checked first, then the body; the turn runs on its own task, so a client
/// that leaves mid-stream only stops the frames: the turn still commits (its answer is in
/// the episode's history).
pub(crate) async fn post_turn(
    State(state): State<AppState>,
    Caller(principal): Caller,
    headers: HeaderMap,
    request: Request,
) -> Result<Response, Error> {
    let bytes = read_body(&state, request).await?;
    let body = body::parse(&headers, &bytes)?;
    let request = TurnRequest {
        principal,
        episode_id: body.episode_id,
        turn_id: body.turn_id,
        text: body.message,
        locale: body.locale,
        location: body.location,
        direct_line_mode: body.direct_line_mode,
        must_consult: body.must_consult,
        resume: None,
        reply_in_words: false,
        face: baton_runtime::FACE_API,
        message_id: None,
    };
    let stream = start(&state, &headers, request, "POST /v1/turns").await?;
    Ok(native(stream))
}

/// A turn's events as the native stream, with the protocol's and the ids' headers.
fn native(stream: TurnStream) -> Response {
    let mut extra = HeaderMap::new();
    extra.insert(PROTOCOL_HEADER, HeaderValue::from(PROTOCOL_VERSION));
    extra.extend(id_headers(&stream));
    let frames = stream.map(|wire| Ok::<_, Infallible>(sse::event(&wire)));
    let sse = Sse::new(frames).keep_alive(sse::keep_alive());
    (extra, sse).into_response()
}

/// The body of `POST /v1/turns/{turn_id}/resume`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResumeBody {
    /// The episode of the waiting turn.
    episode_id: String,
    /// The interruption answered (from its `interruption` event).
    interruption_id: String,
    /// To an approval: `approve` or `decline`; to a question, `decline` not to answer.
    #[serde(default)]
    decision: Option<Decision>,
    /// To a question: the answer, in words.
    #[serde(default)]
    answer: Option<String>,
}

/// A decision as the body names it.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Decision {
    Approve,
    Decline,
}

/// What the resume body must hold, for its error message.
const RESUME_SHAPE: &str = "send {\"episode_id\", \"interruption_id\"} with \"decision\": \"approve\" or \"decline\", or with \"answer\": the answer to a question";

/// `POST /v1/turns/{turn_id}/resume`: the user's answer to what the turn waits for
/// (D-36). The resumed turn streams as `POST /v1/turns` does.
pub(crate) async fn post_resume(
    State(state): State<AppState>,
    Caller(principal): Caller,
    turn_id: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    request: Request,
) -> Result<Response, Error> {
    let Ok(Path(turn_id)) = turn_id else {
        return Err(Error::InvalidBody(
            "the turn id in the path is not valid".into(),
        ));
    };
    let bytes = read_body(&state, request).await?;
    if !body::is_json(&headers) {
        return Err(Error::ContentType);
    }
    let body: ResumeBody = serde_json::from_slice(&bytes).map_err(|e| {
        if e.is_syntax() || e.is_eof() {
            Error::MalformedJson
        } else {
            Error::InvalidBody(format!("{e}; {RESUME_SHAPE}"))
        }
    })?;
    let answer = match (body.decision, body.answer) {
        (Some(Decision::Approve), None) => Answer::Approve,
        (Some(Decision::Decline), None) => Answer::Decline,
        (None, Some(words)) => Answer::Text(words),
        _ => {
            return Err(Error::InvalidBody(format!(
                "give a decision or an answer, not both or neither; {RESUME_SHAPE}"
            )));
        }
    };
    let reply = Reply {
        interruption_id: body.interruption_id,
        answer,
    };
    let stream = resume(
        &state,
        &headers,
        principal,
        &body.episode_id,
        &turn_id,
        reply,
        baton_runtime::FACE_API,
        "POST /v1/turns/{turn_id}/resume",
    )
    .await?;
    Ok(native(stream))
}

/// Starts a turn, under a span continuing the caller's trace when the request carries a
/// `traceparent` (D-33); `span` names that span. Every face starts its turns here.
pub(crate) async fn start(
    state: &AppState,
    headers: &HeaderMap,
    request: TurnRequest,
    span: &'static str,
) -> Result<TurnStream, Error> {
    traced(state, headers, span, state.runtime.run_turn(request)).await
}

/// Like [`start`], in the caller's conversation `conversation`, a client's own id for it
/// (see `Runtime::run_turn_in`).
pub(crate) async fn start_in(
    state: &AppState,
    headers: &HeaderMap,
    conversation: &str,
    request: TurnRequest,
    span: &'static str,
) -> Result<TurnStream, Error> {
    let run = state.runtime.run_turn_in(conversation, request);
    traced(state, headers, span, run).await
}

/// Like [`start_in`], in a conversation whose id was just made: its episode is created
/// without being looked for first (see `Runtime::run_turn_in_new`).
pub(crate) async fn start_new_in(
    state: &AppState,
    headers: &HeaderMap,
    conversation: &str,
    request: TurnRequest,
    span: &'static str,
) -> Result<TurnStream, Error> {
    let run = state.runtime.run_turn_in_new(conversation, request);
    traced(state, headers, span, run).await
}

/// Resumes `principal`'s turn `turn_id` of `episode_id` with `reply`, given through
/// `face` (see `Runtime::resume_turn`), under the caller's trace as [`start`] does.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn resume(
    state: &AppState,
    headers: &HeaderMap,
    principal: Principal,
    episode_id: &str,
    turn_id: &str,
    reply: Reply,
    face: &'static str,
    span: &'static str,
) -> Result<TurnStream, Error> {
    let run = state
        .runtime
        .resume_turn(principal, episode_id, turn_id, reply, face);
    traced(state, headers, span, run).await
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
