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
//! - A turn that waits for the user ends its run with AG-UI's interrupt outcome; the next
//!   run answers it in `resume` (D-36, `answer`).

mod events;
mod input;

use std::convert::Infallible;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use baton_core::Principal;
use baton_core::interruption::{Answer, InterruptionKind, Reply, ReplyError};
use baton_runtime::TurnRequest;
use futures::StreamExt as _;
use serde_json::{Value, json};

use self::events::Run;
use crate::caller::Caller;
use crate::catalog::{Endpoint, endpoint};
use crate::error::Error;
use crate::state::AppState;
use crate::{body, sse, start};

/// The entry points clients and the console list.
pub(crate) const ENDPOINTS: &[Endpoint] = &[endpoint("AG-UI", "POST", "/v1/agui")];

/// The face's routes.
pub(crate) fn routes() -> Router<AppState> {
    Router::new().route("/v1/agui", post(run))
}

/// The face the record names for answers given here.
const FACE: &str = "ag-ui";
/// The span a run's turn starts under.
const SPAN: &str = "POST /v1/agui";

/// A run that answers the interrupt thread `thread_id` waits on (D-36): `{"approved":
/// bool}` (or a bare boolean, or a yes or a no in words) to an approval, `{"answer": "…"}`
/// (or a bare string) to a question; `cancelled` declines.
async fn answer(
    state: &AppState,
    headers: &HeaderMap,
    principal: Principal,
    thread_id: &str,
    resume: &input::Resume,
) -> Result<baton_runtime::TurnStream, Error> {
    let episode = principal.episode_for(thread_id);
    let awaiting = state
        .runtime
        .awaiting(&principal, &episode)
        .await
        .map_err(Error::Rejected)?
        .filter(|a| a.interruption.id == resume.interrupt_id)
        .ok_or_else(|| {
            Error::Rejected(baton_runtime::TurnRejection {
                kind: baton_runtime::RejectionKind::Invalid,
                message: ReplyError::NotWaiting.to_string(),
            })
        })?;
    let payload = &resume.payload;
    let answer = match awaiting.interruption.kind {
        _ if resume.cancelled => Some(Answer::Decline),
        InterruptionKind::AccountLink => payload
            .get("code")
            .or(Some(payload))
            .and_then(Value::as_str)
            .and_then(baton_core::interruption::link_code)
            .map(Answer::Text)
            .or_else(|| {
                (payload.get("approved") == Some(&Value::Bool(false))).then_some(Answer::Decline)
            }),
        InterruptionKind::Approval => payload
            .get("approved")
            .or(Some(payload))
            .and_then(Value::as_bool)
            .map(|yes| {
                if yes {
                    Answer::Approve
                } else {
                    Answer::Decline
                }
            })
            .or_else(|| {
                let words = payload.as_str()?;
                Answer::from_words(&awaiting.interruption, words).ok()
            }),
        InterruptionKind::Question => payload
            .get("answer")
            .or(Some(payload))
            .and_then(Value::as_str)
            .and_then(|words| Answer::from_words(&awaiting.interruption, words).ok()),
    };
    let answer = answer.ok_or_else(|| {
        Error::InvalidBody(match awaiting.interruption.kind {
            InterruptionKind::Approval => {
                "answer an approval with the payload {\"approved\": true} or {\"approved\": false}"
                    .to_owned()
            }
            InterruptionKind::Question => {
                "answer a question with the payload {\"answer\": \"…\"}".to_owned()
            }
            InterruptionKind::AccountLink => {
                "answer an account link with the payload {\"code\": \"…\"}, the code its sign-in page showed, or resume it as cancelled to skip it"
                    .to_owned()
            }
        })
    })?;
    let reply = Reply {
        interruption_id: awaiting.interruption.id.clone(),
        answer,
    };
    let request = start::answering(principal, &episode, &awaiting.turn_id, reply, FACE);
    start::start(state, headers, request, SPAN).await
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
    let bytes = start::read_body(&state, request).await?;
    if !body::is_json(&headers) {
        return Err(Error::ContentType);
    }
    let mut input = start::parse_body(bytes, input::parse).await??;
    let started = match &input.resume {
        Some(resume) => answer(&state, &headers, principal, &input.thread_id, resume).await,
        None => {
            let request = TurnRequest {
                turn_id: Some(input.run_id.clone()),
                face: FACE,
                pictures: std::mem::take(&mut input.pictures),
                ..TurnRequest::new(principal, input.text.clone())
            };
            let request = start::in_conversation(request, &input.thread_id, false);
            start::start(&state, &headers, request, SPAN).await
        }
    };
    let stream = match started {
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
    let headers = start::id_headers(&stream);
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
