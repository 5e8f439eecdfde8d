//! Baton's model provider for OpenAI-compatible chat-completions servers: Ollama, vLLM,
//! llama.cpp's server, LM Studio and OpenAI itself (`provider: openai_compatible` in
//! `models.yaml`, with a `base_url` and, where the server wants one, an `api_key_env`).
//!
//! A small client of its own on reqwest and `eventsource-stream` rather than a published
//! OpenAI client: those deserialize the chunks strictly (a missing tool-call `index`, an
//! empty `finish_reason`, an empty `usage` or an unknown field fail the whole stream), and
//! the servers this provider is for send exactly those. See [`assemble`] for the quirks
//! taken.
//!
//! - `request`: the JSON body (system blocks as one system message, tool results as
//!   `tool` messages, tool choice `auto` / `required` / `none` / a named function).
//! - `assemble`: chunks into normalized events.
//! - `call`: one streamed call: HTTP errors classified, a stall limit between events, a
//!   bound on line and body sizes, and a stream cut short as an error.
//! - `probe`: what `models.yaml` promises, checked against the server once, on first use.
//! - `embed`: [`OpenAiEmbedder`], vectors for memory search from `/embeddings` (D-43).

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

mod assemble;
mod call;
mod embed;
mod error;
mod probe;
mod request;
mod wire;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use baton_core::ports::model::{Model, ModelError, ModelRequest, ModelStream};
use baton_core::registry::{ModelCapabilities, ModelSpec};

pub use embed::OpenAiEmbedder;
pub use probe::ProbeVerdict;

/// The provider name in `models.yaml`.
pub const PROVIDER: &str = "openai_compatible";

/// How long a stream may stay silent (before its first event, or between two) before the
/// call is given up: a local model on a laptop may take a while to load.
pub const STALL_LIMIT: Duration = Duration::from_secs(120);

/// Why the provider cannot be set up from `models.yaml`. Each message says what to fix.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// An `openai_compatible` model without a `base_url`.
    #[error(
        "model {0:?} (provider openai_compatible) needs a base_url in models.yaml, e.g. http://127.0.0.1:11434/v1"
    )]
    NoBaseUrl(String),
    /// The API key variable is not set.
    #[error(
        "model {model:?} takes its API key from the environment variable {var}, which is not set"
    )]
    NoApiKey {
        /// Model key.
        model: String,
        /// Variable name.
        var: String,
    },
    /// The HTTP client could not be built (TLS roots unavailable).
    #[error("the HTTP client for OpenAI-compatible servers could not be built: {0}")]
    Client(String),
}

/// Where and how one model is reached.
struct Route {
    /// The models.yaml key (for messages).
    key: Arc<str>,
    /// The id the server knows the model by.
    model_id: Arc<str>,
    /// `{base_url}/chat/completions`.
    url: String,
    /// `base_url`, for messages.
    server: Arc<str>,
    api_key: Option<String>,
    capabilities: ModelCapabilities,
    probe: tokio::sync::OnceCell<ProbeVerdict>,
}

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key itself.
        f.debug_struct("Route")
            .field("key", &self.key)
            .field("url", &self.url)
            .field("api_key", &self.api_key.as_ref().map(|_| "(set)"))
            .finish_non_exhaustive()
    }
}

/// OpenAI-compatible chat completions as a [`Model`].
///
/// Built from the registry's `openai_compatible` models, keyed by model id (the id a
/// request carries); or, with [`OpenAiCompatible::serving_every_card`], one model that
/// serves every request whatever model the card names (running a whole registry on one
/// local model).
#[derive(Debug, Clone)]
pub struct OpenAiCompatible {
    client: reqwest::Client,
    routes: Arc<HashMap<Arc<str>, Arc<Route>>>,
    every_card: Option<Arc<Route>>,
    stall: Duration,
}

impl OpenAiCompatible {
    /// The provider for every `openai_compatible` model among `specs`.
    ///
    /// # Errors
    /// A model without a `base_url`, an API key variable that is not set, or no TLS roots.
    pub fn new<S: AsRef<ModelSpec>>(
        specs: impl IntoIterator<Item = S>,
    ) -> Result<Self, SetupError> {
        let mut routes = HashMap::new();
        for spec in specs {
            let spec = spec.as_ref();
            if &*spec.provider != PROVIDER {
                continue;
            }
            routes.insert(spec.model_id.clone(), Arc::new(route(spec)?));
        }
        Ok(OpenAiCompatible {
            client: client()?,
            routes: Arc::new(routes),
            every_card: None,
            stall: STALL_LIMIT,
        })
    }

