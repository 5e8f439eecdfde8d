//! The trace side: the `tracing` layer that feeds the exporter, and the W3C `traceparent`
//! going out of and coming into the process.

use std::collections::HashMap;
use std::sync::OnceLock;

use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry::trace::TraceContextExt as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::Tracer;
use tracing::Subscriber;
use tracing_opentelemetry::{OpenTelemetryLayer, OpenTelemetrySpanExt as _};
use tracing_subscriber::registry::LookupSpan;

/// The process's tracer, set once when export starts.
pub(crate) static TRACER: OnceLock<Tracer> = OnceLock::new();

/// Whether trace export is on.
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

/// The SERVER span of a request `name`d `METHOD /route` (OpenTelemetry's HTTP
/// conventions: `http.request.method`, `http.route`, and `http.response.status_code`, which
/// the caller records once it knows it). With a W3C `traceparent` it is a child of the
/// caller's span, so that what runs under it continues the caller's trace; without one, or
/// with a malformed one, it starts a trace of its own.
pub fn continuing(name: &'static str, traceparent: Option<&str>) -> tracing::Span {
    let (method, route) = name.split_once(' ').unwrap_or(("", name));
    let span = tracing::info_span!(
        "request",
        otel.name = name,
        otel.kind = "server",
        http.request.method = method,
        http.route = route,
        http.response.status_code = tracing::field::Empty,
    );
    if let Some(traceparent) = traceparent {
        let carrier = HashMap::from([("traceparent".to_owned(), traceparent.to_owned())]);
        let parent = TraceContextPropagator::new().extract(&carrier);
        // Fails only when the span is not exported; then there is no trace to continue.
        let _ = span.set_parent(parent);
    }
    span
}

/// Links the current span to the span a W3C `traceparent` names (a resumed turn to the
/// turn that waited, D-33); a malformed one links nothing.
pub fn link_to(traceparent: &str) {
    let carrier = HashMap::from([("traceparent".to_owned(), traceparent.to_owned())]);
    let context = TraceContextPropagator::new().extract(&carrier);
    let span_context = context.span().span_context().clone();
    if span_context.is_valid() {
        tracing::Span::current().add_link(span_context);
    }
}

/// Which spans and events go to the exporter: the engine's spans at `info` and above, and
/// no log event, since events can carry what the user wrote (the routing record holds each
/// specialist's query). Content reaches a span only when asked for, masked (D-33).
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
