//! Baton's traces over OTLP (see `docs/design.md`, D-33).
//!
//! The engine already describes a turn as `tracing` spans shaped by OpenTelemetry's GenAI
//! conventions (`invoke_agent`, `chat`, `execute_tool`, the planner's waves). This crate
//! exports them: when the standard `OTEL_*` variables name an OTLP endpoint,
//! [`Telemetry::from_env`] builds an exporter (OTLP over HTTP with protobuf) behind a
//! bounded batch queue, and [`layer`] gives the `tracing` layer that feeds it. With no
//! endpoint set, nothing is built and spans cost what they cost without it.
//!
//! Export never waits on the turn: spans go to a queue that a background thread drains
//! (`OTEL_BSP_MAX_QUEUE_SIZE`, 2,048 by default); when the receiver is down or slow and the
//! queue is full, new spans are dropped, and the exporter logs how many.

use std::collections::HashMap;
use std::sync::OnceLock;

use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry::trace::{TraceContextExt as _, TracerProvider as _};
use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{BatchSpanProcessor, SdkTracerProvider, Tracer};
use tracing::Subscriber;
use tracing_opentelemetry::{OpenTelemetryLayer, OpenTelemetrySpanExt as _};
use tracing_subscriber::registry::LookupSpan;

/// Variables that name where traces go; export is on when one is set and not empty.
const ENDPOINT_VARIABLES: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
];

/// Variables that choose the wire protocol, the traces' own first.
const PROTOCOL_VARIABLES: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
];

/// The one protocol this build speaks.
const HTTP_PROTOBUF: &str = "http/protobuf";

/// Why traces cannot be exported as configured.
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
    /// The exporter could not be built from the configuration.
    #[error("the OTLP exporter could not be built: {0}")]
    Exporter(#[from] opentelemetry_otlp::ExporterBuildError),
    /// Spans still queued could not be sent at shutdown.
    #[error("the last traces could not be sent: {0}")]
    Shutdown(String),
}

/// The process's tracer, set once by [`Telemetry::from_env`].
static TRACER: OnceLock<Tracer> = OnceLock::new();

/// Trace export for the life of the process; [`Telemetry::shutdown`] sends what is queued.
/// Clones share the exporter.
#[derive(Debug, Clone)]
pub struct Telemetry {
    provider: SdkTracerProvider,
}

/// Whether the variables `get` reads turn export on: an endpoint is named, and the SDK is
/// not disabled (`OTEL_SDK_DISABLED=true`) nor the traces exporter `none`.
fn enabled(get: impl Fn(&str) -> Option<String>) -> bool {
    let set = |name: &str| get(name).is_some_and(|v| !v.trim().is_empty());
    let is =
        |name: &str, value: &str| get(name).is_some_and(|v| v.trim().eq_ignore_ascii_case(value));
    ENDPOINT_VARIABLES.iter().any(|v| set(v))
        && !is("OTEL_SDK_DISABLED", "true")
        && !is("OTEL_TRACES_EXPORTER", "none")
}

/// The protocol asked for, when it is not the one this build speaks.
fn unsupported_protocol(get: impl Fn(&str) -> Option<String>) -> Option<TelemetryError> {
    let (variable, value) = PROTOCOL_VARIABLES
        .iter()
        .find_map(|v| get(v).filter(|x| !x.trim().is_empty()).map(|x| (*v, x)))?;
    (value.trim() != HTTP_PROTOBUF).then_some(TelemetryError::Protocol { variable, value })
}

impl Telemetry {
    /// Builds trace export from the `OTEL_*` variables (`OTEL_EXPORTER_OTLP_ENDPOINT`, its
    /// `_TRACES_` form, `_HEADERS`, `_TIMEOUT`, `OTEL_SERVICE_NAME`,
    /// `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_BSP_*`), or `None` when they name no endpoint.
    /// `service` names the process when `OTEL_SERVICE_NAME` does not. The process's
    /// rustls crypto provider must be installed first (the workspace's reqwest has none of
    /// its own).
    ///
    /// # Errors
    /// An unsupported protocol, or an exporter that cannot be built (a malformed endpoint
    /// or header).
    pub fn from_env(service: &str) -> Result<Option<Telemetry>, TelemetryError> {
        let get = |name: &str| std::env::var(name).ok();
        if !enabled(get) {
            return Ok(None);
        }
        if let Some(e) = unsupported_protocol(get) {
            return Err(e);
        }
        let exporter = SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .build()?;
        let named = get("OTEL_SERVICE_NAME").is_some_and(|v| !v.trim().is_empty());
        Ok(Some(Self::start(exporter, (!named).then_some(service))))
    }

    /// Builds trace export to the OTLP receiver at `endpoint` (its root, e.g.
    /// `http://127.0.0.1:4318`), whatever the `OTEL_*` variables say: for a program that
    /// is told where to send in its own flags (the benchmark).
    ///
    /// # Errors
    /// An exporter that cannot be built (a malformed endpoint).
    pub fn to_endpoint(service: &str, endpoint: &str) -> Result<Telemetry, TelemetryError> {
        let exporter = SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(format!("{}/v1/traces", endpoint.trim_end_matches('/')))
            .build()?;
        Ok(Self::start(exporter, Some(service)))
    }

