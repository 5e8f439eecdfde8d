//! Protocol faces: the same turn, spoken in another protocol (see `docs/design.md`, §14).
//! Each face is a folder with a `routes()` that `routes()` here merges (and `endpoints()`
//! lists); it reaches the engine only through `AppState`, as `/v1/turns` does.

mod a2a;
mod agui;
mod answer;
pub(crate) mod mcp;
mod message;
mod openai;
mod summary;

use axum::Router;

use crate::catalog::{Endpoint, endpoint};
use crate::state::AppState;

/// Every face's routes (the MCP face's allowed hosts come from `state`).
pub(crate) fn routes(state: &AppState) -> Router<AppState> {
    Router::new()
        .merge(openai::routes())
        .merge(agui::routes())
        .merge(a2a::routes())
        .merge(mcp::routes(state))
}

/// The ways in that `state`'s app serves, for clients and the console to list: the
/// native stream, then each face's entry points.
pub(crate) fn endpoints(state: &AppState) -> Vec<Endpoint> {
    let mut all = vec![
        endpoint("Baton events (SSE)", "POST", "/v1/turns"),
        endpoint("OpenAI chat completions", "POST", "/v1/chat/completions"),
        endpoint("AG-UI", "POST", "/v1/agui"),
        endpoint("A2A agent card", "GET", "/.well-known/agent-card.json"),
        endpoint("A2A (JSON-RPC)", "POST", a2a::PATH),
        endpoint("MCP (streamable HTTP)", "POST", mcp::PATH),
    ];
    if state.metrics.is_some() {
        all.push(endpoint("Prometheus metrics", "GET", "/metrics"));
    }
    all
}
