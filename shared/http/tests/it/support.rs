//! Scripted turns, stores and request helpers for the app's tests, over the test kit's
//! registry.

use std::sync::Arc;

use async_trait::async_trait;
use axum::body::Body;
use axum::http::{Request, Response};
pub(crate) use baton_connectors::ConfiguredConnector;
use baton_core::Principal;
use baton_core::memory::EpisodeSummary;
use baton_core::ports::store::{
    AccountLink, Claim, ClaimRequest, Commit, DueEpisode, EpisodeMeta, Store, StoreError,
    StoredPicture,
};
use baton_core::ports::store::{
    CheckpointStore, LinkStore, SummaryStore, TurnStore, UpstreamStore,
};
use baton_core::ports::upstream::UpstreamConversation;
use baton_core::turn::TurnRecord;
use baton_http::{AppState, LocalPrincipal, PRINCIPAL_HEADER};
use baton_inproc::HeapStore;
use baton_inproc::scripted::ScriptedModel;
use baton_runtime::metrics::LocalMetrics;
use baton_runtime::{Runtime, RuntimeConfig};
pub(crate) use baton_testkit::registry::TestRegistry;
use serde_json::Value;
use tower::ServiceExt;

/// A store that is always down.
pub(crate) struct DownStore;

fn down() -> StoreError {
    StoreError::Unavailable("disk on fire at /var/lib/secret".into())
}

#[async_trait]
impl TurnStore for DownStore {
    async fn claim(&self, _: ClaimRequest) -> Result<Claim, StoreError> {
        Err(down())
    }

    async fn release(&self, _: &str, _: &str) -> Result<(), StoreError> {
        Err(down())
    }

    async fn commit(&self, _: &Commit) -> Result<u64, StoreError> {
        Err(down())
    }

    async fn episode(&self, _: &Principal, _: &str) -> Result<EpisodeMeta, StoreError> {
        Err(down())
    }

    async fn turns(&self, _: &Principal, _: &str, _: usize) -> Result<Vec<TurnRecord>, StoreError> {
        Err(down())
    }

    async fn turns_after(
        &self,
        _: &Principal,
        _: &str,
        _: u64,
        _: usize,
    ) -> Result<Vec<TurnRecord>, StoreError> {
        Err(down())
    }

    async fn body(&self, _: &Principal, _: &str, _: &str) -> Result<Value, StoreError> {
        Err(down())
    }

    async fn picture(&self, _: &Principal, _: &str, _: &str) -> Result<StoredPicture, StoreError> {
        Err(down())
    }

    async fn ready(&self) -> Result<(), StoreError> {
        Err(down())
    }
}

#[async_trait]
impl CheckpointStore for DownStore {
    async fn save_checkpoint(&self, _: &str, _: &str, _: &str) -> Result<(), StoreError> {
        Err(down())
    }

    async fn checkpoint(&self, _: &str, _: &str) -> Result<Option<String>, StoreError> {
        Err(down())
    }
}

#[async_trait]
impl SummaryStore for DownStore {
    async fn save_summary(
        &self,
        _: &Principal,
        _: &str,
        _: u64,
        _: &EpisodeSummary,
    ) -> Result<(), StoreError> {
        Err(down())
    }

    async fn due_episodes(&self, _: usize) -> Result<Vec<DueEpisode>, StoreError> {
        Err(down())
    }
}

#[async_trait]
impl UpstreamStore for DownStore {
    async fn upstream_conversation(
        &self,
        _: &Principal,
        _: &str,
        _: &str,
    ) -> Result<Option<UpstreamConversation>, StoreError> {
        Err(down())
    }

    async fn save_upstream_conversation(
        &self,
        _: &Principal,
        _: &str,
        _: &UpstreamConversation,
    ) -> Result<(), StoreError> {
        Err(down())
    }
}

#[async_trait]
impl LinkStore for DownStore {
    async fn link(&self, _: &Principal, _: &str) -> Result<Option<AccountLink>, StoreError> {
        Err(down())
    }

    async fn links(&self, _: &Principal) -> Result<Vec<AccountLink>, StoreError> {
        Err(down())
    }

    async fn save_link(&self, _: &Principal, _: &AccountLink) -> Result<(), StoreError> {
        Err(down())
    }

    async fn delete_link(&self, _: &Principal, _: &str) -> Result<bool, StoreError> {
        Err(down())
    }
}

