//! Logs as a Lambda function writes them: JSON lines on stdout for CloudWatch Logs, the
//! same for every function of the bundle.

use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt as _;

/// JSON logs on stdout, one object per line with the event's fields flattened and the
/// current span's fields attached. The level comes from
/// `AWS_LAMBDA_LOG_LEVEL` (set by Lambda's logging config), else `RUST_LOG`, else `info`.
pub fn init() {
    let _ = tracing_subscriber::registry().with(layer()).try_init();
}

/// [`init`]'s logs as a layer, for a function that adds another (trace export).
pub fn layer<S>() -> impl Layer<S>
where
    S: Subscriber + for<'span> LookupSpan<'span>,
{
    let filter = tracing_subscriber::EnvFilter::try_from_env("AWS_LAMBDA_LOG_LEVEL")
        .or_else(|_| tracing_subscriber::EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| "info".into());
    tracing_subscriber::fmt::layer()
        .json()
        .flatten_event(true)
        .with_current_span(true)
        .with_span_list(false)
        .with_target(false)
        .without_time() // CloudWatch stamps every line
        .with_filter(filter)
}
