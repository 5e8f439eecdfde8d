//! MCP: Baton as a tools-only MCP server, over streamable HTTP at `/mcp` and over stdio
//! (`baton mcp`), through the official SDK (rmcp), which speaks the protocol.
//!
//! - The tools: `ask` asks the assistant; `ask_<id>` asks one specialist over its Direct
//!   Line (D-21), whose answer comes back word for word (`tools.rs`).
//! - A call is a turn: its answer is the result's text, its consulted record, privacy
//!   receipt and ids the structured content, its progress lines progress notifications
//!   (`call.rs`, `server.rs`).
//! - A `conversation` argument is the caller's own id for a conversation: the episode is
//!   `Principal::episode_for(conversation)`, so no other caller reaches it.
//! - Stateless: each HTTP request is served on its own, with no session kept between
//!   requests, so any instance (a Lambda one included) serves any request; the
//!   conversation lives in the episode, not in a session.
//! - The principal comes from each request's auth context (stdio: the process's user);
//!   a request without one is refused (401) before the protocol is read.

mod call;
mod elicit;
mod message;
#[cfg(test)]
mod props;
mod server;
mod stdio;
mod tools;

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::{Json, Router};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

pub use self::server::McpServer;
use crate::catalog::{Endpoint, endpoint};
use crate::error::Error;
use crate::start;
use crate::state::AppState;

/// Why the stdio server stopped before its client closed the streams.
#[derive(Debug, thiserror::Error)]
pub enum StdioError {
    /// The client's first messages were not a valid MCP initialization.
    #[error("the MCP client did not initialize: {0}")]
    Initialize(String),
    /// The server's task ended abnormally.
    #[error("the MCP server stopped unexpectedly: {0}")]
    Stopped(String),
}

/// Serves `server` over stdin and stdout until the client closes them. Nothing else may
/// write to stdout meanwhile: it carries the protocol. Every line is answered as JSON-RPC
/// says: one that is not JSON, not a client's message, or longer than `max_line_bytes` gets
/// its error (under its id when one can be read) and the next line is read.
///
/// # Errors
/// A client that does not initialize, or a server task that fails.
pub async fn serve_stdio(server: McpServer, max_line_bytes: usize) -> Result<(), StdioError> {
    stdio::serve_lines(
        server,
        tokio::io::stdin(),
        tokio::io::stdout(),
        max_line_bytes,
    )
    .await
}

/// Where the face is served over streamable HTTP.
const PATH: &str = "/mcp";

/// The entry points clients and the console list.
pub(crate) const ENDPOINTS: &[Endpoint] = &[endpoint("MCP (streamable HTTP)", "POST", PATH)];

/// The face's route: `/mcp`, every method (rmcp answers the ones it does not serve).
pub(crate) fn routes() -> Router<AppState> {
    Router::new().route(
        PATH,
        any(
            |State(state): State<AppState>, request: Request| async move {
                handle(&state, request).await
            },
        ),
    )
}

/// The SDK's server for one request over `state`: stateless, so nothing outlives the
/// request, and building it costs two small allocations beside a turn.
fn service(state: &AppState) -> StreamableHttpService<McpServer, NeverSessionManager> {
    let factory_state = state.clone();
    StreamableHttpService::new(
        move || Ok(McpServer::per_request(factory_state.clone())),
        Arc::new(NeverSessionManager::default()),
        config(state),
    )
}

/// Stateless, streaming (a call's progress and result go out as Server-Sent Events on its
/// own POST, with keep-alives through a long turn), within the body limit of a turn (a
/// call may carry a picture). The app
/// checks hosts and origins for every route before this one (`hosts::guard`).
fn config(state: &AppState) -> StreamableHttpServerConfig {
    StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(false)
        .with_max_request_body_bytes(state.turn_body_limit())
        .disable_allowed_hosts()
}

/// The caller first and the body within the limit and the body timeout, as on every
/// route; then the protocol, which rmcp reads.
async fn handle(state: &AppState, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    if let Err(e) = state.principals.principal(&parts) {
        tracing::info!(error = %e, "MCP request refused: no usable principal");
        return Error::Unauthorized(e).into_response();
    }
    let bytes = match start::read_body(state, Request::from_parts(parts.clone(), body)).await {
        Ok(bytes) => bytes,
        Err(e) => return e.into_response(),
    };
    if parts.method == Method::POST {
        match start::parse_body(bytes.clone(), message::refusal).await {
            Ok(None) => {}
            Ok(Some(refusal)) => return (StatusCode::BAD_REQUEST, Json(refusal)).into_response(),
            Err(e) => return e.into_response(),
        }
    }
    service(state)
        .handle(Request::from_parts(parts, Body::from(bytes)))
        .await
        .into_response()
}
