//! The registry and the adapters behind each port, shared by every turn.

use std::collections::BTreeMap;
use std::sync::Arc;

use baton_core::ports::clock::Clock;
use baton_core::ports::connector::{Connector, TraceContext, TraceLink};
use baton_core::ports::memory::{Embedder, MemoryStore};
use baton_core::ports::metrics::Metrics;
use baton_core::ports::model::Model;
use baton_core::ports::store::Store;
use baton_core::privacy::PrivacyGuard;
use baton_core::registry::{Agent, ModelSpec, Registry};

use crate::account_links::LinkKeeper;
use crate::breaker::Breakers;
use crate::config::RuntimeConfig;
use crate::running::RunningTurns;

/// What every turn of a [`Runtime`](crate::Runtime) runs against.
pub(crate) struct Inner {
    pub(crate) registry: Arc<Registry>,
    pub(crate) entry: Arc<Agent>,
    pub(crate) models: BTreeMap<String, Arc<dyn Model>>,
    pub(crate) model_override: Option<Arc<dyn Model>>,
    pub(crate) store: Arc<dyn Store>,
    pub(crate) connectors: BTreeMap<String, Arc<dyn Connector>>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) metrics: Arc<dyn Metrics>,
    pub(crate) config: RuntimeConfig,
    pub(crate) breakers: Breakers,
    /// The privacy guard of the entry orchestrator (D-23).
    pub(crate) privacy: Arc<PrivacyGuard>,
    /// Where a tool call's trace context comes from, when traces are exported (D-33).
    pub(crate) trace_context: Option<TraceContext>,
    /// How a resumed turn's span is linked to the waiting turn's (D-33).
    pub(crate) trace_link: Option<TraceLink>,
    /// The turns running in this process, each with its stop signal.
    pub(crate) running: Arc<RunningTurns>,
    /// The principals' account links, when a link key is configured (D-37).
    pub(crate) links: Option<Arc<LinkKeeper>>,
    /// Permits to check a picture (`RuntimeConfig::picture_checks`).
    pub(crate) picture_checks: Arc<tokio::sync::Semaphore>,
    /// Long-term memory, when a memory store is configured (D-43).
    pub(crate) memory: Option<Recall>,
}

/// A runtime's memory across conversations (D-43): where memories are kept and what makes
/// their vectors.
#[derive(Clone)]
pub(crate) struct Recall {
    pub(crate) store: Arc<dyn MemoryStore>,
    pub(crate) embedder: Arc<dyn Embedder>,
}

impl Inner {
    /// The model adapter serving a registry model.
    pub(crate) fn model_for(&self, spec: &ModelSpec) -> Option<&Arc<dyn Model>> {
        self.model_override
            .as_ref()
            .or_else(|| self.models.get(&*spec.provider))
    }
}
