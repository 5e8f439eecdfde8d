//! Liveness, readiness and the in-process counters.

use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

use crate::error::Error;
use crate::state::AppState;

/// `GET /healthz`.
pub(crate) async fn healthz() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

/// `GET /readyz`: 200 when turns can run, else 503 with the reason in plain words.
pub(crate) async fn readyz(State(state): State<AppState>) -> Result<Json<Value>, Error> {
    state.runtime.ready().await?;
    Ok(Json(json!({ "status": "ready" })))
}

/// `GET /metrics`: every counter, `name,dimension=value` → count; and the server's live
/// tokio tasks (connections and turns hold one each, so a leak shows here first).
pub(crate) async fn metrics(State(state): State<AppState>) -> Result<Json<Value>, Error> {
    let metrics = state.metrics.as_ref().ok_or(Error::NoRoute)?;
    let runtime = tokio::runtime::Handle::current().metrics();
    Ok(Json(json!({
        "counters": metrics.snapshot(),
        "runtime": {
            "alive_tasks": runtime.num_alive_tasks(),
            "workers": runtime.num_workers(),
        },
    })))
}
