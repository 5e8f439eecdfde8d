//! Baton's tool connectors: how a tool listed in `tools.yaml` reaches its data.
//!
//! Every connector answers one call with one envelope (D-28) whose `principal` is the
//! request's principal (D-29), and checks each tool's settings at load time so that a bad
//! registry fails before serving. This crate depends on `baton-core` only (plus tokio for
//! timers and file reads, and reqwest with rustls for HTTP); it never talks to a model or
//! a store.
//!
//! Shipped kinds:
//! - [`FixtureConnector`] (`fixture`): demo data files under the registry's `fixtures/`,
//!   searched by content words, with optional fault injection for demos and tests.
//! - [`RateTableConnector`] (`rate_table`): an amount times a rate from a table.
//! - [`HttpConnector`] (`http`): an HTTP service answering with an envelope or plain JSON,
//!   with header secrets, retries and bounded reading.
//! - [`UpstreamChatConnector`] (`upstream_chat`): a chat service with its own
//!   conversation, over HTTP, behind an external-wrapper specialist.
//! - [`McpConnector`] (`mcp`): tools of a Model Context Protocol server, over stdio or
//!   streamable HTTP, described by the server's own listing.
//! - [`A2aConnector`] (`a2a`): a remote agent over A2A 1.0, behind a specialist, as a
//!   conversation (its context) with progress, questions for the user and cancellation.
//!
//! Adding a connector: implement `baton_core::ports::connector::Connector` (answer with an
//! envelope whose `principal` is the request's principal), check its configuration in
//! `check_config`, give it a `KIND` constant, and add it to [`default_connectors`] (or to
//! the program's own connector map).

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

mod a2a;
mod envelope;
mod error;
mod fixture;
mod http;
mod mcp;
mod oauth;
mod rate_table;
mod secrets;
mod tls;
mod upstream_chat;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use baton_core::ports::connector::Connector;

pub use a2a::A2aConnector;
pub use fixture::FixtureConnector;
pub use http::HttpConnector;
pub use mcp::McpConnector;
pub use oauth::UserAuthorizer;
pub use rate_table::RateTableConnector;
pub use secrets::{EnvSecretSource, SecretRef, SecretSource, arns_in};
pub use upstream_chat::UpstreamChatConnector;

/// Every connector kind this crate ships, keyed by the kind name used in `tools.yaml`.
pub fn default_connectors(registry_root: &Path) -> BTreeMap<String, Arc<dyn Connector>> {
    let mut connectors: BTreeMap<String, Arc<dyn Connector>> = BTreeMap::new();
    connectors.insert(
        FixtureConnector::KIND.to_owned(),
        Arc::new(FixtureConnector::new(registry_root)),
    );
    connectors.insert(
        McpConnector::KIND.to_owned(),
        Arc::new(McpConnector::new(registry_root)),
    );
    connectors.insert(
        RateTableConnector::KIND.to_owned(),
        Arc::new(RateTableConnector::new()),
    );
    connectors.insert(
        HttpConnector::KIND.to_owned(),
        Arc::new(HttpConnector::new()),
    );
    connectors.insert(
        UpstreamChatConnector::KIND.to_owned(),
        Arc::new(UpstreamChatConnector::new()),
    );
    connectors.insert(A2aConnector::KIND.to_owned(), Arc::new(A2aConnector::new()));
    connectors
}

/// Installs ring as the process's rustls crypto provider, unless one is installed already.
/// reqwest is built without a provider of its own and panics when it builds a client with
/// none installed; every client of this crate calls this first, and so can a program's
/// `main` or a test building its own reqwest client.
pub fn install_tls_provider() {
    // An error only says that a provider is installed already: that one serves.
    let _ = rustls::crypto::ring::default_provider().install_default();
}
