//! The one error type of the HTTP edge: each variant knows its status and a body that is
//! safe to show (`{"error": {"code", "message", "type", "param"}}`: OpenAI's error shape,
//! so that an OpenAI client reads a refusal at any address, 404 and 405 included).

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use baton_runtime::{RejectionKind, TurnRejection};
use serde_json::json;

/// Why a request has no usable principal. `Missing` and `Invalid` become 401; `NoIdentity`
/// becomes 403; `Ambiguous` 400.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// The request carries no principal and there is no default.
    #[error("this request is not authenticated: it names no principal")]
    Missing,
    /// The request names a principal that is not a valid id.
    #[error("the request's principal is not valid: {0}")]
    Invalid(String),
    /// The request reached the service without an authenticated identity in its auth
    /// context (on AWS: no IAM caller and no authorizer claims). Asking again with the
    /// same credentials will not help, hence 403 rather than 401.
    #[error("this request carries no authenticated identity, so it cannot be served")]
    NoIdentity,
    /// The request names more than one principal: none of them is taken, since which one
    /// a proxy or client meant cannot be known.
    #[error("the request names more than one principal; send exactly one")]
    Ambiguous,
}

/// A `Result` whose error is this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// Why a request was refused. Every message is plain language; the detail, if any, was
/// logged where it happened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// No usable principal (401; 403 for [`AuthError::NoIdentity`]).
    #[error("{0}")]
    Unauthorized(AuthError),
    /// The body is not declared as JSON (400).
    #[error("the request body must be JSON, sent with content-type: application/json")]
    ContentType,
    /// The body is not valid JSON (400).
    #[error("the request body is not valid JSON")]
    MalformedJson,
    /// The JSON does not have the expected shape; the message names the field (400).
    #[error("{0}")]
    InvalidBody(String),
    /// The body could not be read (400).
    #[error("the request body could not be read")]
    UnreadableBody,
    /// The body did not arrive within the body timeout (408).
    #[error("the request body did not arrive in time")]
    BodyTimeout,
    /// The body is over the configured limit (413).
    #[error("the request body is larger than the limit of {limit} bytes")]
    BodyTooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// The runtime refused the turn or the lookup.
    #[error("{0}")]
    Rejected(TurnRejection),
    /// No route matches the path (404).
    #[error("there is nothing at this address")]
    NoRoute,
    /// The path exists but not for this method (405).
    #[error("this address does not accept that method")]
    MethodNotAllowed,
    /// The request names a host this server does not answer (403): DNS rebinding.
    #[error("this server does not answer requests for that host")]
    ForeignHost,
    /// The request comes from a page of a site this server does not serve (403).
    #[error("this server does not answer requests from pages of other sites")]
    ForeignOrigin,
}

impl Error {
    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        match self {
            Error::Unauthorized(AuthError::NoIdentity) => StatusCode::FORBIDDEN,
            Error::Unauthorized(AuthError::Ambiguous) => StatusCode::BAD_REQUEST,
            Error::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            Error::ContentType
            | Error::MalformedJson
            | Error::InvalidBody(_)
            | Error::UnreadableBody => StatusCode::BAD_REQUEST,
            Error::BodyTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Error::BodyTimeout => StatusCode::REQUEST_TIMEOUT,
            Error::NoRoute => StatusCode::NOT_FOUND,
            Error::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Error::ForeignHost | Error::ForeignOrigin => StatusCode::FORBIDDEN,
            Error::Rejected(r) => match r.kind {
                RejectionKind::Invalid => StatusCode::BAD_REQUEST,
                RejectionKind::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
                RejectionKind::NotFound => StatusCode::NOT_FOUND,
                RejectionKind::InFlight | RejectionKind::Busy => StatusCode::CONFLICT,
                RejectionKind::Mismatch => StatusCode::UNPROCESSABLE_ENTITY,
                RejectionKind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            },
        }
    }

    /// A stable, machine-readable code for the `error.code` field.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Unauthorized(AuthError::NoIdentity) => "forbidden",
            Error::Unauthorized(AuthError::Ambiguous) => "ambiguous_principal",
            Error::Unauthorized(_) => "unauthorized",
            Error::ContentType => "unsupported_content_type",
            Error::MalformedJson => "malformed_json",
            Error::InvalidBody(_) => "invalid_body",
            Error::UnreadableBody => "unreadable_body",
            Error::BodyTooLarge { .. } => "body_too_large",
            Error::BodyTimeout => "body_timeout",
            Error::NoRoute => "no_route",
            Error::MethodNotAllowed => "method_not_allowed",
            Error::ForeignHost => "forbidden_host",
            Error::ForeignOrigin => "forbidden_origin",
            Error::Rejected(r) => match r.kind {
                RejectionKind::Invalid => "invalid_request",
                RejectionKind::TooLarge => "message_too_large",
                RejectionKind::NotFound => "not_found",
                RejectionKind::InFlight => "turn_in_flight",
                RejectionKind::Mismatch => "turn_id_reused",
                RejectionKind::Busy => "episode_busy",
                RejectionKind::Unavailable => "unavailable",
            },
        }
    }
}

impl From<TurnRejection> for Error {
    fn from(r: TurnRejection) -> Self {
        Error::Rejected(r)
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

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let status = self.status();
        let body = json!({
            "error": {
                "code": self.code(),
                "message": self.to_string(),
                "type": kind(status),
                "param": null,
            }
        });
        (status, Json(body)).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rejected(kind: RejectionKind) -> Error {
        Error::Rejected(TurnRejection {
            kind,
            message: "plain words".into(),
        })
    }

    #[test]
    fn each_rejection_kind_has_its_status() {
        let cases = [
            (RejectionKind::Invalid, 400),
            (RejectionKind::TooLarge, 413),
            (RejectionKind::NotFound, 404),
            (RejectionKind::InFlight, 409),
            (RejectionKind::Busy, 409),
            (RejectionKind::Mismatch, 422),
            (RejectionKind::Unavailable, 503),
        ];
        for (kind, status) in cases {
            assert_eq!(rejected(kind).status().as_u16(), status, "{kind:?}");
        }
    }

    #[test]
    fn no_identity_is_forbidden_and_other_auth_failures_unauthorized() {
        let forbidden = Error::Unauthorized(AuthError::NoIdentity);
        assert_eq!(forbidden.status(), StatusCode::FORBIDDEN);
        assert_eq!(forbidden.code(), "forbidden");
        assert_eq!(
            Error::Unauthorized(AuthError::Missing).status(),
            StatusCode::UNAUTHORIZED
        );
    }

    #[test]
    fn a_rejection_shows_the_runtime_message_as_is() {
        assert_eq!(rejected(RejectionKind::Busy).to_string(), "plain words");
    }
}
