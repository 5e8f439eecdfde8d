//! `POST /model/{model_id}/invoke` for Amazon Titan Text Embeddings V2: a deterministic
//! vector for every text (the model-free [`HashedWords`] in the asked dimensions, so that
//! texts sharing words are near), or a scripted [`InvokeReply`].

use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::Response;
use baton_core::recall::embed::HashedWords;
use serde_json::{Value, json};

use super::reply::error_response;

/// The dimensions Titan V2 answers with.
const TITAN_DIMENSIONS: [u64; 3] = [256, 512, 1024];

/// A scripted InvokeModel answer, taken instead of the deterministic embedding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InvokeReply {
    /// 200 with this body, as it is (say, something that is not an embedding).
    Body(String),
    /// An error as Bedrock sends it.
    Error {
        /// HTTP status.
        status: u16,
        /// `x-amzn-errortype`.
        kind: String,
        /// The message.
        message: String,
    },
}

impl InvokeReply {
    /// 429 `ThrottlingException`.
    pub fn throttled() -> Self {
        InvokeReply::Error {
            status: 429,
            kind: "ThrottlingException".to_owned(),
            message: "Too many requests, please wait before trying again.".to_owned(),
        }
    }

    /// 200 with a body that is no embedding.
    pub fn malformed() -> Self {
        InvokeReply::Body(r#"{"embedding": "not a vector"}"#.to_owned())
    }

    pub(super) fn into_response(self) -> Response {
        match self {
            InvokeReply::Body(body) => json_response(body),
            InvokeReply::Error {
                status,
                kind,
                message,
            } => error_response(status, &kind, &message),
        }
    }
}

fn json_response(body: String) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = StatusCode::OK;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
}

/// Titan V2's answer to `body`, or its validation error.
pub(super) fn titan(model_id: &str, body: &Bytes) -> Response {
    if !model_id.contains("titan-embed-text-v2") {
        return error_response(
            400,
            "ValidationException",
            &format!(
                "fake bedrock: InvokeModel answers Titan Text Embeddings V2 only, not {model_id}"
            ),
        );
    }
    let Ok(request) = serde_json::from_slice::<Value>(body) else {
        return error_response(400, "ValidationException", "Malformed input request");
    };
    let Some(text) = request
        .get("inputText")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
    else {
        return error_response(
            400,
            "ValidationException",
            "Malformed input request: inputText",
        );
    };
    let dimensions = request
        .get("dimensions")
        .and_then(Value::as_u64)
        .unwrap_or(1024);
    if !TITAN_DIMENSIONS.contains(&dimensions) {
        return error_response(
            400,
            "ValidationException",
            "Malformed input request: dimensions must be 256, 512 or 1024",
        );
    }
    let embedding = HashedWords::new(usize::try_from(dimensions).unwrap_or(1024)).embed(text);
    let tokens = text.split_whitespace().count();
    json_response(
        json!({ "embedding": embedding.vector, "inputTextTokenCount": tokens }).to_string(),
    )
}
