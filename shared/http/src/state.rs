//! What every request handler shares.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use baton_runtime::Runtime;
use baton_runtime::metrics::LocalMetrics;

use crate::hosts::AllowedHosts;
use crate::principal::PrincipalSource;

/// Largest accepted request body unless [`AppState::max_body_bytes`] says otherwise.
pub const DEFAULT_MAX_BODY_BYTES: usize = 64 * 1024;

/// The state behind the app (`baton_http::app`): the runtime, where callers' principals come from,
/// and optional extras. Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    /// The turn engine.
    pub runtime: Runtime,
    /// Who is calling (D-30).
    pub principals: Arc<dyn PrincipalSource>,
    /// In-process counters served at `GET /metrics`; the route exists only when set.
    pub metrics: Option<Arc<LocalMetrics>>,
    /// Largest accepted request body without pictures, in bytes (larger ones get 413); a
    /// request that starts a turn may add the turn's pictures, in base64
    /// ([`AppState::turn_body_limit`]).
    pub max_body_bytes: usize,
    /// The host's own cap on a request (a Lambda function's 6 MB), which no body limit
    /// passes.
    pub max_request_bytes: Option<usize>,
    /// Serve the web console at `/` (off unless [`AppState::with_console`]).
    pub console: bool,
    /// How long a request body may take to arrive (none: as long as the host allows).
    pub body_timeout: Option<Duration>,
    /// Makes the span that continues a caller's trace from its W3C `traceparent` (D-33);
    /// unset, a turn's trace starts with the turn.
    pub trace_continuation: Option<TraceContinuation>,
    /// The hosts every route answers, and the sites whose pages may call it
    /// (DNS-rebinding protection).
    pub hosts: AllowedHosts,
    /// Where clients reach this server (`https://assistant.example.com`), which the A2A
    /// card names; unset, the card names the host each request came under.
    pub public_url: Option<String>,
}

/// Given a request's name (`METHOD /route`) and its `traceparent`, if any, the SERVER span
/// under which it runs.
pub type TraceContinuation = fn(&'static str, Option<&str>) -> tracing::Span;

impl AppState {
    /// State with no metrics route and the default body limit.
    pub fn new(runtime: Runtime, principals: Arc<dyn PrincipalSource>) -> Self {
        AppState {
            runtime,
            principals,
            metrics: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_request_bytes: None,
            console: false,
            body_timeout: None,
            trace_continuation: None,
            hosts: AllowedHosts::Loopback(Vec::new()),
            public_url: None,
        }
    }

    /// The address clients reach this server at, for what names it (the A2A card): a
    /// card that names whatever `Host` a request came under could be cached under one host
    /// and served for another.
    pub fn with_public_url(mut self, url: Option<String>) -> Self {
        self.public_url = url.map(|u| u.trim_end_matches('/').to_owned());
        self
    }

    /// Which hosts every route answers, and whose pages may call it (loopback names only
    /// unless set).
    pub fn with_hosts(mut self, hosts: AllowedHosts) -> Self {
        self.hosts = hosts;
        self
    }

    /// Refuses (408) a request body that has not arrived whole within `timeout`.
    pub fn with_body_timeout(mut self, timeout: Duration) -> Self {
        self.body_timeout = Some(timeout);
        self
    }

    /// Serves these counters at `GET /metrics`.
    pub fn with_metrics(mut self, metrics: Arc<LocalMetrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Serves the web console at `/` (for a person at a browser, e.g. `baton serve`; the
    /// cloud turn function leaves it off).
    pub fn with_console(mut self) -> Self {
        self.console = true;
        self
    }

    /// Continues callers' traces with `continuation` (D-33).
    pub fn with_trace_continuation(mut self, continuation: TraceContinuation) -> Self {
        self.trace_continuation = Some(continuation);
        self
    }

    /// Sets the largest accepted request body without pictures, in bytes.
    pub fn with_max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// Caps every request at `bytes`, pictures included (the host's own limit).
    pub fn with_max_request_bytes(mut self, bytes: usize) -> Self {
        self.max_request_bytes = Some(bytes);
        self
    }

    /// The largest body of a request that starts a turn: the body limit plus room for the
    /// turn's pictures in base64 (D-42), within the host's cap.
    pub fn turn_body_limit(&self) -> usize {
        let pictures = self.runtime.config().pictures;
        let room = if pictures.max_pictures == 0 {
            0
        } else {
            pictures.max_total_bytes.div_ceil(3).saturating_mul(4)
        };
        let limit = self.max_body_bytes.saturating_add(room);
        self.max_request_bytes.map_or(limit, |cap| limit.min(cap))
    }
}

impl fmt::Debug for AppState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AppState")
            .field("entry", &self.runtime.entry().id)
            .field("metrics", &self.metrics.is_some())
            .field("max_body_bytes", &self.max_body_bytes)
            .field("max_request_bytes", &self.max_request_bytes)
            .field("console", &self.console)
            .field("body_timeout", &self.body_timeout)
            .finish_non_exhaustive()
    }
}
