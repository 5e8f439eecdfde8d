//! One token request and its answer, shared by both grants: the client's authentication
//! at the token endpoint, the error or the Bearer token the server sends back (never
//! holding a secret in a message), and a token with its expiry.

use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use futures::StreamExt;
use reqwest::Url;
use serde::Deserialize;

use super::AuthFault;
use super::discovery::shown;
use crate::error::{chain, clip};
use crate::secrets::Secret;

/// The largest metadata document or token response read.
const MAX_DOCUMENT_BYTES: usize = 64 * 1024;
/// A token this close to its expiry is renewed before use rather than sent.
const EXPIRY_MARGIN: Duration = Duration::from_secs(30);

/// A token and when it stops being good.
pub(super) struct Token {
    pub(super) value: Secret,
    pub(super) expires: Option<Instant>,
}

impl Token {
    /// A token just issued, good for `expires_in` seconds when the server said (at most a
    /// year: a longer promise is not believed).
    pub(super) fn issued(value: String, expires_in: Option<u64>) -> Self {
        Token {
            value: Secret::new(value),
            expires: expires_in
                .map(|secs| Instant::now() + Duration::from_secs(secs.min(365 * 24 * 3600))),
        }
    }

    pub(super) fn fresh(&self) -> bool {
        self.expires
            .is_none_or(|at| Instant::now() + EXPIRY_MARGIN < at)
    }
}

#[derive(Deserialize)]
pub(super) struct TokenResponse {
    pub(super) access_token: String,
    #[serde(default)]
    pub(super) token_type: Option<String>,
    #[serde(default)]
    pub(super) expires_in: Option<u64>,
    #[serde(default)]
    pub(super) refresh_token: Option<String>,
}

/// A token request to `endpoint` with `form`, authenticated with HTTP Basic as `basic`
/// when given; `shown_secret` is redacted from any message.
pub(super) async fn post_token(
    http: &reqwest::Client,
    endpoint: &str,
    form: &[(&str, String)],
    basic: Option<(&str, &Secret)>,
    shown_secret: Option<&Secret>,
) -> Result<TokenResponse, AuthFault> {
    let mut request = http.post(endpoint);
    if let Some((id, secret)) = basic {
        request = request.header(reqwest::header::AUTHORIZATION, basic_header(id, secret)?);
    }
    send_token(request, endpoint, form, shown_secret).await
}

/// HTTP Basic for a client (RFC 6749 §2.3.1: both parts form-encoded first).
pub(super) fn basic_header(
    id: &str,
    secret: &Secret,
) -> Result<reqwest::header::HeaderValue, AuthFault> {
    let pair = format!("{}:{}", form_encode(id), form_encode(secret.expose()));
    let mut value =
        reqwest::header::HeaderValue::from_str(&format!("Basic {}", STANDARD.encode(pair)))
            .map_err(|_| AuthFault::Credentials("the client secret cannot be sent".to_owned()))?;
    value.set_sensitive(true);
    Ok(value)
}

/// Sends a token request and reads the answer: an error the server gave, or a usable
/// Bearer token.
pub(super) async fn send_token(
    request: reqwest::RequestBuilder,
    endpoint: &str,
    form: &[(&str, String)],
    shown_secret: Option<&Secret>,
) -> Result<TokenResponse, AuthFault> {
    let endpoint_shown = Url::parse(endpoint).map_or_else(|_| endpoint.to_owned(), |u| shown(&u));
    let response = request
        .header(reqwest::header::ACCEPT, "application/json")
        .form(form)
        .send()
        .await
        .map_err(|e| AuthFault::Unreachable(format!("{endpoint_shown}: {}", chain(&e))))?;
    let status = response.status();
    let redact = |text: String| match shown_secret {
        Some(secret) if !secret.expose().is_empty() => text.replace(secret.expose(), "<redacted>"),
        _ => text,
    };
    if !status.is_success() {
        let body: Result<TokenError, _> = read_json(response).await;
        let why = match body {
            Ok(TokenError {
                error,
                error_description: Some(description),
            }) => format!("{error} ({description})"),
            Ok(TokenError { error, .. }) => error,
            Err(_) => format!("HTTP {}", status.as_u16()),
        };
        return Err(AuthFault::Refused(clip(redact(why))));
    }
    let body: TokenResponse = read_json(response)
        .await
        .map_err(|why| AuthFault::Garbage(redact(why)))?;
    if body.access_token.is_empty() {
        return Err(AuthFault::Garbage("the access token is empty".to_owned()));
    }
    if let Some(kind) = &body.token_type
        && !kind.eq_ignore_ascii_case("bearer")
    {
        return Err(AuthFault::Garbage(format!(
            "the token type is {}, not Bearer",
            clip(kind.clone())
        )));
    }
    if reqwest::header::HeaderValue::from_str(&body.access_token).is_err() {
        return Err(AuthFault::Garbage(
            "the access token cannot travel in a header".to_owned(),
        ));
    }
    Ok(body)
}

#[derive(Deserialize)]
struct TokenError {
    error: String,
    #[serde(default)]
    error_description: Option<String>,
}

/// What `application/x-www-form-urlencoded` leaves as it is: letters, digits and `*-._`.
const FORM: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'*')
    .remove(b'-')
    .remove(b'.')
    .remove(b'_');

/// `application/x-www-form-urlencoded` encoding of one value.
fn form_encode(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, FORM)
        .to_string()
        .replace("%20", "+")
}

/// A JSON body of at most [`MAX_DOCUMENT_BYTES`].
pub(crate) async fn read_json<T: serde::de::DeserializeOwned>(
    response: reqwest::Response,
) -> Result<T, String> {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| format!("the body broke off: {}", chain(&e)))?;
        if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
            return Err(format!(
                "the body is larger than {MAX_DOCUMENT_BYTES} bytes"
            ));
        }
        body.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&body).map_err(|e| format!("not the expected JSON: {e}"))
}

/// Now, in milliseconds since the Unix epoch (what a kept token's expiry is written in).
fn epoch_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Token {
    /// When it stops being good, epoch ms (to keep it beyond this process).
    pub(super) fn expires_epoch_ms(&self) -> Option<u64> {
        self.expires.map(|at| {
            epoch_ms()
                .saturating_add(at.saturating_duration_since(Instant::now()).as_millis() as u64)
        })
    }

    /// A kept token, good until `expires_ms` (epoch ms) when it said.
    pub(super) fn kept(value: String, expires_ms: Option<u64>) -> Self {
        Token {
            value: Secret::new(value),
            expires: expires_ms
                .map(|at| Instant::now() + Duration::from_millis(at.saturating_sub(epoch_ms()))),
        }
    }
}
