//! Simulated outages for partial-failure cases (`unavailable:` in a case): while a case
//! runs, every tool call its named specialists make fails as an unreachable service's
//! would, so the turn goes through the real failure path — the specialist's error, the
//! composition, the acknowledgement — with nothing else changed.
//!
//! A program that runs evals serves its connectors through [`with_outages`]; each case runs
//! as a principal of its own, so an outage is keyed by principal and touches no other case.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use async_trait::async_trait;
use baton_core::Principal;
use baton_core::ports::connector::{
    Connector, ConnectorError, ConnectorRequest, DiscoveredTool, Envelope,
};
use baton_core::ports::upstream::UpstreamChat;

/// Principal → the specialists down for its case.
static DOWN: LazyLock<Mutex<HashMap<String, BTreeSet<String>>>> = LazyLock::new(Default::default);

/// What a simulated outage answers (logs only: the user sees the specialist's failure).
const WHY: &str = "the eval case made this specialist's services unavailable";

/// Each connector, wrapped so that a case's outages apply to its calls.
pub fn with_outages(
    connectors: impl IntoIterator<Item = (String, Arc<dyn Connector>)>,
) -> Vec<(String, Arc<dyn Connector>)> {
    connectors
        .into_iter()
        .map(|(kind, inner)| (kind, Arc::new(Outage { inner }) as Arc<dyn Connector>))
        .collect()
}

/// The outages of one case, in force until dropped.
pub(crate) struct Down(String);

impl Down {
    /// Makes `agents` unavailable to `principal`'s turns.
    pub(crate) fn start(principal: &Principal, agents: &[String]) -> Option<Down> {
        if agents.is_empty() {
            return None;
        }
        let key = principal.as_str().to_owned();
        DOWN.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key.clone(), agents.iter().cloned().collect());
        Some(Down(key))
    }
}

impl Drop for Down {
    fn drop(&mut self) {
        DOWN.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.0);
    }
}

fn is_down(principal: &Principal, agent: &str) -> bool {
    DOWN.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(principal.as_str())
        .is_some_and(|down| down.contains(agent))
}

struct Outage {
    inner: Arc<dyn Connector>,
}

#[async_trait]
impl Connector for Outage {
    async fn call(&self, request: ConnectorRequest) -> Result<Envelope, ConnectorError> {
        if is_down(&request.principal, &request.agent_id) {
            return Err(ConnectorError::Unavailable(WHY.to_owned()));
        }
        self.inner.call(request).await
    }

    fn check_config(&self, tool_id: &str, config: &serde_json::Value) -> Result<(), String> {
        self.inner.check_config(tool_id, config)
    }

    async fn discover(
        &self,
        tool_id: &str,
        config: &serde_json::Value,
    ) -> Result<Option<DiscoveredTool>, String> {
        self.inner.discover(tool_id, config).await
    }

    fn protocol(&self) -> Option<&'static str> {
        self.inner.protocol()
    }

    async fn settle(&self) {
        self.inner.settle().await;
    }

    async fn probe(&self, tool_id: &str, config: &serde_json::Value) -> Result<(), String> {
        self.inner.probe(tool_id, config).await
    }

    fn upstream_chat(&self) -> Option<&dyn UpstreamChat> {
        self.inner.upstream_chat()
    }

    fn acts_for_user(&self, config: &serde_json::Value) -> bool {
        self.inner.acts_for_user(config)
    }

    async fn finish_link(
        &self,
        config: &serde_json::Value,
        pending: &str,
        code: &str,
    ) -> Result<String, ConnectorError> {
        self.inner.finish_link(config, pending, code).await
    }
}
