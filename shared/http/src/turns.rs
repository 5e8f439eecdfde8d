//! `POST /v1/turns`: start a turn and stream its events.

use std::convert::Infallible;

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, HeaderValue};
use axum::response::sse::Sse;
use axum::response::{IntoResponse, Response};
use baton_core::events::PROTOCOL_VERSION;
use baton_core::interruption::{Answer, Reply};
use baton_runtime::{TurnRequest, TurnStream};
use futures::StreamExt;
use serde::Deserialize;

use crate::body;
use crate::caller::Caller;
use crate::error::Error;
use crate::sse;
use crate::start::{
    PROTOCOL_HEADER, answering, id_headers, parse_body, read_body, read_body_within, start,
};
use crate::state::AppState;

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
    if !body::is_json(&headers) {
        return Err(Error::ContentType);
    }
    let (body, pictures) = parse_body(bytes, |bytes| {
        let mut body = body::parse_json(bytes)?;
        let pictures = body.picture_bytes()?;
        // The base64 is done with; the turn may hold the body a while.
        body.pictures = Vec::new();
        Ok::<_, Error>((body, pictures))
    })
    .await??;
    let request = TurnRequest {
        principal,
        episode_id: body.episode_id,
        conversation: None,
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
        pictures,
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
    let bytes = read_body_within(&state, request, state.max_body_bytes).await?;
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
    let request = answering(
        principal,
        &body.episode_id,
        &turn_id,
        reply,
        baton_runtime::FACE_API,
    );
    let stream = start(&state, &headers, request, "POST /v1/turns/{turn_id}/resume").await?;
    Ok(native(stream))
}
