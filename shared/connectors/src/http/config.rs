//! The `connector:` settings of an `http` tool, checked and turned into typed values.

use std::path::PathBuf;
use std::time::Duration;

use reqwest::header::HeaderName;
use serde::Deserialize;
use serde_json::Value;

use super::HttpConnector;
use super::template::UrlTemplate;
use crate::envelope::EnvelopeMeta;
use crate::oauth::UserSpec;
use crate::secrets::{HeaderSpec, parse_headers};

/// How long connecting may take by default.
const DEFAULT_CONNECT_TIMEOUT_MS: u64 = 2_000;
/// The time budget of one call by default: the runtime's default tool timeout.
const DEFAULT_DEADLINE_MS: u64 = 30_000;
/// The largest answer read by default.
const DEFAULT_MAX_BODY_BYTES: u64 = 1024 * 1024;
/// No setting may let one answer take more memory than this.
const MAX_MAX_BODY_BYTES: u64 = 64 * 1024 * 1024;
/// More attempts than this hammer a failing service.
const MAX_ATTEMPTS: u32 = 10;
const DEFAULT_BACKOFF_MS: u64 = 100;
const MAX_BACKOFF_MS: u64 = 60_000;
/// Headers the connector sets itself (or the transport does).
const RESERVED_HEADERS: [&str; 5] = [
    super::PRINCIPAL_HEADER,
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
];

/// The settings as written. Unknown keys are refused with the list of known ones.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    #[serde(default)]
    kind: Option<String>,
    url: String,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    headers: serde_json::Map<String, Value>,
    #[serde(default)]
    connect_timeout_ms: Option<u64>,
    #[serde(default)]
    deadline_ms: Option<u64>,
    #[serde(default)]
    retry: Option<RawRetry>,
    #[serde(default)]
    idempotent: Option<bool>,
    #[serde(default)]
    response: Option<Value>,
    #[serde(default)]
    max_body_bytes: Option<u64>,
    #[serde(default)]
    ca_file: Option<String>,
    #[serde(default)]
    oauth: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRetry {
    #[serde(default)]
    attempts: Option<u32>,
    #[serde(default)]
    backoff_ms: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawJson {
    #[serde(default)]
    result_path: Option<String>,
    domain_type: String,
    enricher_id: String,
    version: String,
    #[serde(default)]
    partial_statuses: Vec<u16>,
}

/// The HTTP methods a tool may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Method {
    Get,
    Post,
    Put,
    Patch,
    Delete,
}

impl Method {
    fn parse(text: &str) -> Result<Self, String> {
        match text.to_ascii_uppercase().as_str() {
            "GET" => Ok(Method::Get),
            "POST" => Ok(Method::Post),
            "PUT" => Ok(Method::Put),
            "PATCH" => Ok(Method::Patch),
            "DELETE" => Ok(Method::Delete),
            _ => Err(format!(
                "method {text:?} is not one of GET, POST, PUT, PATCH, DELETE"
            )),
        }
    }

    pub(super) fn as_reqwest(self) -> reqwest::Method {
        match self {
            Method::Get => reqwest::Method::GET,
            Method::Post => reqwest::Method::POST,
            Method::Put => reqwest::Method::PUT,
            Method::Patch => reqwest::Method::PATCH,
            Method::Delete => reqwest::Method::DELETE,
        }
    }

    /// POST, PUT and PATCH send the request envelope; GET and DELETE a query string.
    pub(super) fn has_body(self) -> bool {
        matches!(self, Method::Post | Method::Put | Method::Patch)
    }

    /// Whether repeating the call is harmless by the method's definition (RFC 9110).
    fn idempotent(self) -> bool {
        matches!(self, Method::Get | Method::Put | Method::Delete)
    }
}

/// What makes one reqwest client differ from another; tools with equal settings share one.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct ClientSettings {
    pub(super) connect_timeout: Duration,
    /// PEM file of the CAs trusted instead of the system's roots.
    pub(super) ca_file: Option<PathBuf>,
}

/// When a failed attempt is repeated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct RetryPolicy {
    /// Attempts in all (1: no retry).
    pub(super) attempts: u32,
    /// Base of the exponential backoff.
    pub(super) backoff: Duration,
    /// Whether the call may be repeated at all.
    pub(super) idempotent: bool,
}

/// How the answer becomes an envelope.
#[derive(Debug, Clone)]
pub(super) enum ResponseMode {
    /// The body is an envelope, returned as the upstream gave it.
    Envelope,
    /// The body is plain JSON; the connector builds the envelope.
    Json(JsonResponse),
}

/// The `response: {json: ...}` settings.
#[derive(Debug, Clone)]
pub(super) struct JsonResponse {
    /// JSON Pointer of the payload in the body; empty: the whole body.
    pub(super) result_path: String,
    pub(super) meta: EnvelopeMeta,
    /// 2xx statuses (besides 206) whose payload is partial.
    pub(super) partial_statuses: Vec<u16>,
}

