//! OAuth 2.1 for a client acting as itself, as the MCP authorization spec describes it:
//! discovery from the resource's challenge (RFC 9728, RFC 8414), the client-credentials
//! grant with `client_secret_basic`, `client_secret_post` or `private_key_jwt` (RFC 7523),
//! tokens cached per server until they expire, renewed on a 401, and stepped up when the
//! resource asks for more scope (D-34).
//!
//! ```yaml
//! oauth:
//!   client_id: baton-prod                     # pre-registered with the authorization server
//!   client_secret: {env: MCP_CLIENT_SECRET}   # or {arn: ...}; or, instead:
//!   # private_key: {env: MCP_CLIENT_KEY}      # a PKCS#8 PEM key, for private_key_jwt
//!   # signing_algorithm: ES256                # ES256 (default), ES384, RS256
//!   token_endpoint_auth: client_secret_basic  # optional: chosen from the server's metadata
//!   scopes: [tools:call]                      # optional: else the challenge's, else the resource's
//! ```

mod assertion;
mod challenge;
mod discovery;
mod user;

use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use futures::StreamExt;
use reqwest::Url;
use serde::Deserialize;
use serde_json::Value;

use crate::error::{chain, clip};
use crate::secrets::{Secret, SecretRef, Secrets};
use assertion::{Algorithm, SigningKey};
pub(crate) use challenge::Challenge;
use discovery::{Discovered, discover, shown};
pub(crate) use user::UserSpec;

/// The settings an `oauth:` block may hold.
const SETTINGS: &[&str] = &[
    "client_id",
    "client_secret",
    "private_key",
    "signing_algorithm",
    "token_endpoint_auth",
    "scopes",
];
/// The largest metadata document or token response read.
const MAX_DOCUMENT_BYTES: usize = 64 * 1024;
/// A token this close to its expiry is renewed before use rather than sent.
const EXPIRY_MARGIN: Duration = Duration::from_secs(30);

/// What went wrong getting a token, in words an operator can act on. Never holds a secret.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum AuthFault {
    /// A credential could not be read or used.
    #[error("authorization: {0}")]
    Credentials(String),
    /// A metadata or token endpoint could not be reached.
    #[error("authorization: cannot reach {0}")]
    Unreachable(String),
    /// Discovery found no usable authorization server.
    #[error("authorization: {0}")]
    Discovery(String),
    /// The authorization server refused the token request.
    #[error("authorization: the authorization server refused a token: {0}")]
    Refused(String),
    /// The token response could not be used.
    #[error("authorization: the token response is not usable: {0}")]
    Garbage(String),
}

/// How the client authenticates at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Method {
    ClientSecretBasic,
    ClientSecretPost,
    PrivateKeyJwt,
}

impl Method {
    fn parse(name: &str) -> Option<Self> {
        match name {
            "client_secret_basic" => Some(Method::ClientSecretBasic),
            "client_secret_post" => Some(Method::ClientSecretPost),
            "private_key_jwt" => Some(Method::PrivateKeyJwt),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Method::ClientSecretBasic => "client_secret_basic",
            Method::ClientSecretPost => "client_secret_post",
            Method::PrivateKeyJwt => "private_key_jwt",
        }
    }
}

/// The client's credential, by reference.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Credential {
    Secret(SecretRef),
    PrivateKey(SecretRef, Algorithm),
}

/// An `oauth:` block, checked.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct OAuthSpec {
    pub(crate) client_id: String,
    pub(crate) credential: Credential,
    pub(crate) method: Option<Method>,
    pub(crate) scopes: Option<Vec<String>>,
}

