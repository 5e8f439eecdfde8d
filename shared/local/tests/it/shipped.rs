//! The shipped registry with the offline model, as a new user gets it, over an in-memory
//! store.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use baton_core::events::Event;
use baton_core::ports::connector::{Connector, ConnectorError, ConnectorRequest, Envelope};
use baton_core::ports::model::Model;
use baton_inproc::HeapStore;
use baton_local::offline::OfflineModel;
use baton_runtime::registry_folder::{load_sources, read_sources};
use baton_runtime::{Runtime, TurnRequest};
use futures::StreamExt;

/// Stands in for the demo data: these tests look at routing and memory, not at results.
struct NoData;

#[async_trait]
impl Connector for NoData {
    async fn call(&self, _: ConnectorRequest) -> Result<Envelope, ConnectorError> {
        Err(ConnectorError::Unavailable(
            "no demo data in this test".into(),
        ))
    }

    fn check_config(&self, _: &str, _: &serde_json::Value) -> Result<(), String> {
        Ok(())
    }
}

/// The runtime over the shipped registry, every call answered by the offline model.
pub(crate) fn runtime() -> Runtime {
    runtime_over(Arc::new(HeapStore::new()))
}

/// [`runtime`] over `store`, which the test keeps to read the journal.
pub(crate) fn runtime_over(store: Arc<HeapStore>) -> Runtime {
    runtime_around(store, |offline| Arc::new(offline))
}

/// [`runtime_over`] with the offline model handed to `wrap` first (a test's recorder).
pub(crate) fn runtime_around(
    store: Arc<HeapStore>,
    wrap: impl FnOnce(OfflineModel) -> Arc<dyn Model>,
) -> Runtime {
    let root = baton_testkit::crate_dir().join("../registry");
    let connectors: BTreeMap<String, Arc<dyn Connector>> =
        ["fixture", "rate_table", "a2a", "http", "mcp"]
            .into_iter()
            .map(|kind| (kind.to_owned(), Arc::new(NoData) as Arc<dyn Connector>))
            .collect();
    let sources = read_sources(&root).unwrap();
    let registry = Arc::new(load_sources(&sources, &connectors, &Default::default()).unwrap());
    Runtime::builder(registry.clone())
        .model_override(wrap(OfflineModel::new(registry)))
        .store(store)
        .connectors(connectors)
        .build()
        .unwrap()
}

/// Runs one turn of `request` in English to its end; its events.
pub(crate) async fn turn_events(runtime: &Runtime, request: TurnRequest) -> Vec<Event> {
    let request = TurnRequest {
        locale: Some("en-US".into()),
        ..request
    };
    runtime
        .run_turn(request)
        .await
        .unwrap()
        .map(|e| e.event)
        .collect()
        .await
}
