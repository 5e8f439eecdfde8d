//! Turning an HTTP answer into an envelope: bounded reading, the envelope or plain-JSON
//! mapping, and the status rules. Nothing of the body ever goes into an error: the details
//! are for logs, and the runtime shows the user a generic acknowledgement.

use baton_core::ports::connector::{ConnectorError, Envelope, EnvelopeStatus};
use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, HeaderMap};
use serde_json::Value;

use super::config::{JsonResponse, ResponseMode};

/// The final answer of a call (no retry follows) as an envelope.
pub(super) async fn finish(
    response: reqwest::Response,
    mode: &ResponseMode,
    max_body_bytes: u64,
    principal: &str,
) -> Result<Envelope, ConnectorError> {
    let status = response.status();
    let html = is_html(response.headers());
    match mode {
        ResponseMode::Envelope if status.is_success() => {
            if html {
                return Err(ConnectorError::InvalidEnvelope(format!(
                    "HTTP {status} with an HTML page"
                )));
            }
            let body = read_body(response, max_body_bytes).await?;
            parse_envelope(&body).map_err(ConnectorError::InvalidEnvelope)
        }
        ResponseMode::Envelope => {
            // A failure status may still carry an envelope (status `error`, say): then it
            // is the answer. Anything else is only the status.
            if !html
                && let Ok(body) = read_body(response, max_body_bytes).await
                && let Ok(envelope) = parse_envelope(&body)
            {
                return Ok(envelope);
            }
            Err(ConnectorError::Unavailable(format!(
                "it answered HTTP {status}"
            )))
        }
        ResponseMode::Json(_) if !status.is_success() => Err(ConnectorError::Unavailable(format!(
            "it answered HTTP {status}"
        ))),
        ResponseMode::Json(json) => {
            if html {
                return Err(ConnectorError::InvalidEnvelope(format!(
                    "HTTP {status} with an HTML page"
                )));
            }
            let body = read_body(response, max_body_bytes).await?;
            let value: Value = if status == StatusCode::NO_CONTENT && body.is_empty() {
                Value::Null
            } else {
                serde_json::from_slice(&body)
                    .map_err(|e| ConnectorError::InvalidEnvelope(json_problem(&e)))?
            };
            Ok(map_json(json, status, value, principal))
        }
    }
}

/// The body, at most `limit` bytes: a longer one (announced or streamed) is cut off, the
/// connection dropped, and the call unavailable.
async fn read_body(mut response: reqwest::Response, limit: u64) -> Result<Vec<u8>, ConnectorError> {
    let too_big = || ConnectorError::Unavailable(format!("the answer is over {limit} bytes"));
    if response.content_length().is_some_and(|n| n > limit) {
        return Err(too_big());
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| {
        ConnectorError::Unavailable(format!("reading the answer: {}", super::describe(&e)))
    })? {
        if (body.len() + chunk.len()) as u64 > limit {
            return Err(too_big());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

fn is_html(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_ascii_lowercase())
        .is_some_and(|v| v.starts_with("text/html") || v.starts_with("application/xhtml"))
}

/// The body as an envelope, or why it is not one (without quoting the body).
fn parse_envelope(body: &[u8]) -> Result<Envelope, String> {
    serde_json::from_slice::<Envelope>(body).map_err(|e| json_problem(&e))
}

/// A JSON error in words for logs. Serde's "invalid type/value" messages quote the
/// offending value, which may be personal data: only the position is kept for those.
fn json_problem(e: &serde_json::Error) -> String {
    use serde_json::error::Category;
    let at = format!("line {} column {}", e.line(), e.column());
    match e.classify() {
        Category::Data => {
            let text = e.to_string();
            if text.starts_with("missing field") {
                text
            } else {
                format!("a field has the wrong type or value ({at})")
            }
        }
        Category::Syntax | Category::Eof => format!("the answer is not JSON ({at})"),
        Category::Io => "the answer could not be read".to_owned(),
    }
}

/// A plain-JSON answer as an envelope for `principal` (such services assert none): the
/// payload at `result_path`; `error` when that is absent; `partial` for 206 and the
/// configured statuses.
fn map_json(json: &JsonResponse, status: StatusCode, body: Value, principal: &str) -> Envelope {
    let payload = if json.result_path.is_empty() {
        Some(body)
    } else {
        body.pointer(&json.result_path).cloned()
    };
    let (status, payload) = match payload {
        None => (EnvelopeStatus::Error, Value::Null),
        Some(p)
            if status == StatusCode::PARTIAL_CONTENT
                || json.partial_statuses.contains(&status.as_u16()) =>
        {
            (EnvelopeStatus::Partial, p)
        }
        Some(p) => (EnvelopeStatus::Ok, p),
    };
    json.meta.envelope(status, payload, Vec::new(), principal)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::envelope::EnvelopeMeta;

    fn json_mode(path: &str) -> JsonResponse {
        JsonResponse {
            result_path: path.into(),
            meta: EnvelopeMeta {
                domain_type: "items".into(),
                enricher_id: "acme".into(),
                version: "1.0.0".into(),
            },
            partial_statuses: vec![203],
        }
    }

    #[test]
    fn the_status_rule() {
        let body = json!({"data": {"items": [1, 2]}});
        let e = map_json(&json_mode("/data/items"), StatusCode::OK, body.clone(), "u");
        assert_eq!((e.status, &e.payload), (EnvelopeStatus::Ok, &json!([1, 2])));
        assert_eq!(e.principal, "u");
        let e = map_json(
            &json_mode("/data/items"),
            StatusCode::PARTIAL_CONTENT,
            body.clone(),
            "u",
        );
        assert_eq!(e.status, EnvelopeStatus::Partial);
        let e = map_json(
            &json_mode("/data/items"),
            StatusCode::NON_AUTHORITATIVE_INFORMATION,
            body.clone(),
            "u",
        );
        assert_eq!(e.status, EnvelopeStatus::Partial);
        let e = map_json(
            &json_mode("/data/missing"),
            StatusCode::OK,
            body.clone(),
            "u",
        );
        assert_eq!((e.status, e.payload), (EnvelopeStatus::Error, Value::Null));
        let e = map_json(&json_mode(""), StatusCode::OK, body.clone(), "u");
        assert_eq!(e.payload, body);
    }

    #[test]
    fn json_problems_do_not_quote_values() {
        let e = serde_json::from_str::<Envelope>(
            r#"{"status": "secret-ish", "principal": "p", "version": "1", "domain_type": "d", "enricher_id": "e"}"#,
        )
        .unwrap_err();
        assert!(
            !json_problem(&e).contains("secret-ish"),
            "{}",
            json_problem(&e)
        );
        let e = serde_json::from_str::<Envelope>(r#"{"status": "ok"}"#).unwrap_err();
        assert!(
            json_problem(&e).contains("missing field"),
            "{}",
            json_problem(&e)
        );
        let e = serde_json::from_str::<Envelope>("<html>").unwrap_err();
        assert!(
            json_problem(&e).contains("not JSON"),
            "{}",
            json_problem(&e)
        );
    }
}
