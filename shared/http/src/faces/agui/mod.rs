//! AG-UI: `POST /v1/agui` takes a `RunAgentInput` and streams the turn as AG-UI events
//! (Server-Sent Events, one JSON event per `data:` line), so that an AG-UI frontend
//! (CopilotKit's and others, through `@ag-ui/client`'s `HttpAgent`) runs Baton as its
//! agent.
//!
//! - The thread is the episode: `Principal::episode_for(threadId)`, created by the
//!   thread's first run, reachable by no other caller. The run id is the turn id, so a
//!   retried run is replayed, not run again.
//! - A refused turn (too long, busy) is a `RUN_ERROR` with the plain message after
//!   `RUN_STARTED`; input that is not a run at all is refused before any run, with the
//!   native error body.

mod events;
mod input;

use std::convert::Infallible;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use baton_runtime::TurnRequest;
use futures::StreamExt as _;
use serde_json::{Value, json};

use self::events::Run;
use crate::error::Error;
use crate::principal::Caller;
use crate::state::AppState;
use crate::{body, sse, turns};

/// The face's routes.
pub(crate) fn routes() -> Router<AppState> {
    Router::new().route("/v1/agui", post(run))
}

fn frame(event: &Value) -> Result<SseEvent, Infallible> {
    Ok(SseEvent::default().data(event.to_string()))
}

async fn run(
    State(state): State<AppState>,
    Caller(principal): Caller,
    headers: HeaderMap,
    request: Request,
) -> Result<Response, Error> {
    let bytes = turns::read_body(&state, request).await?;
    if !body::is_json(&headers) {
        return Err(Error::ContentType);
    }
    let input = input::parse(&bytes)?;
    let request = TurnRequest {
        turn_id: Some(input.run_id.clone()),
        ..TurnRequest::new(principal, input.text.clone())
    };
    let stream = match turns::start_in(&state, &headers, &input.thread_id, request, "POST /v1/agui")
        .await
    {
        Ok(stream) => stream,
        Err(refused @ Error::Rejected(_)) => {
            // The run exists for the client from its first event: it ends in RUN_ERROR.
            let error = json!({ "type": "RUN_ERROR", "message": refused.to_string(), "code": refused.code() });
            let started = events::started(&input.thread_id, &input.run_id);
            let frames = futures::stream::iter([frame(&started), frame(&error)]);
            return Ok(Sse::new(frames).into_response());
        }
        Err(e) => return Err(e),
    };
    let headers = turns::id_headers(&stream);
    let mut run = Run::new(
        &input.thread_id,
        &input.run_id,
        &stream.turn_id,
        &stream.episode_id,
    );
    let first = futures::stream::iter([run.started()]);
    let rest = stream.flat_map(move |wire| futures::stream::iter(run.events(&wire.event)));
    let frames = first.chain(rest).map(|event| frame(&event));
    Ok((headers, Sse::new(frames).keep_alive(sse::keep_alive())).into_response())
}
