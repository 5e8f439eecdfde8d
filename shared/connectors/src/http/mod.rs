//! `http`: a tool answered by an HTTP service (`connector: {kind: http, url: ...}`).
//!
//! One call, one request (plus retries):
//! - `url` is a template: `{name}` placeholders are filled from the tool's arguments,
//!   percent-encoded, and may stand only in the path or query (never the scheme or host).
//!   A placeholder whose argument is absent makes the call unavailable (the tool's schema
//!   is not known here, so it cannot be checked at load).
//! - `method` (default GET): GET and DELETE send the arguments no placeholder uses as a
//!   query string; POST, PUT and PATCH send the request envelope
//!   `{"principal", "args", "tool", "episode_id"}` as JSON.
//! - The principal travels on every call as the `x-baton-principal` header (D-29).
//! - `headers`: plain strings, or secrets by reference (`{env: VAR, prefix: "Bearer "}`,
//!   `{arn: ...}`) resolved through the connector's [`SecretSource`] once per process
//!   (at `check_config`, or on first use) and never shown in Debug, errors or logs.
//! - The answer (`response`): by default an envelope, returned exactly as the service gave
//!   it (the runtime's `judge_envelope` checks its principal and version); or plain JSON
//!   (`response: {json: {...}}`) that the connector wraps in an envelope for the request's
//!   principal. Bodies over `max_body_bytes` (default 1 MiB) are cut off, never buffered;
//!   HTML or non-JSON is an invalid envelope; a failure status, a cut-off body or a
//!   transport error is "unavailable". Redirects are not followed (a secret header must
//!   not reach another host).
//!
//! Time: the runtime cuts a call at the tool's `timeout_ms`, which the connector does not
//! see; the connector's own budget is `deadline_ms` (default 30000, the runtime's default
//! tool timeout; set it to the tool's `timeout_ms`). Every attempt is bounded by what is
//! left of it (a slow body ends at the deadline), and a retry starts only when its wait
//! plus the previous attempt's duration still fits before it. Connecting is bounded by
//! `connect_timeout_ms` (default 2000).
//!
//! Retries (`retry: {attempts, backoff_ms}`, default one attempt): only for idempotent
//! calls (GET, PUT, DELETE; POST and PATCH with `idempotent: true`; `idempotent: false`
//! turns them off for any method), only after a connection failure or HTTP 429, 502, 503,
//! 504; exponential backoff with jitter, at least the service's `Retry-After` seconds,
//! at most 10 s a wait.
//!
//! Clients: one reqwest client (one connection pool) per distinct
//! (`connect_timeout_ms`, `ca_file`), built once per connector; tools that keep the
//! defaults all share one. `ca_file` names a PEM file of the CAs trusted instead of the
//! system's roots (a private CA), read when the client is built.
//!
//! The user's own sign-in (`oauth: {grant: authorization_code, redirect_uri, resource?}`,
//! D-37): the principal's token from their account link goes with each request as a Bearer
//! token; a 401 (or a 403 asking for more scope) with the API's challenge renews it once,
//! or, with no link that works, ends the call as [`ConnectorError::NeedsLink`] so that the
//! turn waits for the user to connect their account.
//!
//! See `docs/connectors-http.md` for the settings and an example.

mod config;
mod response;
mod retry;
mod template;

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use async_trait::async_trait;
use baton_core::ports::connector::{Connector, ConnectorError, ConnectorRequest, Envelope};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue};
use serde_json::{Value, json};

use crate::oauth::{Challenge, LinkedTokenSource, Tokens as _, finish_link};
use crate::secrets::{EnvSecretSource, SecretSource, Secrets};
use config::{ClientSettings, HttpConfig};

/// The header that carries the principal to the service (D-29).
const PRINCIPAL_HEADER: &str = "x-baton-principal";