impl OAuthSpec {
    /// Parses the block at `field`.
    ///
    /// # Errors
    /// A message naming the setting (never a value of a secret).
    pub(crate) fn parse(field: &str, value: &Value) -> Result<Self, String> {
        let map = settings(field, value, SETTINGS)?;
        let client_id = match map.get("client_id") {
            Some(Value::String(id)) if !id.trim().is_empty() => id.clone(),
            _ => return Err(format!("{field}.client_id: required, a non-empty string")),
        };
        let algorithm = match map.get("signing_algorithm") {
            None => None,
            Some(Value::String(name)) => Some(Algorithm::parse(name).ok_or_else(|| {
                format!(
                    "{field}.signing_algorithm: {name:?} is not one of {}",
                    Algorithm::NAMES
                )
            })?),
            Some(_) => return Err(format!("{field}.signing_algorithm: must be a string")),
        };
        let credential = match (map.get("client_secret"), map.get("private_key")) {
            (Some(secret), None) => {
                if algorithm.is_some() {
                    return Err(format!("{field}.signing_algorithm: only with private_key"));
                }
                Credential::Secret(SecretRef::parse(
                    &format!("{field}.client_secret"),
                    secret,
                    &[],
                )?)
            }
            (None, Some(key)) => Credential::PrivateKey(
                SecretRef::parse(&format!("{field}.private_key"), key, &[])?,
                algorithm.unwrap_or(Algorithm::Es256),
            ),
            _ => {
                return Err(format!(
                    "{field}: give exactly one of client_secret and private_key"
                ));
            }
        };
        let method = match map.get("token_endpoint_auth") {
            None => None,
            Some(Value::String(name)) => {
                let method = Method::parse(name).ok_or_else(|| {
                    format!(
                        "{field}.token_endpoint_auth: {name:?} is not one of client_secret_basic, client_secret_post, private_key_jwt"
                    )
                })?;
                let fits = matches!(
                    (&credential, method),
                    (Credential::PrivateKey(..), Method::PrivateKeyJwt)
                        | (
                            Credential::Secret(_),
                            Method::ClientSecretBasic | Method::ClientSecretPost
                        )
                );
                if !fits {
                    return Err(format!(
                        "{field}.token_endpoint_auth: {name} does not go with {}",
                        match credential {
                            Credential::Secret(_) => "client_secret",
                            Credential::PrivateKey(..) => "private_key",
                        }
                    ));
                }
                Some(method)
            }
            Some(_) => return Err(format!("{field}.token_endpoint_auth: must be a string")),
        };
        let scopes = parse_scopes(field, map.get("scopes"))?;
        Ok(OAuthSpec {
            client_id,
            credential,
            method,
            scopes,
        })
    }

    /// Checks that the credential can be read (and, for a key, loaded).
    ///
    /// # Errors
    /// What is wrong, without the value.
    pub(crate) fn check(&self, secrets: &Secrets) -> Result<(), String> {
        match &self.credential {
            Credential::Secret(reference) => secrets.get(reference).map(|_| ()),
            Credential::PrivateKey(reference, algorithm) => {
                SigningKey::from_pem(secrets.get(reference)?.expose(), *algorithm).map(|_| ())
            }
        }
    }
}

/// Where a protected resource's tokens come from: the client's own grant
/// ([`TokenSource`]) or the user's sign-in ([`user::UserTokenSource`]).
#[async_trait::async_trait]
pub(crate) trait Tokens: Send + Sync {
    /// The current token while it is fresh.
    async fn cached(&self) -> Option<Secret>;

    /// A new token after the resource refused `stale` (or no token) with `challenge`.
    async fn renew(
        &self,
        stale: Option<&Secret>,
        challenge: &Challenge,
    ) -> Result<Secret, AuthFault>;
}

/// Has the user sign in to a protected resource: sends them to the authorization URL and
/// returns the URL their browser was sent back to (the redirect URI, with the code and
/// the state). The product's account links do this through the user's own browser; the
/// conformance client through a stand-in that follows the redirect.
#[async_trait::async_trait]
pub trait UserAuthorizer: Send + Sync {
    /// The URL the sign-in at `authorize_url` came back to, at `redirect_uri`.
    ///
    /// # Errors
    /// Why the user could not sign in, in plain words.
    async fn sign_in(&self, authorize_url: &str, redirect_uri: &str) -> Result<String, String>;
}

pub(crate) use user::UserTokenSource;

/// A server's `oauth:` block: the client's own grant, or the user's sign-in
/// (`grant: authorization_code`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum AuthSpec {
    Client(OAuthSpec),
    User(UserSpec),
}

impl AuthSpec {
    /// Parses the block at `field`.
    ///
    /// # Errors
    /// A message naming the setting.
    pub(crate) fn parse(field: &str, value: &Value) -> Result<Self, String> {
        match value.get("grant") {
            Some(Value::String(grant)) if grant == "authorization_code" => {
                UserSpec::parse(field, value).map(AuthSpec::User)
            }
            Some(Value::String(grant)) if grant == "client_credentials" => {
                let mut value = value.clone();
                if let Some(map) = value.as_object_mut() {
                    map.remove("grant");
                }
                OAuthSpec::parse(field, &value).map(AuthSpec::Client)
            }
            Some(_) => Err(format!(
                "{field}.grant: client_credentials (the default) or authorization_code"
            )),
            None => OAuthSpec::parse(field, value).map(AuthSpec::Client),
        }
    }

    /// Checks that the credentials can be read.
    ///
    /// # Errors
    /// What is wrong, without a value.
    pub(crate) fn check(&self, secrets: &Secrets) -> Result<(), String> {
        match self {
            AuthSpec::Client(spec) => spec.check(secrets),
            AuthSpec::User(spec) => spec.check(secrets),
        }
    }
}

