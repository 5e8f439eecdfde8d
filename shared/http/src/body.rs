//! The body of `POST /v1/turns`, and how a request's bytes become one.
//!
//! The bytes are checked in steps (content type, JSON syntax, an object, known fields,
//! field types) so that each refusal says in plain words what is wrong and names the field,
//! without serde's internals.

use axum::http::HeaderMap;
use axum::http::header::CONTENT_TYPE;
use baton_core::directive::DirectMode;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::Error;

/// What a client sends to start a turn. The principal is deliberately absent: it comes from
/// the auth context (D-30); a `principal` field in the body is ignored (and logged), so the
/// auth context always wins.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnBody {
    /// The user's message.
    pub message: String,
    /// Episode to continue; absent starts a new one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub episode_id: Option<String>,
    /// Idempotency key chosen by the client (D-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// Locale, e.g. `en-US`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locale: Option<String>,
    /// Coarse location.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// `strict` or `additive`: how a Direct Line answer is delivered this turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direct_line_mode: Option<DirectMode>,
    /// Specialists this turn must consult, by id.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub must_consult: Vec<String>,
    /// Pictures sent with the message (D-42).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pictures: Vec<PictureBody>,
}

/// A picture in a turn body: its bytes in base64, and the type the client says it is
/// (checked against the bytes, which decide).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PictureBody {
    /// `image/jpeg`, `image/png`, `image/webp` or `image/gif`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// The picture, base64 (standard alphabet, padding optional).
    pub data: String,
}

impl TurnBody {
    /// The pictures' bytes, decoded.
    ///
    /// # Errors
    /// A picture that is not base64, or whose declared type its bytes contradict.
    pub(crate) fn picture_bytes(&self) -> Result<Vec<baton_core::picture::Bytes>, Error> {
        self.pictures
            .iter()
            .enumerate()
            .map(|(i, p)| crate::picture::decode(i + 1, &p.data, p.media_type.as_deref()))
            .collect()
    }
}

const REQUIRED: &[&str] = &["message"];
/// A field some clients send and that is never trusted (D-30).
const BODY_PRINCIPAL: &str = "principal";
const OPTIONAL: &[&str] = &["episode_id", "turn_id", "locale", "location"];
const DIRECT_LINE_MODE: &str = "direct_line_mode";
const MUST_CONSULT: &str = "must_consult";
const PICTURES: &str = "pictures";

/// Parses a turn body.
#[cfg(test)]
fn parse(headers: &HeaderMap, bytes: &[u8]) -> Result<TurnBody, Error> {
    if !is_json(headers) {
        return Err(Error::ContentType);
    }
    parse_json(bytes)
}

/// Parses a turn body whose content type was checked.
pub(crate) fn parse_json(bytes: &[u8]) -> Result<TurnBody, Error> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| {
        tracing::debug!(error = %e, "turn body is not JSON");
        Error::MalformedJson
    })?;
    let Value::Object(fields) = value else {
        return Err(Error::InvalidBody(
            "the request body must be a JSON object with a \"message\" field".to_owned(),
        ));
    };
    let mut fields = fields;
    if let Some(claimed) = fields.remove(BODY_PRINCIPAL) {
        // Never used: a client cannot choose who it is. Logged, because a mismatch with the
        // authenticated caller is worth a look.
        tracing::warn!(body_principal = %claimed, "the request body names a principal; ignored, the auth context wins");
    }
    check_fields(&fields)?;
    serde_json::from_value(Value::Object(fields)).map_err(|e| {
        // Unreachable after the checks above; kept as a refusal rather than a panic.
        tracing::warn!(error = %e, "turn body passed the checks but did not deserialize");
        Error::InvalidBody("the request body does not have the expected fields".to_owned())
    })
}

fn check_fields(fields: &Map<String, Value>) -> Result<(), Error> {
    for name in fields.keys() {
        let known = REQUIRED.contains(&name.as_str())
            || OPTIONAL.contains(&name.as_str())
            || name == DIRECT_LINE_MODE
            || name == MUST_CONSULT
            || name == PICTURES;
        if !known {
            return Err(Error::InvalidBody(format!(
                "unknown field {name:?}; the fields are message, episode_id, turn_id, locale, \
                 location, direct_line_mode, must_consult and pictures"
            )));
        }
    }
    for name in REQUIRED {
        match fields.get(*name) {
            Some(Value::String(_)) => {}
            Some(_) => return Err(Error::InvalidBody(format!("{name:?} must be a string"))),
            None => return Err(Error::InvalidBody(format!("the {name:?} field is missing"))),
        }
    }
    for name in OPTIONAL {
        match fields.get(*name) {
            None | Some(Value::String(_) | Value::Null) => {}
            Some(_) => return Err(Error::InvalidBody(format!("{name:?} must be a string"))),
        }
    }
    match fields.get(DIRECT_LINE_MODE) {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if s == "strict" || s == "additive" => {}
        Some(_) => {
            return Err(Error::InvalidBody(format!(
                "{DIRECT_LINE_MODE:?} must be \"strict\" or \"additive\""
            )));
        }
    }
    match fields.get(MUST_CONSULT) {
        None => {}
        Some(Value::Array(ids)) if ids.iter().all(Value::is_string) => {}
        Some(_) => {
            return Err(Error::InvalidBody(format!(
                "{MUST_CONSULT:?} must be a list of specialist ids"
            )));
        }
    }
    match fields.get(PICTURES) {
        None => {}
        Some(Value::Array(pictures)) if pictures.iter().all(is_picture) => {}
        Some(_) => {
            return Err(Error::InvalidBody(format!(
                "{PICTURES:?} must be a list of pictures, each {{\"media_type\": \"image/jpeg\", \"data\": \"<base64>\"}}"
            )));
        }
    }
    Ok(())
}

