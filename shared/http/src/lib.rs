//! Baton's HTTP edge: the axum [`app`] that runs turns and streams their events as
//! Server-Sent Events.
//!
//! The same router serves `baton serve` on a laptop and, later, the turn Lambda, so
//! nothing in it assumes a local machine: who the caller is comes from a
//! [`PrincipalSource`] chosen by the program (a flag or header locally, the auth context
//! on AWS), never from the request body (D-30). The turn engine knows nothing of HTTP; the
//! [`sse`] module alone maps its events to frames.
//!
//! Routes:
//! - `POST /v1/turns`: a [`TurnBody`] in, a `text/event-stream` of the turn's events out;
//! - `GET /v1/episodes/{id}`: the caller's own episode history as JSON;
//! - `GET /v1/episodes/{id}/pictures/{sha256}`: a picture the caller sent in it, when the
//!   state has the store ([`AppState::with_pictures`]);
//! - `GET /v1/agents`: the assistant, its specialists and its Direct Line settings;
//! - `/v1/memory` (list, `search`, `export`, save, forget, `setting`): what Baton remembers
//!   of the caller across conversations (D-43);
//! - `GET /healthz`: `{"status":"ok"}` while the process answers (liveness);
//! - `GET /readyz`: whether turns can run now (the store answers), 200 or 503;
//! - `POST /v1/chat/completions`, `GET /v1/models`: OpenAI-compatible chat completions
//!   (the `faces::openai` face);
//! - `POST /v1/agui`: an AG-UI run (the `faces::agui` face);
//! - `GET /metrics`: in-process counters, only when the state carries them;
//! - `GET /` (with `/console.js`, `/console.css`): the web console, only when the state
//!   enables it ([`AppState::with_console`]).
//!
//! Every failure is an [`Error`] that knows its status and a plain-language JSON body,
//! `{"error": {"code": "...", "message": "..."}}`; internals go to the log only.
//!
//! This crate must never depend on a store, model or cloud SDK: it sees the runtime only.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

mod account_links;
mod agents;
mod app;
mod body;
mod caller;
mod catalog;
mod connections;
mod console;
mod episode_pictures;
mod episodes;
mod error;
mod faces;
mod health;
mod hosts;
mod memory;
mod picture;
mod principal;
mod serve;
pub mod sse;
mod start;
mod state;
mod turns;

pub use app::app;
pub use body::TurnBody;
pub use error::{Error, Result};
pub use hosts::AllowedHosts;
pub use principal::{AuthError, CallerScheme, LocalPrincipal, PRINCIPAL_HEADER, PrincipalSource};
pub use serve::{ServerLimits, serve};
pub use state::{AppState, DEFAULT_MAX_BODY_BYTES, TraceContinuation};

/// The MCP face's server, for transports other than `/mcp` (`baton mcp` over stdio).
pub mod mcp {
    pub use crate::faces::mcp::{McpServer, StdioError, serve_stdio};
}
