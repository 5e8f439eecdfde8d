//! Baton's traces and metrics over OTLP (see `docs/design.md`, D-33).
//!
//! The engine already describes a turn as `tracing` spans shaped by OpenTelemetry's GenAI
//! conventions (`invoke_agent`, `chat`, `execute_tool`, the planner's waves), and counts
//! through its `Metrics` port. This crate exports both: when the standard `OTEL_*`
//! variables name an OTLP endpoint, [`Telemetry::from_env`] builds exporters (OTLP over
//! HTTP with protobuf), [`layer`] gives the `tracing` layer that feeds the span queue, and
//! [`metrics`] the `Metrics` sink that feeds the meter. With no endpoint set, nothing is
//! built and spans cost what they cost without it.
//!
//! Export never waits on the turn: spans go to a bounded queue that a background thread
//! drains (`OTEL_BSP_MAX_QUEUE_SIZE`, 2,048 by default); when the receiver is down or slow
//! and the queue is full, new spans are dropped and counted
//! (`otel.sdk.processor.span.processed` with `error.type = queue_full`, exported with the
//! metrics). Metrics are aggregated in memory and sent every `OTEL_METRIC_EXPORT_INTERVAL`
//! (60 s by default) by a thread of their own, and on [`Telemetry::flush`].

mod config;
#[cfg(feature = "failpoints")]
mod faulty;
mod metrics;
mod traces;

use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{MetricExporter, Protocol, SpanExporter, WithExportConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{BatchSpanProcessor, SdkTracerProvider};

use config::Signal;
pub use metrics::{OtlpMetrics, metrics};
pub use traces::{continuing, exporting, layer, link_to, spans_only, traceparent};

/// Why telemetry cannot be exported as configured.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// A protocol other than OTLP over HTTP with protobuf was asked for.
    #[error(
        "{variable} = {value:?} is not supported: set it to \"http/protobuf\" (or leave it unset)"
    )]
    Protocol {
        /// The variable that asked.
        variable: &'static str,
        /// What it asked for.
        value: String,
    },
    /// An exporter could not be built from the configuration.
    #[error("the OTLP exporter could not be built: {0}")]
    Exporter(#[from] opentelemetry_otlp::ExporterBuildError),
    /// What was still queued could not be sent.
    #[error("the last telemetry could not be sent: {0}")]
    Shutdown(String),
}

/// Export for the life of the process; [`Telemetry::shutdown`] sends what is queued.
/// Clones share the exporters.
#[derive(Debug, Clone)]
pub struct Telemetry {
    traces: Option<SdkTracerProvider>,
    metrics: Option<SdkMeterProvider>,
}

/// Whether prompts and answers may go on the spans, masked by the privacy guard:
/// `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true` and trace export on.
pub fn captures_content() -> bool {
    exporting() && config::content_captured(|name| std::env::var(name).ok())
}

impl Telemetry {
    /// Builds export from the `OTEL_*` variables (`OTEL_EXPORTER_OTLP_ENDPOINT`, its
    /// `_TRACES_` and `_METRICS_` forms, `_HEADERS`, `_TIMEOUT`, `OTEL_SERVICE_NAME`,
    /// `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_BSP_*`, `OTEL_METRIC_EXPORT_*`,
    /// `OTEL_{TRACES,METRICS}_EXPORTER=none`), or `None` when they name no endpoint.
    /// `service` names the process when `OTEL_SERVICE_NAME` does not. The process's
    /// rustls crypto provider must be installed first (the workspace's reqwest has none of
    /// its own).
    ///
    /// # Errors
    /// An unsupported protocol, or an exporter that cannot be built (a malformed endpoint
    /// or header).
    pub fn from_env(service: &str) -> Result<Option<Telemetry>, TelemetryError> {
        let get = |name: &str| std::env::var(name).ok();
        let traces = config::enabled(Signal::Traces, get);
        let metrics = config::enabled(Signal::Metrics, get);
        if !traces && !metrics {
            return Ok(None);
        }
        for signal in [Signal::Traces, Signal::Metrics] {
            if let Some(e) = config::unsupported_protocol(signal, get) {
                return Err(e);
            }
        }
        let named = get("OTEL_SERVICE_NAME").is_some_and(|v| !v.trim().is_empty());
        let resource = resource((!named).then_some(service));
        // Metrics first: the span queue binds its drop counter to the global meter when
        // it is built.
        let metrics = if metrics {
            let exporter = MetricExporter::builder()
                .with_http()
                .with_protocol(Protocol::HttpBinary)
                .build()?;
            Some(start_metrics(exporter, resource.clone()))
        } else {
            None
        };
        let traces = if traces {
            let exporter = SpanExporter::builder()
                .with_http()
                .with_protocol(Protocol::HttpBinary)
                .build()?;
            Some(start_traces(exporter, resource))
        } else {
            None
        };
        Ok(Some(Telemetry { traces, metrics }))
    }

