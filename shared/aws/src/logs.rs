//! Logs as a Lambda function writes them: JSON lines on stdout for CloudWatch Logs, the
//! same for every function of the bundle.

/// JSON logs on stdout, one object per line with the event's fields flattened and the
/// current span's fields attached. The level comes from
/// `AWS_LAMBDA_LOG_LEVEL` (set by Lambda's logging config), else `RUST_LOG`, else `info`.
pub fn init() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("AWS_LAMBDA_LOG_LEVEL")
        .or_else(|_| tracing_subscriber::EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| "info".into());
    tracing_subscriber::fmt()
        .json()
        .flatten_event(true)
        .with_current_span(true)
        .with_span_list(false)
        .with_target(false)
        .without_time() // CloudWatch stamps every line
        .with_env_filter(filter)
        .init();
}
