//! The span exporter with its fault injection point, `otel.export` (D-39): armed, a batch
//! fails as it would with the receiver down. Built only with the `failpoints` feature.

use std::time::Duration;

use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

/// `E`, with the point in front of each export.
#[derive(Debug)]
pub(crate) struct Faulty<E>(pub(crate) E);

impl<E: SpanExporter> SpanExporter for Faulty<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        if baton_core::fault!("otel.export") {
            return Err(OTelSdkError::InternalFailure(
                baton_core::failpoint::injected("otel.export"),
            ));
        }
        self.0.export(batch).await
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.0.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.0.set_resource(resource);
    }
}
