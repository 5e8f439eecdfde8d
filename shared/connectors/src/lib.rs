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
mod configured;
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
use baton_core::registry::Registry;

pub use a2a::A2aConnector;
pub use configured::ConfiguredConnector;
pub use fixture::FixtureConnector;
pub use http::HttpConnector;
pub use mcp::McpConnector;
pub use oauth::UserAuthorizer;
pub use rate_table::RateTableConnector;
pub use secrets::{EnvSecretSource, SecretRef, SecretSource, arns_in};
pub use upstream_chat::UpstreamChatConnector;

/// Every connector kind Baton ships, by kind, as the CLI and the Lambda functions build
/// them: the `http`, `mcp` and `a2a` connectors read the secrets their settings name
/// through `secrets` (ARNs on AWS), or from the environment when it is `None`.
pub fn connectors(
    registry_root: &Path,
    secrets: Option<Arc<dyn SecretSource>>,
) -> BTreeMap<String, Arc<dyn Connector>> {
    let secrets = secrets.unwrap_or_else(|| Arc::new(EnvSecretSource));
    let all: [(&str, Arc<dyn Connector>); 7] = [
        (
            FixtureConnector::KIND,
            Arc::new(FixtureConnector::new(registry_root)),
        ),
        (
            McpConnector::KIND,
            Arc::new(McpConnector::with_secret_source(
                registry_root,
                secrets.clone(),
            )),
        ),
        (
            RateTableConnector::KIND,
            Arc::new(RateTableConnector::new()),
        ),
        (
            HttpConnector::KIND,
            Arc::new(HttpConnector::with_secret_source(secrets.clone())),
        ),
        (
            UpstreamChatConnector::KIND,
            Arc::new(UpstreamChatConnector::new()),
        ),
        (
            A2aConnector::KIND,
            Arc::new(A2aConnector::with_secret_source(secrets)),
        ),
        (ConfiguredConnector::KIND, Arc::new(ConfiguredConnector)),
    ];
    all.into_iter().map(|(k, c)| (k.to_owned(), c)).collect()
}

/// [`connectors`] with the secrets read from the environment.
pub fn default_connectors(registry_root: &Path) -> BTreeMap<String, Arc<dyn Connector>> {
    connectors(registry_root, None)
}

/// Of `connectors`, the kinds `registry`'s tools use: what a program serves once its
/// registry is loaded, so that a kind no tool names (the demo `fixture` data, say) is
/// not there to be reached.
pub fn used_by(
    mut connectors: BTreeMap<String, Arc<dyn Connector>>,
    registry: &Registry,
) -> BTreeMap<String, Arc<dyn Connector>> {
    connectors.retain(|kind, _| registry.tools().any(|t| &*t.connector_kind == kind));
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