    /// Starts the batch processor over `exporter`; `service` names the process when set.
    fn start(exporter: SpanExporter, service: Option<&str>) -> Telemetry {
        let mut resource = Resource::builder();
        if let Some(service) = service {
            resource = resource.with_service_name(service.to_owned());
        }
        let provider = SdkTracerProvider::builder()
            .with_span_processor(BatchSpanProcessor::builder(exporter).build())
            .with_resource(resource.build())
            .build();
        // A second call (never expected) keeps the first tracer.
        let _ = TRACER.set(provider.tracer("baton"));
        Telemetry { provider }
    }

    /// Sends the spans queued so far and waits for the receiver's answer (a Lambda
    /// function's invocation must not end with spans in the queue: the process may be
    /// frozen until the next one). It blocks: call it on a blocking thread.
    ///
    /// # Errors
    /// The receiver could not take them.
    pub fn flush(&self) -> Result<(), TelemetryError> {
        self.provider
            .force_flush()
            .map_err(|e| TelemetryError::Shutdown(e.to_string()))
    }

    /// Sends the spans still queued and stops export. Call it outside any async runtime:
    /// the exporter's HTTP client blocks.
    ///
    /// # Errors
    /// The receiver could not take the last spans.
    pub fn shutdown(self) -> Result<(), TelemetryError> {
        self.provider
            .shutdown()
            .map_err(|e| TelemetryError::Shutdown(e.to_string()))
    }
}

/// Whether [`Telemetry::from_env`] turned export on.
pub fn exporting() -> bool {
    TRACER.get().is_some()
}

/// The W3C `traceparent` of the current span, for a call that leaves the process; `None`
/// when the span is not exported.
pub fn traceparent() -> Option<String> {
    let context = tracing::Span::current().context();
    let span = context.span();
    let span = span.span_context();
    span.is_valid().then(|| {
        format!(
            "00-{}-{}-{:02x}",
            span.trace_id(),
            span.span_id(),
            span.trace_flags().to_u8()
        )
    })
}

/// A span for a request that came with a W3C `traceparent`: a child of the caller's span,
/// so that what runs under it continues the caller's trace. A malformed header starts a
/// trace of its own.
pub fn continuing(name: &'static str, traceparent: &str) -> tracing::Span {
    let carrier = HashMap::from([("traceparent".to_owned(), traceparent.to_owned())]);
    let parent = TraceContextPropagator::new().extract(&carrier);
    let span = tracing::info_span!("request", otel.name = name, otel.kind = "server");
    // Fails only when the span is not exported; then there is no trace to continue.
    let _ = span.set_parent(parent);
    span
}

/// Which spans and events go to the exporter: the engine's spans at `info` and above, and
/// no log event, since events can carry what the user wrote (the routing record holds each
/// specialist's query) and content is not exported (D-33).
pub fn spans_only<S>() -> impl tracing_subscriber::layer::Filter<S> {
    tracing_subscriber::filter::filter_fn(|meta| {
        meta.is_span() && *meta.level() <= tracing::Level::INFO
    })
}

/// The `tracing` layer that turns spans into exported ones, when export is on.
pub fn layer<S>() -> Option<OpenTelemetryLayer<S, Tracer>>
where
    S: Subscriber + for<'span> LookupSpan<'span>,
{
    TRACER.get().map(|tracer| {
        tracing_opentelemetry::layer()
            .with_tracer(tracer.clone())
            // Source locations and thread names add bytes to every span and say nothing
            // a reader of a turn's tree needs.
            .with_location(false)
            .with_threads(false)
            .with_tracked_inactivity(false)
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn export_is_off_without_an_endpoint() {
        assert!(!enabled(vars(&[])));
        assert!(!enabled(vars(&[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")])));
        assert!(!enabled(vars(&[("OTEL_SERVICE_NAME", "baton")])));
    }

    #[test]
    fn an_endpoint_turns_export_on_unless_disabled() {
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318");
        assert!(enabled(vars(&[endpoint])));
        assert!(enabled(vars(&[(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "http://127.0.0.1:4318/v1/traces"
        )])));
        assert!(!enabled(vars(&[endpoint, ("OTEL_SDK_DISABLED", "TRUE")])));
        assert!(!enabled(vars(&[
            endpoint,
            ("OTEL_TRACES_EXPORTER", "none")
        ])));
        assert!(enabled(vars(&[endpoint, ("OTEL_SDK_DISABLED", "false")])));
    }

    #[test]
    fn only_http_protobuf_is_accepted() {
        assert!(unsupported_protocol(vars(&[])).is_none());
        assert!(
            unsupported_protocol(vars(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")]))
                .is_none()
        );
        let e = unsupported_protocol(vars(&[
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
            ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc"),
        ]))
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(
            e.contains("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL = \"grpc\""),
            "{e}"
        );
    }
}