/// The W3C trace-context header.
const TRACEPARENT: &str = "traceparent";
/// The header that carries a call's idempotency key.
const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// The `http` connector kind: tools answered by HTTP services.
pub struct HttpConnector {
    /// The header secrets, each read once per process.
    secrets: Arc<Secrets>,
    /// One client per distinct client settings, built on first use.
    clients: Mutex<HashMap<ClientSettings, reqwest::Client>>,
    /// Each tool's settings as parsed on its first call, beside the settings they were
    /// parsed from: a call with the same settings (the registry's, shared) skips parsing.
    parsed: Mutex<HashMap<Arc<str>, Parsed>>,
}

/// A tool's settings as written, and as parsed from them.
type Parsed = (Arc<Value>, Arc<HttpConfig>);

impl fmt::Debug for HttpConnector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Counts only: neither a secret nor its reference is shown.
        f.debug_struct("HttpConnector")
            .field("secrets", &self.secrets)
            .field("clients", &lock(&self.clients).len())
            .finish_non_exhaustive()
    }
}

impl Default for HttpConnector {
    fn default() -> Self {
        Self::new()
    }
}

/// The map behind `mutex`, even if a holder panicked (its maps stay consistent: each
/// change is one insert).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl HttpConnector {
    /// The kind name used in `tools.yaml`.
    pub const KIND: &'static str = "http";

    /// A connector whose header secrets come from environment variables.
    pub fn new() -> Self {
        Self::with_secret_source(Arc::new(EnvSecretSource))
    }

    /// A connector whose header secrets come from `source`.
    pub fn with_secret_source(source: Arc<dyn SecretSource>) -> Self {
        HttpConnector {
            secrets: Arc::new(Secrets::new(source)),
            clients: Mutex::new(HashMap::new()),
            parsed: Mutex::new(HashMap::new()),
        }
    }

    /// The tool's parsed settings, parsed once per settings value.
    fn config(&self, tool: &Arc<str>, raw: &Arc<Value>) -> Result<Arc<HttpConfig>, String> {
        if let Some((from, parsed)) = lock(&self.parsed).get(tool)
            && Arc::ptr_eq(from, raw)
        {
            return Ok(parsed.clone());
        }
        let parsed = Arc::new(HttpConfig::parse(raw)?);
        lock(&self.parsed).insert(tool.clone(), (raw.clone(), parsed.clone()));
        Ok(parsed)
    }

    /// The configured headers with their secrets, and the principal's.
    fn headers(&self, config: &HttpConfig, principal: &str) -> Result<HeaderMap, ConnectorError> {
        let mut headers = self
            .secrets
            .header_map(&config.headers)
            .map_err(ConnectorError::Config)?;
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        let principal = HeaderValue::from_str(principal).map_err(|_| {
            ConnectorError::Unavailable("the principal cannot travel as a header".to_owned())
        })?;
        headers.insert(PRINCIPAL_HEADER, principal);
        Ok(headers)
    }

    /// The client for `settings`, built once.
    fn client(&self, settings: &ClientSettings) -> Result<reqwest::Client, ConnectorError> {
        if let Some(client) = lock(&self.clients).get(settings) {
            return Ok(client.clone());
        }
        let client = build_client(settings).map_err(ConnectorError::Config)?;
        Ok(lock(&self.clients)
            .entry(settings.clone())
            .or_insert(client)
            .clone())
    }
}

fn build_client(settings: &ClientSettings) -> Result<reqwest::Client, String> {
    // A tool's own CA file replaces the shared roots.
    let mut builder = match &settings.ca_file {
        Some(_) => {
            crate::install_tls_provider();
            reqwest::Client::builder()
        }
        None => crate::tls::client_builder(),
    };
    builder = builder
        .connect_timeout(settings.connect_timeout)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("baton-connectors/", env!("CARGO_PKG_VERSION")));
    if let Some(path) = &settings.ca_file {
        builder = builder.tls_certs_only(ca_certificates(path)?);
    }
    builder
        .build()
        .map_err(|e| format!("cannot set up the HTTP client: {e}"))
}

