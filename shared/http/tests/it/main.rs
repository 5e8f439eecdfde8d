//! Integration tests of the HTTP edge: every refusal's status and body through `oneshot`,
//! whole turns over a real socket, and a client that leaves mid-stream.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod a2a;
mod agui;
mod mcp;
mod memory;
mod openai;
mod pictures;
mod refusals;
mod resume;
mod routes;
mod server;
mod support;
