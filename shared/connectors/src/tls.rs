//! One TLS setup for every HTTP client of the connectors. Building the platform's verifier
//! reads the system's certificate store, and that was most of a cold start's work when
//! each client did it (five of them at Init): it is done once per process.

use std::sync::OnceLock;

use rustls_platform_verifier::BuilderVerifierExt as _;

/// A client builder over the shared TLS setup (the platform's verifier, as reqwest's own,
/// built once). Where it cannot be built, reqwest builds its own and reports why.
pub(crate) fn client_builder() -> reqwest::ClientBuilder {
    crate::install_tls_provider();
    let builder = reqwest::Client::builder();
    match shared() {
        Some(config) => builder.tls_backend_preconfigured(config.clone()),
        None => builder,
    }
}

/// A client with reqwest's defaults over the shared TLS setup.
pub(crate) fn client() -> reqwest::Client {
    client_builder().build().unwrap_or_else(|e| {
        tracing::warn!(error = %e, "the shared TLS setup was refused; using reqwest's own");
        reqwest::Client::new()
    })
}

fn shared() -> Option<&'static rustls::ClientConfig> {
    static CONFIG: OnceLock<Option<rustls::ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| match platform() {
            Ok(config) => Some(config),
            Err(e) => {
                tracing::warn!(error = %e, "no shared TLS setup; each HTTP client builds its own");
                None
            }
        })
        .as_ref()
}

fn platform() -> Result<rustls::ClientConfig, rustls::Error> {
    let mut config = rustls::ClientConfig::builder()
        .with_platform_verifier()?
        .with_no_client_auth();
    // The clients speak HTTP/1.1 only (reqwest is built without HTTP/2).
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}