/// The certificates of the PEM file `path`; at least one.
fn ca_certificates(path: &std::path::Path) -> Result<Vec<reqwest::Certificate>, String> {
    let shown = path.display();
    let pem = std::fs::read(path).map_err(|e| format!("ca_file {shown}: {e}"))?;
    let certs = reqwest::Certificate::from_pem_bundle(&pem)
        .map_err(|_| format!("ca_file {shown} is not a PEM file of certificates"))?;
    if certs.is_empty() {
        return Err(format!("ca_file {shown} holds no certificate"));
    }
    Ok(certs)
}

/// A transport error in words for logs: what failed, without the URL (it may hold
/// arguments).
fn describe(e: &reqwest::Error) -> String {
    if e.is_connect() && e.is_timeout() {
        "connecting took too long".into()
    } else if e.is_timeout() {
        "it took too long".into()
    } else if e.is_connect() {
        "it could not be reached".into()
    } else if e.is_body() || e.is_decode() {
        "the connection failed while the answer was read".into()
    } else {
        let mut text = e.to_string();
        if let Some(url) = e.url() {
            text = text.replace(url.as_str(), "<url>");
        }
        text
    }
}

#[async_trait]
impl Connector for HttpConnector {
    fn protocol(&self) -> Option<&'static str> {
        Some("http")
    }

    async fn call(&self, request: ConnectorRequest) -> Result<Envelope, ConnectorError> {
        let started = Instant::now();
        let config = self
            .config(&request.tool_id, &request.config)
            .map_err(ConnectorError::Config)?;
        let deadline = started + config.deadline;
        let principal = request.principal.as_str();
        let client = self.client(&config.client)?;
        let mut headers = self.headers(&config, principal)?;
        // The service's own spans join the turn's trace (D-33).
        if let Some(value) = request
            .traceparent
            .as_deref()
            .and_then(|t| HeaderValue::from_str(t).ok())
        {
            headers.insert(TRACEPARENT, value);
        }
        // The same act carries the same key on every attempt (D-36).
        if let Some(value) = request
            .idempotency_key
            .as_deref()
            .and_then(|k| HeaderValue::from_str(k).ok())
        {
            headers.insert(IDEMPOTENCY_KEY, value);
        }
        let url = config
            .url
            .fill(&request.args, !config.method.has_body())
            .map_err(ConnectorError::Unavailable)?;
        let body = if config.method.has_body() {
            let envelope = json!({
                "principal": principal,
                "args": request.args,
                "tool": &*request.tool_id,
                "episode_id": &*request.episode_id,
            });
            Some(bytes::Bytes::from(serde_json::to_vec(&envelope).map_err(
                |e| ConnectorError::Unavailable(format!("cannot encode the request: {e}")),
            )?))
        } else {
            None
        };
        // The principal's own token, for an API that acts for the user.
        let tokens = match (&config.oauth, &request.links) {
            (Some(auth), Some(links)) => Some(LinkedTokenSource::new(
                auth.spec.clone(),
                auth.resource.clone(),
                client.clone(),
                self.secrets.clone(),
                links.clone(),
                request.principal.clone(),
            )),
            (Some(_), None) => {
                return Err(ConnectorError::Config(
                    "this API acts with the user's own sign-in, and this runtime keeps no account links".to_owned(),
                ));
            }
            (None, _) => None,
        };
        let mut token = match &tokens {
            Some(t) => t.cached().await,
            None => None,
        };
        let mut renewed = false;
        let may_retry = config.retry.idempotent && config.retry.attempts > 1;
        let mut attempt = 1;
        loop {
            let attempt_started = Instant::now();
            let remaining = deadline.saturating_duration_since(attempt_started);
            if remaining.is_zero() {
                return Err(ConnectorError::Unavailable(
                    "no time left before the deadline".to_owned(),
                ));
            }
            let mut call = client
                .request(config.method.as_reqwest(), &url)
                .headers(headers.clone())
                .timeout(remaining);
            if let Some(token) = &token {
                call = call.bearer_auth(token.expose());
            }
            if let Some(body) = &body {
                call = call
                    .header(CONTENT_TYPE, "application/json")
                    .body(body.clone());
            }
            let last = !may_retry || attempt >= config.retry.attempts;
            let sent = call.send().await;
            // The API refused the token (or its absence): renewed once, and the request
            // sent again (it was refused, so nothing ran).
            if let Ok(answer) = &sent
                && !renewed
                && matches!(
                    answer.status(),
                    reqwest::StatusCode::UNAUTHORIZED | reqwest::StatusCode::FORBIDDEN
                )
                && let Some(tokens) = &tokens
                && let Some(challenge) = answer
                    .headers()
                    .get(reqwest::header::WWW_AUTHENTICATE)
                    .and_then(|v| v.to_str().ok())
                    .map(Challenge::parse)
            {
                renewed = true;
                match tokens.renew(token.as_ref(), &challenge).await {
                    Ok(fresh) => token = Some(fresh),
                    Err(fault) => {
                        return Err(match tokens.take_needed() {
                            Some(needed) => ConnectorError::NeedsLink(Box::new(needed)),
                            None => ConnectorError::Unavailable(fault.to_string()),
                        });
                    }
                }
                continue;
            }
            let (failure, retry_after) = match sent {
                Ok(answer) if !last && retry::retryable_status(answer.status()) => (
                    format!("it answered HTTP {}", answer.status()),
                    retry::retry_after(answer.headers()),
                ),
                // A key conflict: the service has seen this act's key, so it acted on an
                // earlier attempt (D-36). Said so, not reported as a failure.
                Ok(answer)
                    if answer.status() == reqwest::StatusCode::CONFLICT
                        && request.idempotency_key.is_some() =>
                {
                    return Err(ConnectorError::AlreadyActed(
                        "it answered HTTP 409 to a key it had seen".to_owned(),
                    ));
                }
                Ok(answer) => {
                    return response::finish(
                        answer,
                        &config.response,
                        config.max_body_bytes,
                        principal,
                    )
                    .await;
                }
                Err(e) if !last && e.is_connect() => (describe(&e), None),
                Err(e) => return Err(ConnectorError::Unavailable(describe(&e))),
            };
            let wait = retry::wait_before_retry(
                attempt,
                config.retry.backoff,
                retry_after,
                retry::jitter(),
            );
            // A retry that cannot finish before the deadline only adds load: the attempt
            // just made is the estimate of the next one.
            if Instant::now() + wait + attempt_started.elapsed() > deadline {
                return Err(ConnectorError::Unavailable(format!(
                    "{failure}; no time left to retry"
                )));
            }
            tracing::info!(
                tool = %request.tool_id,
                attempt,
                wait_ms = wait.as_millis() as u64,
                %failure,
                "retrying the http tool"
            );
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }

    fn check_config(&self, _tool_id: &str, config: &Value) -> Result<(), String> {
        let config = HttpConfig::parse(config)?;
        self.secrets.header_map(&config.headers)?;
        if let Some(path) = &config.client.ca_file {
            ca_certificates(path)?;
        }
        if let Some(auth) = &config.oauth {
            auth.spec
                .check(&self.secrets)
                .map_err(|e| format!("oauth: {e}"))?;
        }
        Ok(())
    }

    fn acts_for_user(&self, config: &Value) -> bool {
        HttpConfig::parse(config).is_ok_and(|c| c.oauth.is_some())
    }

    async fn finish_link(
        &self,
        config: &Value,
        pending: &str,
        code: &str,
    ) -> Result<String, ConnectorError> {
        let config = HttpConfig::parse(config).map_err(ConnectorError::Config)?;
        if config.oauth.is_none() {
            return Err(ConnectorError::Config(
                "this API does not act with the user's own sign-in".to_owned(),
            ));
        }
        let client = self.client(&config.client)?;
        finish_link(&client, pending, code).await
    }
}
