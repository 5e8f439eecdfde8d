//! The `configured` connector: needs no service; each tool answers with what its own
//! `tools.yaml` entry says, including the faults to rehearse (a delay, a failure, a
//! degraded or a foreign answer). For trying a card before its backend exists, and for
//! rehearsing how the assistant tells the user about a backend that fails.

use async_trait::async_trait;
use baton_core::ports::connector::{
    CacheMeta, Connector, ConnectorError, ConnectorRequest, Envelope, EnvelopeStatus,
};
use serde_json::Value;

/// Answers every tool from its `tools.yaml` config: `payload`, and optionally `status`
/// (`partial`, `error`), `principal` (to simulate a foreign principal), `delay_ms`,
/// `cache_meta` (the envelope's), and `fail: true` (a connector error).
pub struct ConfiguredConnector;

impl ConfiguredConnector {
    /// The connector kind it serves in `tools.yaml`.
    pub const KIND: &'static str = "configured";
}

#[async_trait]
impl Connector for ConfiguredConnector {
    async fn call(&self, request: ConnectorRequest) -> Result<Envelope, ConnectorError> {
        let cfg = &*request.config;
        if let Some(ms) = cfg.get("delay_ms").and_then(Value::as_u64) {
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
        }
        if cfg.get("fail").and_then(Value::as_bool) == Some(true) {
            return Err(ConnectorError::Unavailable(
                "backend down: 502 from upstream".into(),
            ));
        }
        let status = match cfg.get("status").and_then(Value::as_str) {
            Some("partial") => EnvelopeStatus::Partial,
            Some("error") => EnvelopeStatus::Error,
            _ => EnvelopeStatus::Ok,
        };
        let principal = cfg
            .get("principal")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| request.principal.to_string());
        Ok(Envelope {
            status,
            payload: cfg.get("payload").cloned().unwrap_or(Value::Null),
            partial: Vec::new(),
            principal,
            version: "1.0.0".into(),
            domain_type: "test".into(),
            enricher_id: request.tool_id.to_string(),
            cache_meta: cfg
                .get("cache_meta")
                .and_then(|c| serde_json::from_value::<CacheMeta>(c.clone()).ok())
                .unwrap_or_default(),
        })
    }
}
