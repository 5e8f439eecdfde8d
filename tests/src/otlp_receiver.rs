//! A stand-in OTLP receiver (HTTP with protobuf), for what a test must read back that the
//! real receiver (Phoenix) does not keep: metrics, and a receiver that stops answering.
//! Bodies are decoded with OpenTelemetry's own protocol types (`opentelemetry-proto`).
//!
//! It runs on a thread of its own, so sync and async tests use it alike.

// A receiver that cannot start ends the test that wanted it.
#![allow(clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::{metric, number_data_point};
use prost::Message as _;

/// How the receiver treats trace exports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Traces {
    /// Takes them.
    Take,
    /// Never answers: a receiver that is stuck (metrics are still taken).
    Hang,
}

/// Span names kept for reading back (a load of millions keeps its count only).
const NAMES_KEPT: usize = 10_000;

#[derive(Default)]
struct Received {
    span_count: usize,
    spans: Vec<ReceivedSpan>,
    metrics: Vec<ExportMetricsServiceRequest>,
}

/// A span as received, with what a test reads of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceivedSpan {
    /// Its name.
    pub name: String,
    /// OTLP's span kind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer.
    pub kind: i32,
    /// Its trace's id, in hex.
    pub trace_id: String,
    /// Its id, in hex.
    pub span_id: String,
    /// Its parent's id, in hex (empty for a root).
    pub parent_span_id: String,
    /// Each attribute's value as text.
    pub attributes: Vec<(String, String)>,
    /// The trace and span ids (hex) each link names.
    pub links: Vec<(String, String)>,
}

impl ReceivedSpan {
    /// An attribute's value as text.
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn text_of(value: Option<&opentelemetry_proto::tonic::common::v1::AnyValue>) -> String {
    match value.and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        _ => String::new(),
    }
}

/// A receiver on a free local port, for the life of the test process.
pub struct OtlpReceiver {
    /// Its root, e.g. `http://127.0.0.1:4318`, for `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub url: String,
    received: Arc<Mutex<Received>>,
}

type Shared = (Arc<Mutex<Received>>, Traces);

async fn take_traces(State((received, traces)): State<Shared>, body: Bytes) -> Vec<u8> {
    if traces == Traces::Hang {
        std::future::pending::<()>().await;
    }
    if let Ok(request) = ExportTraceServiceRequest::decode(body)
        && let Ok(mut r) = received.lock()
    {
        let spans = request
            .resource_spans
            .iter()
            .flat_map(|r| &r.scope_spans)
            .flat_map(|s| &s.spans);
        for span in spans {
            r.span_count += 1;
            if r.spans.len() < NAMES_KEPT {
                r.spans.push(ReceivedSpan {
                    name: span.name.clone(),
                    kind: span.kind,
                    trace_id: hex(&span.trace_id),
                    span_id: hex(&span.span_id),
                    parent_span_id: hex(&span.parent_span_id),
                    attributes: span
                        .attributes
                        .iter()
                        .map(|kv: &KeyValue| (kv.key.clone(), text_of(kv.value.as_ref())))
                        .collect(),
                    links: span
                        .links
                        .iter()
                        .map(|l| (hex(&l.trace_id), hex(&l.span_id)))
                        .collect(),
                });
            }
        }
    }
    // An empty export response.
    Vec::new()
}

async fn take_metrics(State((received, _)): State<Shared>, body: Bytes) -> Vec<u8> {
    if let Ok(request) = ExportMetricsServiceRequest::decode(body)
        && let Ok(mut r) = received.lock()
    {
        r.metrics.push(request);
    }
    Vec::new()
}

fn matches(attributes: &[KeyValue], wanted: &[(&str, &str)]) -> bool {
    wanted.iter().all(|(k, v)| {
        attributes.iter().any(|a| {
            a.key == *k
                && matches!(
                    a.value.as_ref().and_then(|v| v.value.as_ref()),
                    Some(any_value::Value::StringValue(s)) if s == v
                )
        })
    })
}