/// An `oauth:` block as a mapping of only the `allowed` settings.
fn settings<'v>(
    field: &str,
    value: &'v Value,
    allowed: &[&str],
) -> Result<&'v serde_json::Map<String, Value>, String> {
    let map = value
        .as_object()
        .ok_or_else(|| format!("{field}: must be a mapping"))?;
    match map.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(unknown) => Err(format!(
            "{field}: unknown setting {unknown:?} (allowed: {})",
            allowed.join(", ")
        )),
        None => Ok(map),
    }
}

/// An `oauth:` block's `scopes`: a list of scope names, if given.
fn parse_scopes(field: &str, value: Option<&Value>) -> Result<Option<Vec<String>>, String> {
    match value {
        None => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|s| match s.as_str() {
                Some(s) if !s.is_empty() && !s.contains(char::is_whitespace) => Ok(s.to_owned()),
                _ => Err(format!("{field}.scopes: each a scope name without spaces")),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(format!("{field}.scopes: a list of scope names")),
    }
}

/// A token and when it stops being good.
struct Token {
    value: Secret,
    expires: Option<Instant>,
}

impl Token {
    /// A token just issued, good for `expires_in` seconds when the server said (at most a
    /// year: a longer promise is not believed).
    fn issued(value: String, expires_in: Option<u64>) -> Self {
        Token {
            value: Secret::new(value),
            expires: expires_in
                .map(|secs| Instant::now() + Duration::from_secs(secs.min(365 * 24 * 3600))),
        }
    }

    fn fresh(&self) -> bool {
        self.expires
            .is_none_or(|at| Instant::now() + EXPIRY_MARGIN < at)
    }
}

#[derive(Default)]
struct State {
    discovered: Option<(Option<String>, Arc<Discovered>)>,
    token: Option<Token>,
    /// The scopes the current token was asked for.
    scopes: Vec<String>,
}

/// The tokens of one protected resource (one MCP server): discovered, requested, cached
/// and renewed. Renewals are serialized, so that many calls meeting an expired token
/// cause one token request.
pub(crate) struct TokenSource {
    spec: OAuthSpec,
    resource: Url,
    http: reqwest::Client,
    secrets: Arc<Secrets>,
    state: tokio::sync::Mutex<State>,
}

#[async_trait::async_trait]
impl Tokens for TokenSource {
    async fn cached(&self) -> Option<Secret> {
        TokenSource::cached(self).await
    }

    async fn renew(
        &self,
        stale: Option<&Secret>,
        challenge: &Challenge,
    ) -> Result<Secret, AuthFault> {
        TokenSource::renew(self, stale, challenge).await
    }
}

impl TokenSource {
    pub(crate) fn new(
        spec: OAuthSpec,
        resource: Url,
        http: reqwest::Client,
        secrets: Arc<Secrets>,
    ) -> Self {
        TokenSource {
            spec,
            resource,
            http,
            secrets,
            state: tokio::sync::Mutex::new(State::default()),
        }
    }

    /// The cached token while it is fresh.
    pub(crate) async fn cached(&self) -> Option<Secret> {
        let state = self.state.lock().await;
        state
            .token
            .as_ref()
            .filter(|t| t.fresh())
            .map(|t| t.value.clone())
    }

    /// A new token after the resource refused `stale` (or no token) with `challenge`.
    /// When another call has renewed it meanwhile, that token is returned instead.
    ///
    /// # Errors
    /// Discovery or the token request failed ([`AuthFault`]).
    pub(crate) async fn renew(
        &self,
        stale: Option<&Secret>,
        challenge: &Challenge,
    ) -> Result<Secret, AuthFault> {
        let mut state = self.state.lock().await;
        if let Some(token) = &state.token
            && token.fresh()
            && stale.is_none_or(|s| s.expose() != token.value.expose())
        {
            return Ok(token.value.clone());
        }
        let discovered = match &state.discovered {
            Some((from, found))
                if challenge.resource_metadata.is_none()
                    || challenge.resource_metadata == *from =>
            {
                found.clone()
            }
            _ => {
                let from = challenge.resource_metadata.clone();
                let found = Arc::new(discover(&self.http, &self.resource, from.as_deref()).await?);
                state.discovered = Some((from, found.clone()));
                found
            }
        };
        let scopes = if challenge.is_insufficient_scope() {
            // Step-up: what the token had, and what the resource now asks for.
            let mut scopes = state.scopes.clone();
            for scope in challenge.scopes() {
                if !scopes.contains(&scope) {
                    scopes.push(scope);
                }
            }
            scopes
        } else if challenge.scope.is_some() {
            challenge.scopes()
        } else if let Some(scopes) = &self.spec.scopes {
            scopes.clone()
        } else {
            discovered.scopes_supported.clone().unwrap_or_default()
        };
        let token = self.request(&discovered, &scopes).await?;
        let value = token.value.clone();
        state.token = Some(token);
        state.scopes = scopes;
        Ok(value)
    }

    /// The client-credentials token request.
    async fn request(&self, found: &Discovered, scopes: &[String]) -> Result<Token, AuthFault> {
        let method = self.method(found)?;
        let mut form: Vec<(&str, String)> = vec![
            ("grant_type", "client_credentials".to_owned()),
            ("resource", found.resource.clone()),
        ];
        if !scopes.is_empty() {
            form.push(("scope", scopes.join(" ")));
        }
        let endpoint = &found.server.token_endpoint;
        let mut request = self.http.post(endpoint.as_str());
        let mut secret_shown = None;
        match (&self.spec.credential, method) {
            (Credential::Secret(reference), Method::ClientSecretBasic) => {
                let secret = self.secret(reference)?;
                request = request.header(
                    reqwest::header::AUTHORIZATION,
                    basic_header(&self.spec.client_id, &secret)?,
                );
                secret_shown = Some(secret);
            }
            (Credential::Secret(reference), _) => {
                let secret = self.secret(reference)?;
                form.push(("client_id", self.spec.client_id.clone()));
                form.push(("client_secret", secret.expose().to_owned()));
                secret_shown = Some(secret);
            }
            (Credential::PrivateKey(reference, algorithm), _) => {
                let pem = self.secret(reference)?;
                let key = SigningKey::from_pem(pem.expose(), *algorithm)
                    .map_err(AuthFault::Credentials)?;
                let assertion = key
                    .assertion(&self.spec.client_id, &found.issuer)
                    .map_err(AuthFault::Credentials)?;
                form.push(("client_id", self.spec.client_id.clone()));
                form.push((
                    "client_assertion_type",
                    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".to_owned(),
                ));
                form.push(("client_assertion", assertion));
            }
        }
        let body = send_token(request, endpoint, &form, secret_shown.as_ref()).await?;
        Ok(Token::issued(body.access_token, body.expires_in))
    }

    /// The configured method, or the best the server lists for this credential.
    fn method(&self, found: &Discovered) -> Result<Method, AuthFault> {
        let supported = found
            .server
            .token_endpoint_auth_methods_supported
            .as_deref();
        let listed = |m: Method| supported.is_none_or(|list| list.iter().any(|s| s == m.name()));
        let candidates = match (&self.spec.credential, self.spec.method) {
            (_, Some(method)) => vec![method],
            (Credential::PrivateKey(..), None) => vec![Method::PrivateKeyJwt],
            // RFC 8414 §2: client_secret_basic is the default when the server lists none.
            (Credential::Secret(_), None) => {
                vec![Method::ClientSecretBasic, Method::ClientSecretPost]
            }
        };
        candidates.iter().copied().find(|m| listed(*m)).ok_or_else(|| {
            AuthFault::Discovery(format!(
                "the authorization server accepts none of {} at its token endpoint (it lists {})",
                candidates.iter().map(|m| m.name()).collect::<Vec<_>>().join(", "),
                supported.map_or_else(String::new, |l| l.join(", "))
            ))
        })
    }

    fn secret(&self, reference: &SecretRef) -> Result<Secret, AuthFault> {
        self.secrets.get(reference).map_err(AuthFault::Credentials)
    }
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    #[serde(default)]
    token_type: Option<String>,
    #[serde(default)]
    expires_in: Option<u64>,
    #[serde(default)]
    refresh_token: Option<String>,
}

/// A token request to `endpoint` with `form`, authenticated with HTTP Basic as `basic`
/// when given; `shown_secret` is redacted from any message.
async fn post_token(
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
fn basic_header(id: &str, secret: &Secret) -> Result<reqwest::header::HeaderValue, AuthFault> {
    let pair = format!("{}:{}", form_encode(id), form_encode(secret.expose()));
    let mut value =
        reqwest::header::HeaderValue::from_str(&format!("Basic {}", STANDARD.encode(pair)))
            .map_err(|_| AuthFault::Credentials("the client secret cannot be sent".to_owned()))?;
    value.set_sensitive(true);
    Ok(value)
}

/// Sends a token request and reads the answer: an error the server gave, or a usable
/// Bearer token.
async fn send_token(
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
