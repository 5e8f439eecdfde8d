//! Server failures as [`ModelError`]s: what the engine can do about them. The server's own
//! words go to the logs only.

use baton_core::ports::model::ModelError;
use reqwest::StatusCode;
use serde_json::Value;

/// An HTTP status other than success, with (a bounded piece of) the body for the logs.
pub(crate) fn from_status(status: StatusCode, body: &str, server: &str) -> ModelError {
    let detail = format!(
        "{server} answered HTTP {}: {}",
        status.as_u16(),
        body.trim()
    );
    match status.as_u16() {
        429 => ModelError::Throttled,
        401 | 403 => ModelError::Invalid(format!(
            "{server} refused the API key (HTTP {}): check the variable named by api_key_env",
            status.as_u16()
        )),
        408 | 500 | 502 | 503 | 504 | 529 => ModelError::Unavailable(detail),
        404 => ModelError::Invalid(format!(
            "{detail} (is base_url right? it should end in /v1 for most servers)"
        )),
        _ => ModelError::Invalid(detail),
    }
}

/// A failure the server reported inside the stream (`{"error": …}`).
pub(crate) fn in_stream(error: &Value) -> ModelError {
    let text = error.to_string();
    let code = error
        .get("code")
        .and_then(Value::as_u64)
        .or_else(|| error.get("status").and_then(Value::as_u64));
    if code == Some(429) || text.contains("rate limit") || text.contains("rate_limit") {
        ModelError::Throttled
    } else {
        ModelError::Unavailable(format!("the server reported an error mid-stream: {text}"))
    }
}

/// A failure to reach the server or to read its answer.
pub(crate) fn from_transport(error: &reqwest::Error, server: &str) -> ModelError {
    if error.is_timeout() {
        ModelError::Timeout
    } else if error.is_connect() {
        ModelError::Unavailable(format!("{server} could not be reached: {error}"))
    } else {
        ModelError::Unavailable(format!("reading from {server} failed: {error}"))
    }
}
