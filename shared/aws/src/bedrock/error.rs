//! SDK failures as [`ModelError`]s: what the engine can do about them (retry, give up,
//! report a timeout), with the provider's detail kept in the text for the logs.

use aws_sdk_bedrockruntime::config::http::HttpResponse;
use aws_sdk_bedrockruntime::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_bedrockruntime::operation::converse_stream::ConverseStreamError;
use aws_sdk_bedrockruntime::types::error::ConverseStreamOutputError;
use aws_smithy_types::event_stream::RawMessage;
use baton_core::ports::model::ModelError;

/// A failure of the initial request (before any event arrived).
pub(crate) fn from_send(err: SdkError<ConverseStreamError, HttpResponse>) -> ModelError {
    let status = err.raw_response().map(|r| r.status().as_u16());
    let code = err.as_service_error().and_then(|e| {
        use ConverseStreamError as E;
        Some(match e {
            E::ThrottlingException(_) => "ThrottlingException",
            E::ServiceUnavailableException(_) => "ServiceUnavailableException",
            E::InternalServerException(_) => "InternalServerException",
            E::ModelNotReadyException(_) => "ModelNotReadyException",
            E::ModelStreamErrorException(_) => "ModelStreamErrorException",
            E::ModelErrorException(_) => "ModelErrorException",
            E::ModelTimeoutException(_) => "ModelTimeoutException",
            E::ValidationException(_) => "ValidationException",
            E::AccessDeniedException(_) => "AccessDeniedException",
            E::ResourceNotFoundException(_) => "ResourceNotFoundException",
            other => return other.code(),
        })
    });
    classify(&err, code, status)
}

/// A failure while reading the event stream (an exception frame, a cut connection, a
/// frame that does not decode).
pub(crate) fn from_stream(err: SdkError<ConverseStreamOutputError, RawMessage>) -> ModelError {
    // Exception frames carry their kind in a header, not in the error metadata (whose
    // code is empty for them), so the variant names the kind.
    let code = err.as_service_error().and_then(|e| {
        use ConverseStreamOutputError as E;
        Some(match e {
            E::ThrottlingException(_) => "ThrottlingException",
            E::ServiceUnavailableException(_) => "ServiceUnavailableException",
            E::InternalServerException(_) => "InternalServerException",
            E::ModelStreamErrorException(_) => "ModelStreamErrorException",
            E::ValidationException(_) => "ValidationException",
            other => return other.code(),
        })
    });
    classify(&err, code, None)
}

fn classify<E, R>(err: &SdkError<E, R>, code: Option<&str>, status: Option<u16>) -> ModelError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    let detail = || DisplayErrorContext(err).to_string();
    match err {
        // Code and message only: the full context dumps the raw response.
        SdkError::ServiceError(service) => {
            let code_text = code.unwrap_or("error");
            let message = service.err().message().unwrap_or("no message");
            let detail = match status {
                Some(s) => format!("Bedrock {code_text} (HTTP {s}): {message}"),
                None => format!("Bedrock {code_text} in the stream: {message}"),
            };
            by_code(code, status, detail)
        }
        SdkError::TimeoutError(_) => ModelError::Timeout,
        // No HTTP response (connection refused or reset, DNS, TLS): transient.
        SdkError::DispatchFailure(_) => ModelError::Unavailable(detail()),
        // A response that does not decode: a stream cut mid-frame or a garbled frame.
        // Retrying is the only useful move, so it is reported as transient.
        SdkError::ResponseError(_) => ModelError::Unavailable(detail()),
        SdkError::ConstructionFailure(_) => ModelError::Invalid(detail()),
        _ => ModelError::Unavailable(detail()),
    }
}

/// Maps a modeled error code; unknown codes fall back on the HTTP status.
fn by_code(code: Option<&str>, status: Option<u16>, detail: String) -> ModelError {
    match code {
        Some("ThrottlingException" | "TooManyRequestsException") => ModelError::Throttled,
        Some(
            "ServiceUnavailableException"
            | "InternalServerException"
            | "ModelNotReadyException"
            | "ModelStreamErrorException"
            | "ModelErrorException",
        ) => ModelError::Unavailable(detail),
        Some("ModelTimeoutException") => ModelError::Timeout,
        Some("ValidationException" | "AccessDeniedException" | "ResourceNotFoundException") => {
            ModelError::Invalid(detail)
        }
        _ => match status {
            Some(429) => ModelError::Throttled,
            Some(s) if (400..500).contains(&s) => ModelError::Invalid(detail),
            _ => ModelError::Unavailable(detail),
        },
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn codes_map_to_what_the_engine_can_do() {
        let d = || "detail".to_owned();
        assert_eq!(
            by_code(Some("ThrottlingException"), Some(429), d()),
            ModelError::Throttled
        );
        for code in [
            "ServiceUnavailableException",
            "InternalServerException",
            "ModelNotReadyException",
            "ModelStreamErrorException",
        ] {
            assert!(matches!(
                by_code(Some(code), None, d()),
                ModelError::Unavailable(_)
            ));
        }
        assert_eq!(
            by_code(Some("ModelTimeoutException"), Some(408), d()),
            ModelError::Timeout
        );
        for code in [
            "ValidationException",
            "AccessDeniedException",
            "ResourceNotFoundException",
        ] {
            assert!(matches!(
                by_code(Some(code), Some(400), d()),
                ModelError::Invalid(_)
            ));
        }
    }

    #[test]
    fn unknown_codes_fall_back_on_the_status() {
        let d = || "detail".to_owned();
        assert_eq!(by_code(None, Some(429), d()), ModelError::Throttled);
        assert!(matches!(
            by_code(Some("Teapot"), Some(418), d()),
            ModelError::Invalid(_)
        ));
        assert!(matches!(
            by_code(None, Some(503), d()),
            ModelError::Unavailable(_)
        ));
        assert!(matches!(
            by_code(None, None, d()),
            ModelError::Unavailable(_)
        ));
    }

    #[test]
    fn the_provider_detail_is_kept_for_the_logs() {
        let e = by_code(Some("ValidationException"), Some(400), "bad field x".into());
        assert!(e.to_string().contains("bad field x"));
    }
}