/// A turn that routes to `shop`, which calls its tool, then composes. `route_delay_ms`
/// slows the routing call; `compose_chunk_delay_ms` spaces the composed chunks.
pub(crate) fn script(route_delay_ms: u64, compose_chunk_delay_ms: u64) -> String {
    format!(
        r#"
agents:
  orchestrator:
    - when: {{ purpose: route }}
      delay_ms: {route_delay_ms}
      text: ["Let me look. "]
      tool_calls: [{{ name: ask_shop, args: {{ query: "coffee deals", intent_count: 1 }} }}]
    - when: {{ purpose: compose }}
      chunk_delay_ms: {compose_chunk_delay_ms}
      text: ["Roast coffee ", "earns ", "500 points."]
  shop:
    - when: {{ after_tool_results: false }}
      tool_calls: [{{ name: search_offers, args: {{ query: "coffee deals" }} }}]
    - when: {{ after_tool_results: true }}
      text: ["Roast coffee earns 500 points."]
"#
    )
}

/// The answer the script composes.
pub(crate) const ANSWER: &str = "Roast coffee earns 500 points.";

/// Knobs for [`state`].
pub(crate) struct Rig {
    pub(crate) registry: TestRegistry,
    pub(crate) script: String,
    pub(crate) store: Arc<dyn Store>,
    pub(crate) default_principal: Option<&'static str>,
    pub(crate) max_body_bytes: Option<usize>,
    pub(crate) max_message_chars: usize,
    /// The pictures' limits, which widen the body limit of a turn (D-42).
    pub(crate) pictures: baton_core::picture::PictureLimits,
    pub(crate) metrics: bool,
}

impl Default for Rig {
    fn default() -> Self {
        Rig {
            registry: TestRegistry::default(),
            script: script(0, 0),
            store: Arc::new(HeapStore::new()),
            default_principal: Some("alice"),
            max_body_bytes: None,
            max_message_chars: 4_000,
            pictures: baton_core::picture::PictureLimits::default(),
            metrics: true,
        }
    }
}

impl Rig {
    pub(crate) fn state(self) -> AppState {
        let model = Arc::new(ScriptedModel::from_yaml(&self.script).expect("script parses"));
        let metrics = Arc::new(LocalMetrics::default());
        let runtime =
            Runtime::builder(Arc::new(self.registry.load().expect("test registry loads")))
                .model_override(model)
                .store(self.store.clone())
                .connector("test", Arc::new(ConfiguredConnector))
                .metrics(metrics.clone())
                .config(RuntimeConfig {
                    max_message_chars: self.max_message_chars,
                    pictures: self.pictures,
                    ..RuntimeConfig::default()
                })
                .build()
                .expect("runtime builds");
        let default = self
            .default_principal
            .map(|p| Principal::new(p).expect("valid principal"));
        let mut state = AppState::new(runtime, Arc::new(LocalPrincipal::new(default)));
        if self.metrics {
            state = state.with_metrics(metrics);
        }
        if let Some(limit) = self.max_body_bytes {
            state = state.with_max_body_bytes(limit);
        }
        state
    }
}

/// `POST /v1/turns` with a JSON body, optionally as `principal`.
pub(crate) fn post_turn(body: &str, principal: Option<&str>) -> Request<Body> {
    let mut req = Request::post("/v1/turns").header("content-type", "application/json");
    if let Some(p) = principal {
        req = req.header(PRINCIPAL_HEADER, p);
    }
    req.body(Body::from(body.to_owned())).unwrap()
}

/// `GET path`, optionally as `principal`.
pub(crate) fn get(path: &str, principal: Option<&str>) -> Request<Body> {
    let mut req = Request::get(path);
    if let Some(p) = principal {
        req = req.header(PRINCIPAL_HEADER, p);
    }
    req.body(Body::empty()).unwrap()
}

/// Sends one request to a fresh app over `state`.
pub(crate) async fn send(state: &AppState, req: Request<Body>) -> Response<Body> {
    baton_http::app(state.clone()).oneshot(req).await.unwrap()
}

/// The whole body as text.
pub(crate) async fn text(response: Response<Body>) -> String {
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    String::from_utf8(bytes.to_vec()).unwrap()
}

/// The JSON error body's `(code, message)`.
pub(crate) async fn error_of(response: Response<Body>) -> (String, String) {
    let body: Value = serde_json::from_str(&text(response).await).unwrap();
    (
        body["error"]["code"].as_str().unwrap().to_owned(),
        body["error"]["message"].as_str().unwrap().to_owned(),
    )
}