/// `{"data": "...", "media_type": "..."}`, the type optional, nothing else.
fn is_picture(value: &Value) -> bool {
    let Value::Object(fields) = value else {
        return false;
    };
    fields.get("data").is_some_and(Value::is_string)
        && fields
            .get("media_type")
            .is_none_or(|t| t.is_string() || t.is_null())
        && fields.keys().all(|k| k == "data" || k == "media_type")
}

/// `application/json` or `application/<something>+json`, parameters ignored.
pub(crate) fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let essence = value
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn json_headers() -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        h
    }

    fn message(err: Error) -> String {
        err.to_string()
    }

    #[test]
    fn a_full_body_parses() {
        let body = parse(
            &json_headers(),
            br#"{"message":"hi","episode_id":"ep1","turn_id":"t1","locale":"en-US","location":null}"#,
        )
        .unwrap();
        assert_eq!(body.message, "hi");
        assert_eq!(body.episode_id.as_deref(), Some("ep1"));
        assert_eq!(body.location, None);
    }

    #[test]
    fn charset_parameter_and_suffix_types_are_json() {
        for ct in [
            "application/json; charset=utf-8",
            "application/vnd.baton+json",
        ] {
            let mut h = HeaderMap::new();
            h.insert(CONTENT_TYPE, HeaderValue::from_static(ct));
            assert!(parse(&h, br#"{"message":"hi"}"#).is_ok(), "{ct}");
        }
    }

    #[test]
    fn text_plain_is_refused() {
        let mut h = HeaderMap::new();
        h.insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        assert_eq!(parse(&h, br#"{"message":"hi"}"#), Err(Error::ContentType));
    }

    #[test]
    fn a_principal_in_the_body_is_dropped() {
        let body = parse(&json_headers(), br#"{"message":"hi","principal":"bob"}"#).unwrap();
        assert_eq!(
            body,
            TurnBody {
                message: "hi".into(),
                ..TurnBody::default()
            }
        );
    }

    #[test]
    fn an_unknown_field_is_named() {
        let err = parse(&json_headers(), br#"{"message":"hi","mesage":"x"}"#).unwrap_err();
        assert!(message(err).starts_with("unknown field \"mesage\""));
    }

    #[test]
    fn a_wrong_type_names_the_field() {
        let err = parse(&json_headers(), br#"{"message":3}"#).unwrap_err();
        assert_eq!(message(err), "\"message\" must be a string");
        let err = parse(&json_headers(), br#"{"message":"hi","locale":["x"]}"#).unwrap_err();
        assert_eq!(message(err), "\"locale\" must be a string");
    }

    #[test]
    fn pictures_parse_and_bad_ones_are_named() {
        let body = parse(
            &json_headers(),
            br#"{"message":"","pictures":[{"media_type":"image/png","data":"iVBORw0KGgo="},{"data":"iVBORw0KGgo"}]}"#,
        )
        .unwrap();
        assert_eq!(body.pictures.len(), 2);
        let bytes = body.picture_bytes().unwrap();
        assert_eq!(&bytes[0][..4], b"\x89PNG");
        assert_eq!(bytes[0], bytes[1]);
        for bad in [
            r#"{"message":"","pictures":"iVBORw0KGgo="}"#,
            r#"{"message":"","pictures":[{"data":1}]}"#,
            r#"{"message":"","pictures":[{"data":"x","url":"https://a"}]}"#,
        ] {
            let err = parse(&json_headers(), bad.as_bytes()).unwrap_err();
            assert!(
                message(err).starts_with("\"pictures\" must be a list of pictures"),
                "{bad}"
            );
        }
        let lying = parse(
            &json_headers(),
            br#"{"message":"","pictures":[{"media_type":"image/jpeg","data":"iVBORw0KGgo="}]}"#,
        )
        .unwrap();
        assert_eq!(
            message(lying.picture_bytes().unwrap_err()),
            "Picture 1 was not taken: it is declared as image/jpeg but its bytes are image/png."
        );
    }

    #[test]
    fn trust_fields_parse_and_bad_ones_are_named() {
        let body = parse(
            &json_headers(),
            br#"{"message":"hi","direct_line_mode":"additive","must_consult":["support"]}"#,
        )
        .unwrap();
        assert_eq!(body.direct_line_mode, Some(DirectMode::Additive));
        assert_eq!(body.must_consult, vec!["support".to_owned()]);
        let err = parse(
            &json_headers(),
            br#"{"message":"hi","direct_line_mode":"loud"}"#,
        )
        .unwrap_err();
        assert_eq!(
            message(err),
            "\"direct_line_mode\" must be \"strict\" or \"additive\""
        );
        let err = parse(
            &json_headers(),
            br#"{"message":"hi","must_consult":"support"}"#,
        )
        .unwrap_err();
        assert_eq!(
            message(err),
            "\"must_consult\" must be a list of specialist ids"
        );
    }

    #[test]
    fn a_missing_message_is_named() {
        let err = parse(&json_headers(), br#"{"locale":"en"}"#).unwrap_err();
        assert_eq!(message(err), "the \"message\" field is missing");
    }

    #[test]
    fn broken_json_is_malformed() {
        assert_eq!(
            parse(&json_headers(), br#"{"message": "#),
            Err(Error::MalformedJson)
        );
    }

    #[test]
    fn an_array_is_not_a_body() {
        assert!(matches!(
            parse(&json_headers(), b"[]"),
            Err(Error::InvalidBody(_))
        ));
    }
}