    /// Builds trace and metric export to the OTLP receiver at `endpoint` (its root, e.g.
    /// `http://127.0.0.1:4318`), whatever the `OTEL_*` variables say: for a program that
    /// is told where to send in its own flags (the benchmark).
    ///
    /// # Errors
    /// An exporter that cannot be built (a malformed endpoint).
    pub fn to_endpoint(service: &str, endpoint: &str) -> Result<Telemetry, TelemetryError> {
        let root = endpoint.trim_end_matches('/');
        let resource = resource(Some(service));
        let metrics = MetricExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(format!("{root}/v1/metrics"))
            .build()?;
        let metrics = start_metrics(metrics, resource.clone());
        let traces = SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(format!("{root}/v1/traces"))
            .build()?;
        Ok(Telemetry {
            traces: Some(start_traces(traces, resource)),
            metrics: Some(metrics),
        })
    }

    /// Sends the spans queued and the metrics aggregated so far, and waits for the
    /// receiver's answers (a Lambda function's invocation must not end with them held:
    /// the process may be frozen until the next one). It blocks: call it on a blocking
    /// thread.
    ///
    /// # Errors
    /// The receiver could not take them.
    pub fn flush(&self) -> Result<(), TelemetryError> {
        both(
            self.traces.as_ref().map(|p| p.force_flush()),
            self.metrics.as_ref().map(|p| p.force_flush()),
        )
    }

    /// Sends what is still queued and stops export. Call it outside any async runtime:
    /// the exporters' HTTP client blocks.
    ///
    /// # Errors
    /// The receiver could not take the last of it.
    pub fn shutdown(self) -> Result<(), TelemetryError> {
        // Traces first: their drop count is a metric.
        both(
            self.traces.map(|p| p.shutdown()),
            self.metrics.map(|p| p.shutdown()),
        )
    }
}

impl Telemetry {
    /// [`Telemetry::shutdown`], waiting at most `limit`: a receiver that takes the
    /// connection and never answers must not hold a program's exit for the exporter's
    /// own timeout (10 s by default). What is not sent by then is lost.
    ///
    /// # Errors
    /// The receiver could not take the last of it, or did not answer in time.
    pub fn shutdown_within(self, limit: std::time::Duration) -> Result<(), TelemetryError> {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("otel-shutdown".into())
            .spawn(move || {
                let _ = tx.send(self.shutdown());
            })
            .map_err(|e| TelemetryError::Shutdown(format!("could not start: {e}")))?;
        rx.recv_timeout(limit).unwrap_or_else(|_| {
            Err(TelemetryError::Shutdown(format!(
                "the receiver did not answer within {} ms",
                limit.as_millis()
            )))
        })
    }
}

/// The outcome of sending spans, then metrics: the first failure, named.
fn both(
    traces: Option<opentelemetry_sdk::error::OTelSdkResult>,
    metrics: Option<opentelemetry_sdk::error::OTelSdkResult>,
) -> Result<(), TelemetryError> {
    traces
        .transpose()
        .map_err(|e| TelemetryError::Shutdown(format!("spans: {e}")))?;
    metrics
        .transpose()
        .map_err(|e| TelemetryError::Shutdown(format!("metrics: {e}")))?;
    Ok(())
}

fn resource(service: Option<&str>) -> Resource {
    let mut resource = Resource::builder();
    if let Some(service) = service {
        resource = resource.with_service_name(service.to_owned());
    }
    resource.build()
}

/// Starts the batch processor over `exporter` and makes it the process's tracer.
fn start_traces(exporter: SpanExporter, resource: Resource) -> SdkTracerProvider {
    #[cfg(feature = "failpoints")]
    let exporter = faulty::Faulty(exporter);
    let provider = SdkTracerProvider::builder()
        .with_span_processor(BatchSpanProcessor::builder(exporter).build())
        .with_resource(resource)
        .build();
    // A second call (never expected) keeps the first tracer.
    let _ = traces::TRACER.set(provider.tracer("baton"));
    provider
}

/// Starts the periodic reader over `exporter`, and makes it the process's meter and the
/// global one (where the SDK's own counters go).
fn start_metrics(exporter: MetricExporter, resource: Resource) -> SdkMeterProvider {
    let provider = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(exporter).build())
        .with_resource(resource)
        .build();
    opentelemetry::global::set_meter_provider(provider.clone());
    let _ = metrics::METER.set(provider.meter("baton"));
    provider
}