/// One `http` tool's checked settings.
#[derive(Debug, Clone)]
pub(super) struct HttpConfig {
    pub(super) url: UrlTemplate,
    pub(super) method: Method,
    pub(super) headers: Vec<(HeaderName, HeaderSpec)>,
    pub(super) client: ClientSettings,
    /// Time budget of one call, every attempt and wait included.
    pub(super) deadline: Duration,
    pub(super) retry: RetryPolicy,
    pub(super) response: ResponseMode,
    pub(super) max_body_bytes: u64,
    /// The user's own sign-in, when the API acts for the user (D-37).
    pub(super) oauth: Option<UserAuth>,
}

impl HttpConfig {
    /// Checks the settings; the error says what to fix.
    pub(super) fn parse(config: &Value) -> Result<Self, String> {
        let raw: Raw = serde_json::from_value(config.clone())
            .map_err(|e| format!("http connector settings: {e}"))?;
        if let Some(kind) = raw.kind.as_deref()
            && kind != HttpConnector::KIND
        {
            return Err(format!(
                "kind {kind:?} given to the {} connector",
                HttpConnector::KIND
            ));
        }
        let url = UrlTemplate::parse(&raw.url)?;
        let method = raw
            .method
            .as_deref()
            .map_or(Ok(Method::Get), Method::parse)?;
        let headers = parse_headers(&raw.headers, &RESERVED_HEADERS)?;
        let connect_timeout = positive_ms(
            "connect_timeout_ms",
            raw.connect_timeout_ms,
            DEFAULT_CONNECT_TIMEOUT_MS,
        )?;
        let deadline = positive_ms("deadline_ms", raw.deadline_ms, DEFAULT_DEADLINE_MS)?;
        let retry = retry(raw.retry.as_ref(), raw.idempotent, method)?;
        let response = response(raw.response.as_ref())?;
        let max_body_bytes = raw.max_body_bytes.unwrap_or(DEFAULT_MAX_BODY_BYTES);
        if max_body_bytes == 0 || max_body_bytes > MAX_MAX_BODY_BYTES {
            return Err(format!(
                "max_body_bytes = {max_body_bytes}: must be between 1 and {MAX_MAX_BODY_BYTES}"
            ));
        }
        let ca_file = match raw.ca_file {
            Some(path) if path.trim().is_empty() => {
                return Err("ca_file is empty; name a PEM file of CA certificates".to_owned());
            }
            Some(path) => Some(PathBuf::from(path)),
            None => None,
        };
        if ca_file.is_some() && !raw.url.starts_with("https://") {
            return Err("ca_file is for https:// URLs only".to_owned());
        }
        let oauth = match &raw.oauth {
            None => None,
            Some(value) => Some(user_auth(value, &raw.url)?),
        };
        Ok(HttpConfig {
            url,
            method,
            headers,
            client: ClientSettings {
                connect_timeout,
                ca_file,
            },
            deadline,
            retry,
            response,
            max_body_bytes,
            oauth,
        })
    }
}

/// The API acts with the user's own sign-in (D-37): the `oauth:` block of an `http` tool,
/// and the protected resource it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct UserAuth {
    pub(super) spec: UserSpec,
    /// The protected resource: `oauth.resource`, else the URL up to its first placeholder
    /// or query (the link's key: tools naming the same resource share one link).
    pub(super) resource: reqwest::Url,
}

fn user_auth(value: &Value, url: &str) -> Result<UserAuth, String> {
    let mut block = value.clone();
    let resource = match block.as_object_mut().and_then(|m| m.remove("resource")) {
        None => None,
        Some(Value::String(r)) => Some(r),
        Some(_) => return Err("oauth.resource: an http(s) URL".to_owned()),
    };
    match block.get("grant").and_then(Value::as_str) {
        Some("authorization_code") => {}
        _ => {
            return Err(
                "oauth.grant: an http tool takes the user's own sign-in only (grant: authorization_code)"
                    .to_owned(),
            );
        }
    }
    let spec = UserSpec::parse("oauth", &block)?;
    let fixed = resource.unwrap_or_else(|| url.split(['{', '?']).next().unwrap_or(url).to_owned());
    let resource = reqwest::Url::parse(&fixed)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .ok_or_else(|| format!("oauth.resource: {fixed:?} is not an http(s) URL"))?;
    Ok(UserAuth { spec, resource })
}

fn positive_ms(key: &str, value: Option<u64>, default: u64) -> Result<Duration, String> {
    match value {
        None => Ok(Duration::from_millis(default)),
        Some(0) => Err(format!("{key} = 0: must be a positive number")),
        Some(ms) => Ok(Duration::from_millis(ms)),
    }
}

