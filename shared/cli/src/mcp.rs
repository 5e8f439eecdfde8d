//! `baton mcp`: the assistant as an MCP server over stdio, for an MCP client that starts
//! it (an IDE, a desktop assistant). The protocol is the MCP face's (`baton_http::mcp`,
//! see `docs/design.md` §14); only the transport is this command's. Stdout carries the
//! protocol, so diagnostics go to stderr only.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use baton_http::mcp::{McpServer, serve_stdio};
use baton_http::{AppState, LocalPrincipal};

use crate::config::Settings;
use crate::{logging, setup};

/// Runs `baton mcp` until the client closes stdin.
///
/// # Errors
/// A runtime that cannot be assembled, or a client that does not speak MCP.
pub(crate) async fn run(settings: &Settings) -> anyhow::Result<ExitCode> {
    logging::init(settings.log.as_deref(), "warn", false)?;
    let runtime = setup::assemble(settings).await?.runtime;
    // Every call runs as the configured principal: the process's user (D-30).
    let principal = settings.principal.clone();
    let principals = Arc::new(LocalPrincipal::new(Some(principal.clone())));
    let state = AppState::new(runtime, principals).with_max_body_bytes(settings.max_body_bytes);
    tracing::info!(principal = %principal, "baton mcp serving over stdio");
    // A line may carry a picture, as a request that starts a turn may.
    let max_line_bytes = state.turn_body_limit();
    serve_stdio(McpServer::as_principal(state, principal), max_line_bytes)
        .await
        .context("serving MCP over stdio")?;
    Ok(ExitCode::SUCCESS)
}
