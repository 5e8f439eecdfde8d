//! Where the function runs: under the Lambda Runtime API, or as a plain HTTP server for
//! local development.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::TcpListener;

use crate::init::Function;
use crate::invocation::{InvocationLayer, MetricsSink};

/// How often metrics are written when serving locally (there are no invocations to end).
const LOCAL_FLUSH_EVERY: Duration = Duration::from_secs(10);

/// Whether the process was started by Lambda (the Runtime API's address is set).
pub fn under_lambda() -> bool {
    std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some()
}

fn stdout_sink() -> MetricsSink {
    Arc::new(Mutex::new(std::io::stdout()))
}

impl Function {
    /// The layer that ends each invocation: waits for its turns, then writes metrics to
    /// `sink`.
    pub fn invocation_layer(&self, sink: MetricsSink) -> InvocationLayer {
        InvocationLayer::new(self.tracker.clone(), self.metrics.clone(), sink)
    }

    /// Serves invocations from the Lambda Runtime API with streamed responses (function
    /// URL in `RESPONSE_STREAM` mode, API Gateway REST with response streaming) until the
    /// runtime stops. Metrics go to stdout after each invocation, and spans and metrics to
    /// `telemetry`'s receiver when there is one.
    ///
    /// # Errors
    /// The Runtime API failed.
    pub async fn run_lambda(
        self,
        telemetry: Option<baton_otel::Telemetry>,
    ) -> Result<(), lambda_http::Error> {
        let layer = self
            .invocation_layer(stdout_sink())
            .with_telemetry(telemetry);
        lambda_http::streaming_runtime(self.router)
            .layer(layer)
            .run()
            .await
    }

    /// Serves the same router over HTTP on `listener` (local development): the caller comes
    /// from the principal source the function was built with. Metrics go to stdout every
    /// few seconds.
    ///
    /// # Errors
    /// The listener failed.
    pub async fn serve(self, listener: TcpListener) -> std::io::Result<()> {
        let metrics = self.metrics.clone();
        let flusher = tokio::spawn(async move {
            let mut every = tokio::time::interval(LOCAL_FLUSH_EVERY);
            loop {
                every.tick().await;
                if let Err(e) = metrics.flush(std::io::stdout().lock(), &[]) {
                    tracing::warn!(error = %e, "could not write metrics");
                }
            }
        });
        let served = axum::serve(listener, self.router).await;
        flusher.abort();
        served
    }
}
