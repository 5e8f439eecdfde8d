//! A2A 1.0 (JSON-RPC binding, SSE streaming): Baton as an agent other agents call.
//!
//! - `GET /.well-known/agent-card.json`: the agent card (`card.rs`), public like any
//!   discovery document.
//! - `POST /a2a`: `SendMessage` and `SendStreamingMessage` run a turn as a task
//!   (`task.rs`); `GetTask` reads it back (running in this process, or from the journal);
//!   `CancelTask` stops a running turn, which then commits as canceled.
//! - The context is the conversation: `contextId` names the caller's episode
//!   (`Principal::episode_for`), new when the message has none.
//! - The Direct Line: a message whose `metadata.skillId` names a specialist's skill is
//!   that specialist's, exactly as `#<id> …` typed by the user is (which also works).
//! - The consulted record and the privacy receipt travel in the final status update's
//!   (and the task's) `metadata.baton`.
//! - The principal comes from the request's authentication (D-30), as on every route.

mod card;
mod list;
mod rpc;
mod task;

use std::convert::Infallible;
use std::time::Duration;

use a2a::{
    A2AError, CancelTaskRequest, GetTaskRequest, JsonRpcId, JsonRpcResponse, Message, PartContent,
    Role, SendMessageRequest, SendMessageResponse, StreamResponse, Task, TaskState, methods,
};
use axum::Json;
use axum::Router;
use axum::extract::{Request, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use baton_core::Principal;
use baton_core::interruption::Reply;
use baton_core::picture::Bytes;
use baton_runtime::{RejectionKind, TurnRequest};
use futures::StreamExt as _;
use serde_json::Value;

use self::rpc::Call;
use self::task::{TaskRef, TaskRun};
use crate::caller::Caller;
use crate::catalog::{Endpoint, endpoint};
use crate::error::Error;
use crate::state::AppState;
use crate::{body, sse, start};

/// Where the JSON-RPC calls go.
const PATH: &str = "/a2a";
/// Where the agent card is.
const CARD_PATH: &str = "/.well-known/agent-card.json";
/// The protocol version a client may ask for in `A2A-Version`.
const VERSION_HEADER: &str = "a2a-version";
/// The message metadata key that names a skill.
const SKILL_KEY: &str = "skillId";
/// The face the record names for answers given here.
const FACE: &str = "a2a";
/// How long `CancelTask` waits for the stopped turn to commit before answering.
const CANCEL_WAIT: Duration = Duration::from_secs(10);

/// The entry points clients and the console list.
pub(crate) const ENDPOINTS: &[Endpoint] = &[
    endpoint("A2A agent card", "GET", CARD_PATH),
    endpoint("A2A (JSON-RPC)", "POST", PATH),
];

/// The face's routes.
pub(crate) fn routes() -> Router<AppState> {
    card::since();
    Router::new()
        .route(CARD_PATH, get(agent_card))
        .route(PATH, post(call))
        // A client that joins the card's URL and a path may end up with a slash.
        .route(PATH_SLASH, post(call))
}

/// `PATH` with a trailing slash.
const PATH_SLASH: &str = "/a2a/";

/// At most this many characters of a client's id or name are echoed in a message.
const SHOWN_CHARS: usize = 64;

/// A client's value as a message may echo it: bounded, without control characters.
fn shown(value: &str) -> String {
    let mut out: String = value
        .chars()
        .take(SHOWN_CHARS)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if value.chars().count() > SHOWN_CHARS {
        out.push('…');
    }
    out
}

/// Whether the A2A version a client asks for is one this agent speaks: 1.0, whatever the
/// patch. An empty value reads as 0.3, which it does not.
fn speaks(version: &str) -> bool {
    let parts: Vec<&str> = version.trim().split('.').collect();
    let numeric = |p: &&str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    parts.len() <= 3
        && parts.iter().all(numeric)
        && parts[0] == "1"
        && parts.get(1).is_none_or(|minor| *minor == "0")
}

/// The version the call asks for: the `A2A-Version` header, else the same name in the
/// query string; `None` when it names none.
fn asked_version(headers: &HeaderMap, query: Option<&str>) -> Option<String> {
    if let Some(v) = headers.get(VERSION_HEADER) {
        return Some(v.to_str().unwrap_or("?").to_owned());
    }
    url::form_urlencoded::parse(query?.as_bytes())
        .find(|(k, _)| k.eq_ignore_ascii_case(VERSION_HEADER))
        .map(|(_, v)| v.into_owned())
}

/// The card, cacheable: it changes only with the registry, which a restart reloads. It
/// names the configured public URL; without one, the host it was asked under, so caches
/// keep one per host (`Vary`).
async fn agent_card(State(state): State<AppState>, headers: HeaderMap) -> Response {
    use axum::http::{StatusCode, header};
    let scheme = state.principals.scheme();
    let card = card::card(
        state.runtime.registry(),
        state.runtime.entry(),
        &state
            .public_url
            .clone()
            .unwrap_or_else(|| card::base_url(&headers)),
        scheme.as_ref(),
    );
    let Ok(body) = serde_json::to_vec(&card) else {
        return Error::NoRoute.into_response();
    };
    let etag = card::etag(&body);
    let cache = [
        (header::CACHE_CONTROL, "public, max-age=300".to_owned()),
        (header::ETAG, etag.clone()),
        (header::LAST_MODIFIED, card::since()),
        (
            header::VARY,
            if state.public_url.is_some() {
                "Accept-Encoding".to_owned()
            } else {
                "Host, X-Forwarded-Host, X-Forwarded-Proto".to_owned()
            },
        ),
    ];
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|tags| tags.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    if fresh {
        return (StatusCode::NOT_MODIFIED, cache).into_response();
    }
    (
        cache,
        [(header::CONTENT_TYPE, "application/json".to_owned())],
        body,
    )
        .into_response()
}

/// A streaming client reads events: a refusal is the one event it gets.
fn sse_refusal(id: JsonRpcId, error: &A2AError) -> Response {
    let frame = SseEvent::default()
        .json_data(rpc::error_response(id, error))
        .unwrap_or_default();
    Sse::new(futures::stream::once(
        async move { Ok::<_, Infallible>(frame) },
    ))
    .into_response()
}

/// A JSON-RPC answer (refusals included: JSON-RPC carries them in the body, with 200).
fn answer(response: &JsonRpcResponse) -> Response {
    Json(response).into_response()
}

fn refuse(id: JsonRpcId, error: &A2AError) -> Response {
    answer(&rpc::error_response(id, error))
}

async fn call(
    State(state): State<AppState>,
    caller: Result<Caller, Error>,
    headers: HeaderMap,
    request: Request,
) -> Response {
    // An unauthenticated call is refused by HTTP status before any JSON-RPC is read.
    let principal = match caller {
        Ok(Caller(p)) => p,
        Err(e) => return e.into_response(),
    };
    let query = request.uri().query().map(str::to_owned);
    let bytes = match start::read_body(&state, request).await {
        Ok(bytes) => bytes,
        Err(e) => {
            let status = e.status();
            let refused =
                rpc::error_response(JsonRpcId::Null, &A2AError::invalid_request(e.to_string()));
            return (status, Json(refused)).into_response();
        }
    };
    if !body::is_json(&headers) {
        return refuse(
            JsonRpcId::Null,
            &A2AError::new(
                a2a::error_code::CONTENT_TYPE_NOT_SUPPORTED,
                "Send the call as JSON (Content-Type: application/json).",
            ),
        );
    }
    let call = match start::parse_body(bytes, rpc::parse).await {
        Ok(Ok(call)) => call,
        Ok(Err(refused)) => return answer(&refused.response()),
        Err(e) => {
            let refused = rpc::error_response(JsonRpcId::Null, &A2AError::internal(e.to_string()));
            return (e.status(), Json(refused)).into_response();
        }
    };
    if let Some(version) = asked_version(&headers, query.as_deref())
        && !speaks(&version)
    {
        let version = if version.trim().is_empty() {
            "0.3 (an empty A2A-Version)".to_owned()
        } else {
            shown(&version)
        };
        return refuse(call.id, &A2AError::version_not_supported(&version));
    }
    let id = call.id.clone();
    let outcome = match call.method.as_str() {
        methods::SEND_MESSAGE => send(&state, principal, &headers, &call).await,
        methods::SEND_STREAMING_MESSAGE => {
            return match stream(&state, principal, &headers, &call).await {
                Ok(response) => response,
                Err(error) => sse_refusal(id, &error),
            };
        }
        // A refusal comes before any stream: a plain JSON-RPC error, as the compatibility
        // kit reads it.
        methods::SUBSCRIBE_TO_TASK => {
            return match subscribe(&state, &principal, &call).await {
                Ok(response) => response,
                Err(error) => refuse(id, &error),
            };
        }
        methods::GET_TASK => get_task(&state, &principal, &call).await,
        methods::CANCEL_TASK => cancel_task(&state, &principal, &call).await,
        methods::LIST_TASKS => list::list_tasks(&state, &principal, &call).await,
        methods::CREATE_PUSH_CONFIG
        | methods::GET_PUSH_CONFIG
        | methods::LIST_PUSH_CONFIGS
        | methods::DELETE_PUSH_CONFIG => Err(A2AError::push_notification_not_supported()),
        // The card declares no extended card: the operation is not supported here.
        methods::GET_EXTENDED_AGENT_CARD => Err(A2AError::unsupported_operation(
            "This agent has no extended agent card.",
        )),
        other => Err(A2AError::method_not_found(&shown(other))),
    };
    match outcome {
        Ok(result) => answer(&JsonRpcResponse::success(id, result)),
        Err(error) => refuse(id, &error),
    }
}

/// A message ready to run: the turn's request, its task, and the user's message as the
/// task records it.
struct Prepared {
    request: TurnRequest,
    task: TaskRef,
    user: Message,
    /// The message named no context: this one was just made.
    new_context: bool,
    /// The message answers what its task waits on (D-36): the waiting turn and the reply.
    reply: Option<(String, Reply)>,
}

async fn prepare(
    state: &AppState,
    principal: Principal,
    call: &Call,
) -> Result<Prepared, A2AError> {
    let SendMessageRequest {
        message,
        configuration,
        ..
    } = rpc::params(call)?;
    // Push notifications are not supported: a config for them is refused, not ignored.
    if configuration
        .as_ref()
        .is_some_and(|c| c.task_push_notification_config.is_some())
    {
        return Err(A2AError::push_notification_not_supported());
    }
    if message.role != Role::User {
        return Err(A2AError::invalid_params(
            "The message must come from the user (role ROLE_USER).",
        ));
    }
    // The message keeps its words, as its task's history read back from the journal does:
    // a picture's bytes, as sent, still hold what the runtime strips (D-42).
    let mut message = message;
    let mut texts = Vec::new();
    let mut pictures = Vec::new();
    for part in std::mem::take(&mut message.parts) {
        match &part.content {
            PartContent::Text(t) => {
                texts.push(t.clone());
                message.parts.push(part);
            }
            PartContent::Raw(_) | PartContent::Url(_) => {
                pictures.push(picture(pictures.len() + 1, part)?);
            }
            PartContent::Data(_) => {
                return Err(A2AError::new(
                    a2a::error_code::CONTENT_TYPE_NOT_SUPPORTED,
                    "This agent reads text and pictures; send the message as text parts, with \
                     any pictures as file parts.",
                ));
            }
        }
    }
    let mut text = texts.join("\n");
    if let Some(task_id) = message.task_id.clone().filter(|t| !t.is_empty()) {
        return answering(state, principal, &task_id, text, message).await;
    }
    if let Some(skill) = message
        .metadata
        .as_ref()
        .and_then(|m| m.get(SKILL_KEY))
        .filter(|v| !v.is_null())
    {
        text = addressed(state, skill, &text)?;
    }
    let named = message.context_id.clone().filter(|c| !c.trim().is_empty());
    let new_context = named.is_none();
    let context_id = named.unwrap_or_else(|| uuid::Uuid::new_v4().simple().to_string());
    let task = TaskRef::new(&principal, &context_id, &message.message_id);
    let request = TurnRequest {
        turn_id: Some(task.turn_id.clone()),
        face: FACE,
        message_id: Some(message.message_id.clone()),
        pictures,
        ..TurnRequest::new(principal, text)
    };
    let user = Message {
        context_id: Some(context_id),
        task_id: Some(task.task_id()),
        ..message
    };
    Ok(Prepared {
        request,
        task,
        user,
        new_context,
        reply: None,
    })
}

/// A file part as a picture: its bytes (the declared `mediaType` checked against them) or
/// a `data:` URL; a remote URL is refused (nothing here fetches).
fn picture(n: usize, part: a2a::Part) -> Result<Bytes, A2AError> {
    let read = match part.content {
        PartContent::Raw(bytes) => {
            crate::picture::checked(n, bytes, part.media_type.as_deref()).map_err(|e| e.to_string())
        }
        PartContent::Url(url) => crate::picture::from_url(n, &url).map_err(|e| e.to_string()),
        PartContent::Text(_) | PartContent::Data(_) => Err(format!("Part {n} is not a picture.")),
    };
    read.map_err(|why| A2AError::new(a2a::error_code::CONTENT_TYPE_NOT_SUPPORTED, why))
}

/// A message on task `task_id`: the user's answer to what the task waits on
/// (`INPUT_REQUIRED`), in words — a yes or a no to an approval, anything to a question.
async fn answering(
    state: &AppState,
    principal: Principal,
    task_id: &str,
    text: String,
    message: Message,
) -> Result<Prepared, A2AError> {
    let task = task_ref(&principal, task_id)?;
    let awaiting = state
        .runtime
        .awaiting(&principal, &task.episode_id)
        .await
        .map_err(|r| rpc::rejection(&r))?;
    let Some(awaiting) = awaiting.filter(|a| a.origin() == task.turn_id) else {
        return Err(A2AError::unsupported_operation(
            "That task is not waiting for an answer; send a new message in its context (contextId) to go on.",
        ));
    };
    let reply = awaiting
        .reply_in_words(&text)
        .map_err(|e| A2AError::invalid_params(e.to_string()))?;
    let user = Message {
        context_id: Some(task.context_id.clone()),
        task_id: Some(task.task_id()),
        ..message
    };
    Ok(Prepared {
        request: TurnRequest::new(principal, text),
        task,
        user,
        new_context: false,
        reply: Some((awaiting.turn_id.clone(), reply)),
    })
}

/// `text` addressed to the skill `skill`: the assistant's own skill leaves it as it is; a
/// specialist's is its Direct Line, written as the user would write it.
fn addressed(state: &AppState, skill: &Value, text: &str) -> Result<String, A2AError> {
    let entry = state.runtime.entry();
    let Some(skill) = skill.as_str() else {
        return Err(A2AError::invalid_params(
            "`metadata.skillId` must be a string.",
        ));
    };
    if skill == &*entry.id {
        return Ok(text.to_owned());
    }
    let registry = state.runtime.registry();
    if !card::specialists(registry, entry).any(|a| &*a.id == skill) {
        return Err(A2AError::invalid_params(format!(
            "This agent has no skill called {skill}; its agent card lists them."
        )));
    }
    match entry.orchestration.as_ref().map(|o| &o.direct_line) {
        Some(policy) if policy.enabled => Ok(format!("{}{skill} {text}", policy.prefix)),
        _ => Err(A2AError::invalid_params(format!(
            "{skill} cannot be addressed directly here; send the message to {} instead.",
            entry.id
        ))),
    }
}

/// Starts the message's turn.
async fn start(
    state: &AppState,
    headers: &HeaderMap,
    prepared: &Prepared,
) -> Result<baton_runtime::TurnStream, A2AError> {
    let (context, request) = (&prepared.task.context_id, prepared.request.clone());
    let request = match &prepared.reply {
        Some((waiting, reply)) => start::answering(
            request.principal,
            &prepared.task.episode_id,
            waiting,
            reply.clone(),
            FACE,
        ),
        None => start::in_conversation(request, context, prepared.new_context),
    };
    let started = start::start(state, headers, request, "POST /a2a").await;
    started.map_err(|e| match e {
        Error::Rejected(r) => rpc::rejection(&r),
        other => A2AError::internal(other.to_string()),
    })
}

/// `SendMessage`: the task once its turn ended, or at once (still working) when the
/// client asked not to wait; the turn goes on either way.
async fn send(
    state: &AppState,
    principal: Principal,
    headers: &HeaderMap,
    call: &Call,
) -> Result<Value, A2AError> {
    let immediately = call
        .params
        .pointer("/configuration/returnImmediately")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let prepared = prepare(state, principal, call).await?;
    let mut stream = start(state, headers, &prepared).await?;
    let task = if immediately {
        Task {
            history: Some(vec![prepared.user.clone()]),
            ..TaskRun::working(&prepared.task)
        }
    } else {
        let mut run = TaskRun::new(prepared.task.clone(), true);
        while let Some(wire) = stream.next().await {
            run.events(&wire.event);
        }
        run.into_task(&prepared.user)
    };
    serde_json::to_value(SendMessageResponse::Task(task))
        .map_err(|e| A2AError::internal(e.to_string()))
}

/// `SendStreamingMessage`: the task, then its status and artifact updates as the turn
/// runs, each a JSON-RPC response on one SSE event.
async fn stream(
    state: &AppState,
    principal: Principal,
    headers: &HeaderMap,
    call: &Call,
) -> Result<Response, A2AError> {
    let prepared = prepare(state, principal, call).await?;
    let turn = start(state, headers, &prepared).await?;
    let ids = start::id_headers(&turn);
    let mut run = TaskRun::new(prepared.task.clone(), false);
    let first = futures::stream::iter([run.submitted(&prepared.user)]);
    let rest = turn.flat_map(move |wire| futures::stream::iter(run.events(&wire.event)));
    Ok((ids, sse_frames(call.id.clone(), first.chain(rest))).into_response())
}

/// Task events as SSE frames of JSON-RPC answers to the call `id`.
fn sse_frames(
    id: JsonRpcId,
    events: impl futures::Stream<Item = StreamResponse> + Send + 'static,
) -> Response {
    let frames = events.map(move |event: StreamResponse| {
        // Serialised once, straight into the frame: no intermediate JSON tree.
        let frame = rpc::Success {
            jsonrpc: "2.0",
            id: &id,
            result: &event,
        };
        let data = SseEvent::default().json_data(frame).unwrap_or_else(|e| {
            let error = rpc::error_response(id.clone(), &A2AError::internal(e.to_string()));
            SseEvent::default().json_data(error).unwrap_or_default()
        });
        Ok::<_, Infallible>(data)
    });
    Sse::new(frames)
        .keep_alive(sse::keep_alive())
        .into_response()
}

/// `SubscribeToTask`: a task running in this process streams from now (the task as it
/// stands, working, then its events to its end), for a client that lost its stream; one
/// that waits for the user is sent as it stands; one that ended cannot be subscribed to
/// (the proto's `UnsupportedOperationError`); an id that names no task of the caller's is
/// not found.
async fn subscribe(
    state: &AppState,
    principal: &Principal,
    call: &Call,
) -> Result<Response, A2AError> {
    let id = call
        .params
        .get("id")
        .and_then(Value::as_str)
        .ok_or_else(|| A2AError::invalid_params("SubscribeToTask needs the task's id."))?;
    let task = task_ref(principal, id)?;
    if let Some(watch) = state
        .runtime
        .watch(principal, &task.episode_id, &task.turn_id)
    {
        let mut run = TaskRun::new(task.clone(), false);
        let first = futures::stream::iter([StreamResponse::Task(TaskRun::working(&task))]);
        // A watcher that fell behind ends here: the client reads the task back instead.
        let events = futures::stream::unfold(watch, |mut watch| async move {
            watch.recv().await.ok().map(|wire| (wire, watch))
        });
        let rest = events.flat_map(move |wire| futures::stream::iter(run.events(&wire.event)));
        return Ok(sse_frames(call.id.clone(), first.chain(rest)));
    }
    let found = committed(state, principal, &task)
        .await?
        .ok_or_else(|| A2AError::task_not_found(&shown(id)))?;
    if matches!(
        found.status.state,
        TaskState::Completed | TaskState::Failed | TaskState::Canceled | TaskState::Rejected
    ) {
        return Err(A2AError::unsupported_operation(
            "This task has ended; read it with GetTask.",
        ));
    }
    Ok(sse_frames(
        call.id.clone(),
        futures::stream::iter([StreamResponse::Task(found)]),
    ))
}

/// The task a call's `id` names for `principal`, or "not found".
fn task_ref(principal: &Principal, id: &str) -> Result<TaskRef, A2AError> {
    TaskRef::parse(principal, id).ok_or_else(|| A2AError::task_not_found(&shown(id)))
}

/// The committed task, or "not found" (another principal's is not found either).
async fn committed(
    state: &AppState,
    principal: &Principal,
    task: &TaskRef,
) -> Result<Option<Task>, A2AError> {
    match state.runtime.history(principal, &task.episode_id).await {
        Ok(history) => Ok(task_in(&history, task)),
        Err(r) if r.kind == RejectionKind::NotFound => Ok(None),
        Err(r) => Err(rpc::rejection(&r)),
    }
}

/// The task `task` as `history` has it committed: a task that waited and was answered
/// lives on in the turns that resumed it, and its state is the latest of them.
fn task_in(history: &baton_runtime::history::EpisodeHistory, task: &TaskRef) -> Option<Task> {
    let resumed = history.turns.iter().rev().find(|t| {
        t.answered
            .as_ref()
            .is_some_and(|a| a.origin_turn_id == task.turn_id && continues(&a.answer))
    });
    resumed
        .or_else(|| history.turns.iter().find(|t| t.turn_id == task.turn_id))
        .map(|t| task::from_history(task, t, history.pending.as_ref()))
}

/// Whether a turn that answered a wait (`answer` as its record names it) goes on with the
/// task that waited, rather than being a task of its own (one that set the wait aside).
fn continues(answer: &str) -> bool {
    !matches!(answer, "set_aside" | "expired")
}

/// The caller's task `id`: working while its turn runs, else as committed; "not found"
/// otherwise (another principal's too).
async fn find_task(state: &AppState, principal: &Principal, id: &str) -> Result<Task, A2AError> {
    let task = task_ref(principal, id)?;
    let found = if state
        .runtime
        .is_running(principal, &task.episode_id, &task.turn_id)
    {
        Some(TaskRun::working(&task))
    } else {
        committed(state, principal, &task).await?
    };
    found.ok_or_else(|| A2AError::task_not_found(&shown(id)))
}

/// A call's `historyLength` as a count of messages; a negative one is refused.
fn history_limit(history_length: Option<i32>) -> Result<Option<usize>, A2AError> {
    history_length
        .map(|n| {
            usize::try_from(n)
                .map_err(|_| A2AError::invalid_params("historyLength must be 0 or more."))
        })
        .transpose()
}

/// Keeps at most the last `limit` messages of `task`'s history (0: none).
fn keep_last(task: &mut Task, limit: Option<usize>) {
    if let (Some(keep), Some(history)) = (limit, task.history.as_mut()) {
        let drop = history.len().saturating_sub(keep);
        history.drain(..drop);
    }
}

/// `GetTask`: a running turn's task is working; a committed one is read from the journal.
async fn get_task(state: &AppState, principal: &Principal, call: &Call) -> Result<Value, A2AError> {
    let GetTaskRequest {
        id, history_length, ..
    } = rpc::params(call)?;
    let limit = history_limit(history_length)?;
    let mut found = find_task(state, principal, &id).await?;
    keep_last(&mut found, limit);
    serde_json::to_value(found).map_err(|e| A2AError::internal(e.to_string()))
}

/// `CancelTask`: stops a running turn and answers once it has committed as canceled; a
/// task that already ended cannot be canceled.
async fn cancel_task(
    state: &AppState,
    principal: &Principal,
    call: &Call,
) -> Result<Value, A2AError> {
    let CancelTaskRequest { id, .. } = rpc::params(call)?;
    let task = task_ref(principal, &id)?;
    let runtime = &state.runtime;
    if runtime.cancel_turn(principal, &task.episode_id, &task.turn_id) {
        let waited = tokio::time::timeout(CANCEL_WAIT, async {
            while runtime.is_running(principal, &task.episode_id, &task.turn_id) {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await;
        if waited.is_err() {
            tracing::warn!(task = %id, "a canceled turn had not ended in time");
        }
        let canceled = committed(state, principal, &task)
            .await?
            .unwrap_or_else(|| TaskRun::working(&task));
        return serde_json::to_value(canceled).map_err(|e| A2AError::internal(e.to_string()));
    }
    match committed(state, principal, &task).await? {
        Some(_) => Err(A2AError::task_not_cancelable(&id)),
        None => Err(A2AError::task_not_found(&shown(&id))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_one_is_spoken_whatever_the_patch_and_an_empty_one_is_not() {
        for yes in ["1", "1.0", "1.0.0", "1.0.3", " 1.0 "] {
            assert!(speaks(yes), "{yes}");
        }
        for no in ["", "0.3", "1.1", "2.0", "1.0.x", "1..0", "1.0.0.0"] {
            assert!(!speaks(no), "{no}");
        }
    }

    #[test]
    fn the_version_comes_from_the_header_else_the_query_string() {
        let mut headers = HeaderMap::new();
        assert_eq!(
            asked_version(&headers, Some("a=1&A2A-Version=1.0.2")),
            Some("1.0.2".into())
        );
        assert_eq!(asked_version(&headers, None), None);
        headers.insert(VERSION_HEADER, "0.3".parse().unwrap());
        assert_eq!(
            asked_version(&headers, Some("A2A-Version=1.0")),
            Some("0.3".into())
        );
    }

    #[test]
    fn an_echoed_value_is_bounded_and_has_no_control_characters() {
        assert_eq!(shown("task-1"), "task-1");
        assert_eq!(shown("a\0b\nc"), "a?b?c");
        let long = "x".repeat(10_000);
        assert_eq!(shown(&long).chars().count(), SHOWN_CHARS + 1);
    }
}