fn retry(
    raw: Option<&RawRetry>,
    idempotent: Option<bool>,
    method: Method,
) -> Result<RetryPolicy, String> {
    let attempts = raw.and_then(|r| r.attempts).unwrap_or(1);
    if !(1..=MAX_ATTEMPTS).contains(&attempts) {
        return Err(format!(
            "retry.attempts = {attempts}: must be between 1 (no retry) and {MAX_ATTEMPTS}"
        ));
    }
    let backoff_ms = raw.and_then(|r| r.backoff_ms).unwrap_or(DEFAULT_BACKOFF_MS);
    if backoff_ms > MAX_BACKOFF_MS {
        return Err(format!(
            "retry.backoff_ms = {backoff_ms}: must be at most {MAX_BACKOFF_MS}"
        ));
    }
    Ok(RetryPolicy {
        attempts,
        backoff: Duration::from_millis(backoff_ms),
        idempotent: idempotent.unwrap_or(method.idempotent()),
    })
}

fn response(raw: Option<&Value>) -> Result<ResponseMode, String> {
    const SHAPES: &str = "response is `envelope` (the default) or {json: {result_path, domain_type, enricher_id, version, partial_statuses}}";
    let Some(raw) = raw else {
        return Ok(ResponseMode::Envelope);
    };
    match raw {
        Value::String(s) if s == "envelope" => Ok(ResponseMode::Envelope),
        Value::Object(map) if map.len() == 1 && map.contains_key("json") => {
            let json: RawJson = serde_json::from_value(map["json"].clone())
                .map_err(|e| format!("response.json: {e}"))?;
            let result_path = json.result_path.unwrap_or_default();
            if !result_path.is_empty() && !result_path.starts_with('/') {
                return Err(format!(
                    "response.json.result_path {result_path:?} is not a JSON Pointer (it starts with '/', e.g. /data/items)"
                ));
            }
            if let Some(bad) = json
                .partial_statuses
                .iter()
                .find(|s| !(200..=299).contains(*s))
            {
                return Err(format!(
                    "response.json.partial_statuses: {bad} is not a 2xx status"
                ));
            }
            let meta = EnvelopeMeta {
                domain_type: json.domain_type,
                enricher_id: json.enricher_id,
                version: json.version,
            };
            meta.check().map_err(|e| format!("response.json: {e}"))?;
            Ok(ResponseMode::Json(JsonResponse {
                result_path,
                meta,
                partial_statuses: json.partial_statuses,
            }))
        }
        _ => Err(SHAPES.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_users_own_sign_in_names_its_resource() {
        let parse = |oauth: Value| {
            HttpConfig::parse(&json!({"url": "http://h:8/api/miles/{member}?x=1", "oauth": oauth}))
        };
        let redirect = "http://127.0.0.1:8787/v1/links/callback";
        let c = parse(json!({"grant": "authorization_code", "redirect_uri": redirect})).unwrap();
        let auth = c.oauth.unwrap();
        assert_eq!(auth.resource.as_str(), "http://h:8/api/miles/");
        assert_eq!(auth.spec.redirect_uri, redirect);
        let c = parse(json!({"grant": "authorization_code", "redirect_uri": redirect, "resource": "http://h:8/api"}))
            .unwrap();
        assert_eq!(c.oauth.unwrap().resource.as_str(), "http://h:8/api");
        for (bad, says) in [
            (
                json!({"grant": "client_credentials", "client_id": "x"}),
                "authorization_code",
            ),
            (json!({"grant": "authorization_code"}), "redirect_uri"),
            (
                json!({"grant": "authorization_code", "redirect_uri": redirect, "resource": "ftp://h"}),
                "oauth.resource",
            ),
            (
                json!({"grant": "authorization_code", "redirect_uri": redirect, "resource": 7}),
                "oauth.resource",
            ),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(says), "{says}: {e}");
        }
        assert!(
            HttpConfig::parse(&json!({"url": "http://h/x"}))
                .unwrap()
                .oauth
                .is_none()
        );
    }

    #[test]
    fn defaults() {
        let c = HttpConfig::parse(&json!({"kind": "http", "url": "http://h/x"})).unwrap();
        assert_eq!(c.method, Method::Get);
        assert_eq!(c.client.connect_timeout, Duration::from_millis(2_000));
        assert_eq!(c.deadline, Duration::from_millis(30_000));
        assert_eq!(c.max_body_bytes, 1024 * 1024);
        assert_eq!(
            c.retry,
            RetryPolicy {
                attempts: 1,
                backoff: Duration::from_millis(100),
                idempotent: true
            }
        );
        assert!(matches!(c.response, ResponseMode::Envelope));
    }

    #[test]
    fn post_is_not_idempotent_unless_said() {
        let c = HttpConfig::parse(&json!({"url": "http://h/x", "method": "post"})).unwrap();
        assert_eq!(c.method, Method::Post);
        assert!(!c.retry.idempotent);
        let c =
            HttpConfig::parse(&json!({"url": "http://h/x", "method": "POST", "idempotent": true}))
                .unwrap();
        assert!(c.retry.idempotent);
    }
}
