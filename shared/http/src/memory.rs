//! `/v1/memory` (D-43): what Baton remembers of the caller across conversations, theirs to
//! see, search, save, export and erase, and to turn on or off. Every route is the caller's
//! only: another principal's memory is "not found".
//!
//! - `GET /v1/memory` (`?history=true`, `?kind=goal`): the memories, newest first, and
//!   whether memory is on;
//! - `GET /v1/memory/search?q=…`: the best matches, with why each was found;
//! - `GET /v1/memory/export`: every memory, history included;
//! - `POST /v1/memory` `{"text", "subject"?, "kind"?}`: remember a statement (201);
//! - `DELETE /v1/memory/{id}`: forget one, with the statements it replaced;
//! - `DELETE /v1/memory?all=true`: forget everything;
//! - `PUT /v1/memory/setting` `{"enabled": true | false | null}`: the caller's own setting
//!   (`null`: as the deployment says).

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use baton_core::Principal;
use baton_core::recall::{MemoryKind, MemorySource, Saved};
use baton_runtime::{MemoryFailure, RejectionKind, TurnRejection};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::body::is_json;
use crate::caller::Caller;
use crate::error::Error;
use crate::state::AppState;

/// Memories one list or export answers with at most.
const LIST_LIMIT: usize = 10_000;
/// Matches one search answers with at most.
const SEARCH_LIMIT: usize = 20;

fn rejection(e: MemoryFailure) -> Error {
    let kind = match e {
        MemoryFailure::NotKept | MemoryFailure::NotFound => RejectionKind::NotFound,
        MemoryFailure::Invalid(_) => RejectionKind::Invalid,
        MemoryFailure::Unavailable => RejectionKind::Unavailable,
    };
    Error::Rejected(TurnRejection {
        kind,
        message: e.to_string(),
    })
}

fn kinds(kind: Option<&str>) -> Result<Vec<MemoryKind>, Error> {
    match kind.filter(|k| !k.is_empty()) {
        None => Ok(Vec::new()),
        Some(k) => MemoryKind::parse(k).map(|k| vec![k]).ok_or_else(|| {
            Error::InvalidBody(format!(
                "unknown kind {k:?}: use fact, preference, goal or finding"
            ))
        }),
    }
}

/// What `GET /v1/memory` takes.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Listing {
    #[serde(default)]
    history: bool,
    #[serde(default)]
    kind: Option<String>,
}

async fn setting(state: &AppState, principal: &Principal) -> Result<Value, Error> {
    let (on, own) = state
        .runtime
        .memory()
        .setting(principal)
        .await
        .map_err(rejection)?;
    Ok(json!({ "memory": if on { "on" } else { "off" }, "own_setting": own }))
}

/// `GET /v1/memory`.
pub(crate) async fn get_memory(
    State(state): State<AppState>,
    Caller(principal): Caller,
    query: Result<Query<Listing>, QueryRejection>,
) -> Result<Json<Value>, Error> {
    let Ok(Query(listing)) = query else {
        return Err(Error::InvalidBody(
            "the query takes history=true|false and kind=fact|preference|goal|finding".into(),
        ));
    };
    let kinds = kinds(listing.kind.as_deref())?;
    let memories = state
        .runtime
        .memory()
        .list(&principal, &kinds, listing.history, LIST_LIMIT)
        .await
        .map_err(rejection)?;
    let mut out = setting(&state, &principal).await?;
    out["memories"] = json!(memories);
    Ok(Json(out))
}

/// What `GET /v1/memory/search` takes.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Searching {
    #[serde(default)]
    q: String,
    #[serde(default)]
    kind: Option<String>,
}

/// `GET /v1/memory/search?q=…`.
pub(crate) async fn get_search(
    State(state): State<AppState>,
    Caller(principal): Caller,
    query: Result<Query<Searching>, QueryRejection>,
) -> Result<Json<Value>, Error> {
    let Some(Query(searching)) = query.ok().filter(|Query(s)| !s.q.trim().is_empty()) else {
        return Err(Error::InvalidBody(
            "say what to look for: ?q=<words>".to_owned(),
        ));
    };
    let kinds = kinds(searching.kind.as_deref())?;
    let found = state
        .runtime
        .memory()
        .search(&principal, &searching.q, &kinds, SEARCH_LIMIT)
        .await
        .map_err(rejection)?;
    Ok(Json(json!({ "memories": found })))
}