impl OtlpReceiver {
    /// Starts a receiver on a free port that treats trace exports as `traces` says.
    pub fn start(traces: Traces) -> OtlpReceiver {
        Self::start_on(0, traces)
    }

    /// Starts a receiver on `port` (0: a free one).
    pub fn start_on(port: u16, traces: Traces) -> OtlpReceiver {
        let received = Arc::new(Mutex::new(Received::default()));
        let listener =
            std::net::TcpListener::bind(("127.0.0.1", port)).expect("binding the receiver");
        let url = format!(
            "http://{}",
            listener.local_addr().expect("the receiver's address")
        );
        let app = axum::Router::new()
            .route("/v1/traces", post(take_traces))
            .route("/v1/metrics", post(take_metrics))
            .with_state((received.clone(), traces));
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("the receiver's runtime");
            runtime.block_on(async move {
                listener
                    .set_nonblocking(true)
                    .expect("a nonblocking socket");
                let listener =
                    tokio::net::TcpListener::from_std(listener).expect("the receiver's socket");
                let _ = axum::serve(listener, app).await;
            });
        });
        OtlpReceiver { url, received }
    }

    /// The names of the spans received so far (the first ten thousand).
    pub fn span_names(&self) -> Vec<String> {
        self.spans().into_iter().map(|s| s.name).collect()
    }

    /// The spans received so far (the first ten thousand).
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        self.received
            .lock()
            .map(|r| r.spans.clone())
            .unwrap_or_default()
    }

    /// How many spans arrived.
    pub fn span_count(&self) -> usize {
        self.received.lock().map(|r| r.span_count).unwrap_or(0)
    }

    /// How many metric exports arrived.
    pub fn metric_exports(&self) -> usize {
        self.received.lock().map(|r| r.metrics.len()).unwrap_or(0)
    }

    /// The largest value a counter `name` reported for a series carrying `attributes`
    /// (cumulative: the latest export has it all), summed over such series.
    pub fn counter(&self, name: &str, attributes: &[(&str, &str)]) -> Option<i64> {
        self.points(name, |data| match data {
            metric::Data::Sum(sum) => sum
                .data_points
                .iter()
                .filter(|p| matches(&p.attributes, attributes))
                .map(|p| match p.value {
                    Some(number_data_point::Value::AsInt(v)) => v,
                    Some(number_data_point::Value::AsDouble(v)) => v as i64,
                    None => 0,
                })
                .reduce(|a, b| a + b),
            _ => None,
        })
    }

    /// How many measurements a histogram `name` reported for series carrying `attributes`.
    pub fn histogram_count(&self, name: &str, attributes: &[(&str, &str)]) -> Option<i64> {
        self.points(name, |data| match data {
            metric::Data::Histogram(h) => h
                .data_points
                .iter()
                .filter(|p| matches(&p.attributes, attributes))
                .map(|p| p.count as i64)
                .reduce(|a, b| a + b),
            _ => None,
        })
    }

    /// The largest of what `read` finds in metric `name` across exports.
    fn points(&self, name: &str, read: impl Fn(&metric::Data) -> Option<i64>) -> Option<i64> {
        let received = self.received.lock().ok()?;
        received
            .metrics
            .iter()
            .flat_map(|r| &r.resource_metrics)
            .flat_map(|r| &r.scope_metrics)
            .flat_map(|s| &s.metrics)
            .filter(|m| m.name == name)
            .filter_map(|m| m.data.as_ref().and_then(&read))
            .max()
    }

    /// Waits until `done` holds (or `limit` passes); whether it did.
    pub fn wait_for(&self, limit: Duration, done: impl Fn(&OtlpReceiver) -> bool) -> bool {
        let started = Instant::now();
        while started.elapsed() < limit {
            if done(self) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        done(self)
    }
}