    /// A provider that sends every request to `spec`'s server and model, whatever model
    /// the request names.
    ///
    /// # Errors
    /// As [`OpenAiCompatible::new`].
    pub fn serving_every_card(spec: &ModelSpec) -> Result<Self, SetupError> {
        Ok(OpenAiCompatible {
            client: client()?,
            routes: Arc::new(HashMap::new()),
            every_card: Some(Arc::new(route(spec)?)),
            stall: STALL_LIMIT,
        })
    }

    /// The same provider with another stall limit (tests of silent servers).
    pub fn with_stall_limit(mut self, stall: Duration) -> Self {
        self.stall = stall;
        self
    }

    /// Checks `model_id`'s server against what `models.yaml` promises (once per process;
    /// later calls return the first verdict). `baton validate --models` and the first
    /// call of a turn run it.
    ///
    /// # Errors
    /// The server could not be reached or failed (not remembered: the next call tries
    /// again).
    pub async fn probe(&self, model_id: &str) -> Result<ProbeVerdict, ModelError> {
        let Some(route) = self.route(model_id) else {
            return Err(ModelError::Invalid(format!(
                "no openai_compatible model has the id {model_id:?}"
            )));
        };
        let (client, stall) = (self.client.clone(), self.stall);
        let send = |body| call::unprobed(client, route.clone(), body, stall);
        probe::verdict(&route, send).await
    }

    fn route(&self, model_id: &str) -> Option<Arc<Route>> {
        self.every_card
            .clone()
            .or_else(|| self.routes.get(model_id).cloned())
    }
}

fn client() -> Result<reqwest::Client, SetupError> {
    // reqwest has no crypto provider of its own here: ring, unless the program installed
    // one first (an error only says so).
    let _ = rustls::crypto::ring::default_provider().install_default();
    // One client per process: its connection pool serves every call.
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(5))
        .tcp_nodelay(true)
        .build()
        .map_err(|e| SetupError::Client(e.to_string()))
}

fn route(spec: &ModelSpec) -> Result<Route, SetupError> {
    let endpoint = spec
        .endpoint
        .as_ref()
        .ok_or_else(|| SetupError::NoBaseUrl(spec.key.to_string()))?;
    let api_key = match &endpoint.api_key_env {
        None => None,
        Some(var) => Some(
            std::env::var(&**var)
                .ok()
                .filter(|k| !k.is_empty())
                .ok_or_else(|| SetupError::NoApiKey {
                    model: spec.key.to_string(),
                    var: var.to_string(),
                })?,
        ),
    };
    Ok(Route {
        key: spec.key.clone(),
        model_id: spec.model_id.clone(),
        url: format!("{}/chat/completions", endpoint.base_url),
        server: endpoint.base_url.clone(),
        api_key,
        capabilities: spec.capabilities,
        probe: tokio::sync::OnceCell::new(),
    })
}

/// Decodes a whole answer already received — a recorded stream, in the pieces it arrived
/// in — by the same path a live stream takes (bounds, events, assembly), for replays and
/// benchmarks.
///
/// # Errors
/// As a live stream's: a chunk that is not JSON, an answer cut before its finish reason.
pub async fn decode(
    pieces: Vec<bytes::Bytes>,
) -> Result<Vec<baton_core::ports::model::ModelEvent>, ModelError> {
    call::decode(pieces).await
}

impl Model for OpenAiCompatible {
    fn serves_as(&self) -> Option<(&str, &str)> {
        self.every_card
            .as_ref()
            .map(|route| ("openai_compatible", &*route.model_id))
    }

    fn stream(&self, request: &ModelRequest) -> ModelStream {
        let Some(route) = self.route(&request.model_id) else {
            let e = ModelError::Invalid(format!(
                "no openai_compatible model in models.yaml has the id {:?}",
                request.model_id
            ));
            return Box::pin(futures::stream::once(async move { Err(e) }));
        };
        let body = request::body(request, &route.model_id);
        call::stream(self.client.clone(), route, body, self.stall)
    }
}
