//! Integration tests of the connectors against the shipped registry's data.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod a2a_connector;
mod http_connector;
mod mcp_conformance;
mod mcp_connector;
mod mcp_oauth;
mod shipped_registry;
