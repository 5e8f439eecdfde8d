//! Refusals in OpenAI's error shape: `{"error": {"message", "type", "param", "code"}}`,
//! with the same status and plain message as the native API's.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::error::Error;

/// An [`Error`] as an OpenAI-compatible client expects it.
pub(crate) struct OpenAiError(pub Error);

impl From<Error> for OpenAiError {
    fn from(e: Error) -> Self {
        OpenAiError(e)
    }
}

/// The `type` OpenAI gives an error of this status.
fn kind(status: StatusCode) -> &'static str {
    match status {
        StatusCode::UNAUTHORIZED => "authentication_error",
        StatusCode::FORBIDDEN => "permission_error",
        StatusCode::NOT_FOUND => "not_found_error",
        StatusCode::CONFLICT => "conflict_error",
        s if s.is_server_error() => "server_error",
        _ => "invalid_request_error",
    }
}

impl IntoResponse for OpenAiError {
    fn into_response(self) -> Response {
        let status = self.0.status();
        let body = json!({
            "error": {
                "message": self.0.to_string(),
                "type": kind(status),
                "param": null,
                "code": self.0.code(),
            }
        });
        (status, Json(body)).into_response()
    }
}
