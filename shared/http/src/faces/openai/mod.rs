//! OpenAI-compatible chat completions: `POST /v1/chat/completions`, streamed or not, and
//! `GET /v1/models`, so that a chat UI or SDK pointed at Baton's base URL runs turns.
//!
//! - The last user message is the turn; earlier messages are not replayed (the episode
//!   holds the history).
//! - The episode is `x-baton-episode-id` or `metadata.episode_id`, and new otherwise; the
//!   response names it in `x-baton-episode-id` (and in the `baton` extension field).
//!   `x-baton-turn-id` makes a retry idempotent, as on `/v1/turns` (D-25).
//! - The consulted record travels in the `baton` extension field: on the finish chunk of
//!   a stream, on the response otherwise, which also has it as `x-baton-consulted` (a
//!   stream's headers leave before anyone is consulted).
//! - Refusals take OpenAI's error shape, as every refusal of the HTTP edge does.

mod request;
mod response;

use std::convert::Infallible;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Json;
use axum::Router;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue};
use axum::response::sse::{Event as SseEvent, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use baton_runtime::TurnRequest;
use futures::StreamExt as _;
use serde_json::json;

use self::response::Completion;
use crate::caller::Caller;
use crate::catalog::{Endpoint, endpoint};
use crate::error::Error;
use crate::state::AppState;
use crate::{body, sse, start};

/// The consulted specialists' ids, comma-separated, on a response that is not streamed.
const CONSULTED_HEADER: HeaderName = HeaderName::from_static("x-baton-consulted");

/// The entry points clients and the console list.
pub(crate) const ENDPOINTS: &[Endpoint] = &[endpoint(
    "OpenAI chat completions",
    "POST",
    "/v1/chat/completions",
)];

/// The face's routes.
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/chat/completions", post(completions))
        .route("/v1/models", get(models))
        .route("/v1/models/{id}", get(model))
}

/// The assistant as OpenAI describes a model.
fn model_object(state: &AppState) -> serde_json::Value {
    json!({
        "id": state.runtime.entry().id.to_string(),
        "object": "model",
        "created": 0,
        "owned_by": "baton",
    })
}

/// `GET /v1/models`: the assistant, as the one model a client can pick.
async fn models(State(state): State<AppState>, caller: Result<Caller, Error>) -> Response {
    if let Err(e) = caller {
        return e.into_response();
    }
    Json(json!({ "object": "list", "data": [model_object(&state)] })).into_response()
}

/// `GET /v1/models/{id}`: the assistant when `id` names it (`models.retrieve`).
async fn model(
    State(state): State<AppState>,
    caller: Result<Caller, Error>,
    Path(id): Path<String>,
) -> Response {
    if let Err(e) = caller {
        return e.into_response();
    }
    if *state.runtime.entry().id != *id {
        return Error::NoRoute.into_response();
    }
    Json(model_object(&state)).into_response()
}

async fn completions(
    State(state): State<AppState>,
    caller: Result<Caller, Error>,
    headers: HeaderMap,
    request: Request,
) -> Response {
    match complete(state, caller, headers, request).await {
        Ok(response) => response,
        Err(e) => e.into_response(),
    }
}

fn header(headers: &HeaderMap, name: &HeaderName) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
}

/// The caller first, then the body, as on `/v1/turns`; then the turn, translated.
async fn complete(
    state: AppState,
    caller: Result<Caller, Error>,
    headers: HeaderMap,
    request: Request,
) -> Result<Response, Error> {
    let Caller(principal) = caller?;
    let bytes = start::read_body(&state, request).await?;
    if !body::is_json(&headers) {
        return Err(Error::ContentType);
    }
    let mut chat = start::parse_body(bytes, request::parse).await??;
    let request = TurnRequest {
        principal,
        episode_id: header(&headers, &start::EPISODE_HEADER).or(chat.episode_id),
        conversation: None,
        turn_id: header(&headers, &start::TURN_HEADER),
        text: chat.text,
        locale: None,
        location: None,
        direct_line_mode: None,
        must_consult: Vec::new(),
        resume: None,
        // The next message answers what the conversation waits on, if it does (D-36).
        reply_in_words: true,
        face: "openai",
        message_id: None,
        pictures: std::mem::take(&mut chat.pictures),
    };
    let stream = start::start(&state, &headers, request, "POST /v1/chat/completions").await?;
    let mut extra = start::id_headers(&stream);
    let created = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    let mut completion = Completion::new(&stream.turn_id, &stream.episode_id, &chat.model, created);
    if chat.stream {
        let include_usage = chat.include_usage;
        let opening = futures::stream::iter([completion.opening()]);
        let chunks = stream.flat_map(move |wire| {
            futures::stream::iter(completion.chunks(&wire.event, include_usage))
        });
        let done = futures::stream::iter(["[DONE]".to_owned()]);
        let frames = opening
            .chain(chunks)
            .chain(done)
            .map(|data| Ok::<_, Infallible>(SseEvent::default().data(data)));
        return Ok((extra, Sse::new(frames).keep_alive(sse::keep_alive())).into_response());
    }
    let mut stream = stream;
    while let Some(wire) = stream.next().await {
        completion.fold(&wire.event);
    }
    if let Ok(v) = HeaderValue::from_str(&completion.consulted_ids()) {
        extra.insert(CONSULTED_HEADER, v);
    }
    Ok((extra, Json(completion.response())).into_response())
}
