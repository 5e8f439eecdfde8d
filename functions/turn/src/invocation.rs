//! What happens around each Lambda invocation, after its response has been streamed: wait
//! for the invocation's turns to commit, then write its metrics and send its spans.
//!
//! [`InvocationLayer`] wraps the whole `Service<LambdaInvocation>` that lambda_runtime
//! drives, including the sending of the streamed body to the Runtime API, so its work runs
//! after the last frame went out and before the runtime asks for the next event (after
//! which Lambda may freeze the process).

use std::future::Future;
use std::io::Write;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use baton_aws::emf::EmfMetrics;
use baton_core::ports::clock::Clock as _;
use baton_otel::Telemetry;
use baton_runtime::clock::SystemClock;
use lambda_http::lambda_runtime::LambdaInvocation;
use lambda_http::tower::{Layer, Service};

use crate::tracker::TurnTracker;

/// How long before the invocation's deadline the wait for turns gives up, leaving time to
/// write the metrics and return.
const DEADLINE_MARGIN: Duration = Duration::from_millis(500);
/// The longest wait when the deadline is unknown.
const DEFAULT_WAIT: Duration = Duration::from_secs(30);

/// Where metrics go: stdout on Lambda (CloudWatch Logs extracts EMF lines from it).
pub type MetricsSink = Arc<Mutex<dyn Write + Send>>;

/// Waits for in-flight turns, then flushes metrics and spans, after every invocation.
#[derive(Clone)]
pub struct InvocationLayer {
    tracker: TurnTracker,
    metrics: Arc<EmfMetrics>,
    sink: MetricsSink,
    telemetry: Option<Telemetry>,
}

impl InvocationLayer {
    /// Waits on `tracker` and writes `metrics` to `sink`.
    pub fn new(tracker: TurnTracker, metrics: Arc<EmfMetrics>, sink: MetricsSink) -> Self {
        InvocationLayer {
            tracker,
            metrics,
            sink,
            telemetry: None,
        }
    }

    /// Also sends the spans and metrics `telemetry` holds after each invocation (D-33): with the
    /// collector extension at localhost, before Lambda may freeze the process.
    #[must_use]
    pub fn with_telemetry(mut self, telemetry: Option<Telemetry>) -> Self {
        self.telemetry = telemetry;
        self
    }
}

impl<S> Layer<S> for InvocationLayer {
    type Service = InvocationService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        InvocationService {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service [`InvocationLayer`] makes.
#[derive(Clone)]
pub struct InvocationService<S> {
    inner: S,
    layer: InvocationLayer,
}

type BoxError = lambda_http::Error;

impl<S> Service<LambdaInvocation> for InvocationService<S>
where
    S: Service<LambdaInvocation, Response = (), Error = BoxError>,
    S::Future: 'static,
{
    type Response = ();
    type Error = BoxError;
    // lambda_runtime's own invocation future is not `Send`; it runs on the task that polls
    // the Runtime API, so this one need not be either.
    type Future = Pin<Box<dyn Future<Output = Result<(), BoxError>>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, invocation: LambdaInvocation) -> Self::Future {
        let request_id = invocation.context.request_id.clone();
        let deadline_ms = invocation.context.deadline;
        let sent = self.inner.call(invocation);
        let layer = self.layer.clone();
        Box::pin(async move {
            let result = sent.await;
            layer.after(&request_id, deadline_ms).await;
            result
        })
    }
}

impl InvocationLayer {
    /// The work after one invocation's response went out.
    pub async fn after(&self, request_id: &str, deadline_ms: u64) {
        let limit = wait_limit(deadline_ms, SystemClock.now_ms());
        if !self.tracker.idle(limit).await {
            tracing::error!(
                request_id,
                running = self.tracker.running(),
                "turns still running at the end of the invocation; they may not commit"
            );
        }
        let written = match self.sink.lock() {
            Ok(mut out) => self.metrics.flush(&mut *out, &[("RequestId", request_id)]),
            Err(_) => Ok(0),
        };
        if let Err(e) = written {
            tracing::warn!(error = %e, "could not write metrics");
        }
        if let Some(telemetry) = &self.telemetry {
            // The exporter's client blocks; the wait is bounded by the invocation's
            // deadline as the turns' was (a receiver that does not answer costs the spans,
            // never the next invocation).
            let telemetry = telemetry.clone();
            let limit = wait_limit(deadline_ms, SystemClock.now_ms());
            let flushed = tokio::time::timeout(
                limit,
                tokio::task::spawn_blocking(move || telemetry.flush()),
            )
            .await;
            match flushed {
                Ok(Ok(Ok(()))) => {}
                Ok(Ok(Err(e))) => {
                    tracing::warn!(error = %e, "could not send the invocation's spans and metrics")
                }
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "sending the invocation's spans and metrics failed")
                }
                Err(_) => {
                    tracing::warn!("the invocation's spans and metrics were not sent in time")
                }
            }
        }
    }
}

/// Time left before the deadline, less a margin; a default when the deadline is unknown.
fn wait_limit(deadline_ms: u64, now_ms: u64) -> Duration {
    if deadline_ms == 0 {
        return DEFAULT_WAIT;
    }
    Duration::from_millis(deadline_ms.saturating_sub(now_ms)).saturating_sub(DEADLINE_MARGIN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_ends_before_the_deadline() {
        assert_eq!(wait_limit(10_000, 4_000), Duration::from_millis(5_500));
        assert_eq!(wait_limit(1_000, 4_000), Duration::ZERO);
        assert_eq!(wait_limit(0, 4_000), DEFAULT_WAIT);
    }
}
