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

use std::sync::Arc;

use reqwest::Url;
use serde_json::Value;

use super::assertion::{Algorithm, SigningKey};
use super::discovery::{Discovered, discover};
use super::token::{Token, basic_header, send_token};
use super::{AuthFault, Challenge, Tokens, parse_scopes, settings};
use crate::secrets::{Secret, SecretRef, Secrets};

/// The settings an `oauth:` block may hold.
const SETTINGS: &[&str] = &[
    "client_id",
    "client_secret",
    "private_key",
    "signing_algorithm",
    "token_endpoint_auth",
    "scopes",
];

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