/// `GET /v1/memory/export`.
pub(crate) async fn get_export(
    State(state): State<AppState>,
    Caller(principal): Caller,
) -> Result<Json<Value>, Error> {
    let memories = state
        .runtime
        .memory()
        .list(&principal, &[], true, LIST_LIMIT)
        .await
        .map_err(rejection)?;
    let mut out = setting(&state, &principal).await?;
    out["principal"] = json!(principal.as_str());
    out["memories"] = json!(memories);
    Ok(Json(out))
}

/// What `POST /v1/memory` takes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Saving {
    text: String,
    #[serde(default)]
    subject: Option<String>,
    #[serde(default)]
    kind: Option<String>,
}

fn json_body<T: serde::de::DeserializeOwned>(headers: &HeaderMap, body: &[u8]) -> Result<T, Error> {
    if !is_json(headers) {
        return Err(Error::ContentType);
    }
    let value: Value = serde_json::from_slice(body).map_err(|_| Error::MalformedJson)?;
    serde_json::from_value(value).map_err(|e| Error::InvalidBody(e.to_string()))
}

/// `POST /v1/memory`: 201 with the memory kept (200 when it was already known).
pub(crate) async fn post_memory(
    State(state): State<AppState>,
    Caller(principal): Caller,
    headers: HeaderMap,
    body: Bytes,
) -> Result<(StatusCode, Json<Value>), Error> {
    let saving: Saving = json_body(&headers, &body)?;
    let kind = kinds(saving.kind.as_deref())?
        .pop()
        .unwrap_or(MemoryKind::Fact);
    let text = baton_core::recall::said(&saving.text).to_owned();
    let (memory, saved) = state
        .runtime
        .memory()
        .remember(
            &principal,
            kind,
            saving.subject.as_deref().unwrap_or_default(),
            &text,
            MemorySource::default(),
        )
        .await
        .map_err(rejection)?;
    Ok(match saved {
        Saved::New { replaced, .. } => (
            StatusCode::CREATED,
            Json(json!({ "saved": true, "memory": memory, "replaced": replaced })),
        ),
        Saved::Unchanged(id) => (
            StatusCode::OK,
            Json(json!({ "saved": false, "already_known": id })),
        ),
    })
}

/// `DELETE /v1/memory/{id}`.
pub(crate) async fn delete_one(
    State(state): State<AppState>,
    Caller(principal): Caller,
    Path(id): Path<String>,
) -> Result<Json<Value>, Error> {
    let forgotten = state
        .runtime
        .memory()
        .forget(&principal, &id)
        .await
        .map_err(rejection)?;
    Ok(Json(json!({ "forgotten": forgotten })))
}

/// What `DELETE /v1/memory` takes: `all=true`, so that erasing everything is never an
/// accident of a bare path.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct All {
    #[serde(default)]
    all: bool,
}

/// `DELETE /v1/memory?all=true`.
pub(crate) async fn delete_all(
    State(state): State<AppState>,
    Caller(principal): Caller,
    query: Result<Query<All>, QueryRejection>,
) -> Result<Json<Value>, Error> {
    if !query.is_ok_and(|Query(q)| q.all) {
        return Err(Error::InvalidBody(
            "to forget every memory, say so: DELETE /v1/memory?all=true".to_owned(),
        ));
    }
    let forgotten = state
        .runtime
        .memory()
        .forget_all(&principal)
        .await
        .map_err(rejection)?;
    Ok(Json(json!({ "forgotten": forgotten })))
}

/// What `PUT /v1/memory/setting` takes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Setting {
    enabled: Option<bool>,
}

/// `PUT /v1/memory/setting`.
pub(crate) async fn put_setting(
    State(state): State<AppState>,
    Caller(principal): Caller,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<Value>, Error> {
    let wanted: Setting = json_body(&headers, &body)?;
    state
        .runtime
        .memory()
        .set_setting(&principal, wanted.enabled)
        .await
        .map_err(rejection)?;
    Ok(Json(setting(&state, &principal).await?))
}
