//! A user's own authorization of a protected resource: the authorization-code grant with
//! PKCE (S256), as the MCP authorization spec profiles OAuth 2.1 — discovery from the
//! resource's challenge, the client made known to the authorization server (pre-registered,
//! a client ID metadata document, or dynamic registration), the scopes chosen from the
//! challenge or the resource, the user sent to the authorization endpoint, the code taken
//! back at the redirect URI with its `state` checked, and refresh tokens used when the
//! access token expires.
//!
//! ```yaml
//! oauth:
//!   grant: authorization_code
//!   redirect_uri: https://baton.example.com/v1/links/callback
//!   client_id: baton                      # optional: pre-registered (else a metadata
//!   client_secret: {env: BATON_SECRET}    #   document, else dynamic registration)
//!   client_metadata_url: https://baton.example.com/oauth/client.json   # optional
//!   scopes: [files:read]                  # optional: else the challenge's, else the resource's
//! ```

use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use reqwest::Url;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::discovery::{Discovered, discover, shown};
use super::token::{Token, TokenResponse, post_token, read_json};
use super::{AuthFault, Challenge, Tokens, UserAuthorizer};
use crate::error::{chain, clip};
use crate::secrets::{Secret, SecretRef, Secrets};

/// The settings of an `oauth:` block with `grant: authorization_code`.
const SETTINGS: &[&str] = &[
    "grant",
    "redirect_uri",
    "client_id",
    "client_secret",
    "client_metadata_url",
    "client_name",
    "scopes",
];

/// The scope that asks for a refresh token, where the authorization server offers it.
const OFFLINE_ACCESS: &str = "offline_access";

/// An `oauth:` block for the user's own authorization, checked.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct UserSpec {
    pub(crate) redirect_uri: String,
    pub(crate) client_id: Option<String>,
    pub(crate) client_secret: Option<SecretRef>,
    pub(crate) client_metadata_url: Option<String>,
    pub(crate) client_name: String,
    pub(crate) scopes: Option<Vec<String>>,
}

impl UserSpec {
    /// Parses the block at `field`.
    ///
    /// # Errors
    /// A message naming the setting (never a secret's value).
    pub(crate) fn parse(field: &str, value: &Value) -> Result<Self, String> {
        let map = super::settings(field, value, SETTINGS)?;
        let text = |name: &str| -> Result<Option<String>, String> {
            match map.get(name) {
                None => Ok(None),
                Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.clone())),
                Some(_) => Err(format!("{field}.{name}: a non-empty string")),
            }
        };
        let url = |name: &str| -> Result<Option<String>, String> {
            let Some(value) = text(name)? else {
                return Ok(None);
            };
            Url::parse(&value)
                .ok()
                .filter(|u| matches!(u.scheme(), "https" | "http"))
                .map(|_| Some(value))
                .ok_or_else(|| format!("{field}.{name}: an http(s) URL"))
        };
        let redirect_uri = url("redirect_uri")?.ok_or_else(|| {
            format!("{field}.redirect_uri: required with grant authorization_code")
        })?;
        let client_id = text("client_id")?;
        let client_secret = match map.get("client_secret") {
            None => None,
            Some(secret) if client_id.is_some() => Some(SecretRef::parse(
                &format!("{field}.client_secret"),
                secret,
                &[],
            )?),
            Some(_) => return Err(format!("{field}.client_secret: only with client_id")),
        };
        let scopes = super::parse_scopes(field, map.get("scopes"))?;
        Ok(UserSpec {
            redirect_uri,
            client_id,
            client_secret,
            client_metadata_url: url("client_metadata_url")?,
            client_name: text("client_name")?.unwrap_or_else(|| "Baton".to_owned()),
            scopes,
        })
    }

    /// Checks that a configured secret can be read.
    ///
    /// # Errors
    /// What is wrong, without the value.
    pub(crate) fn check(&self, secrets: &Secrets) -> Result<(), String> {
        match &self.client_secret {
            Some(reference) => secrets.get(reference).map(|_| ()),
            None => Ok(()),
        }
    }
}

/// How the client authenticates at the token endpoint.
#[derive(Debug, Clone)]
pub(crate) enum ClientAuth {
    /// A public client: its id in the form.
    None,
    Basic(Secret),
    Post(Secret),
}

/// The client as the authorization server knows it.
#[derive(Debug, Clone)]
pub(crate) struct Client {
    pub(crate) id: String,
    pub(crate) auth: ClientAuth,
}

/// Where tokens for one resource are asked for: all a refresh needs once discovery is done.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Endpoint {
    /// The authorization server's token endpoint.
    pub(crate) token_endpoint: String,
    /// The resource indicator sent with token requests (RFC 8707).
    pub(crate) resource: String,
}

/// A sign-in under way: what the redirect's code is exchanged with.
pub(crate) struct SignIn {
    /// Where the user is sent (without `state`: its caller adds the one it checks).
    pub(crate) authorize_url: Url,
    pub(crate) verifier: Secret,
    pub(crate) redirect_uri: String,
    pub(crate) client: Client,
    pub(crate) endpoint: Endpoint,
    pub(crate) scopes: Vec<String>,
}

/// The user's tokens for one resource.
pub(crate) struct UserTokens {
    pub(crate) access: Token,
    pub(crate) refresh: Option<Secret>,
    pub(crate) client: Client,
    pub(crate) endpoint: Endpoint,
    pub(crate) scopes: Vec<String>,
}

/// Starts a sign-in to `resource`, which refused a call with `challenge`; `held` are the
/// scopes a token had when the resource asks for more (a step-up).
///
/// # Errors
/// Discovery or registration failed ([`AuthFault`]).
pub(crate) async fn begin(
    http: &reqwest::Client,
    spec: &UserSpec,
    secrets: &Secrets,
    resource: &Url,
    challenge: &Challenge,
    held: &[String],
) -> Result<SignIn, AuthFault> {
    let discovered = discover(http, resource, challenge.resource_metadata.as_deref()).await?;
    let server = &discovered.server;
    let endpoint = server.authorization_endpoint.as_deref().ok_or_else(|| {
        AuthFault::Discovery("the authorization server has no authorization endpoint".to_owned())
    })?;
    let mut authorize_url = Url::parse(endpoint)
        .map_err(|_| AuthFault::Discovery("the authorization endpoint is not a URL".to_owned()))?;
    if let Some(methods) = &server.code_challenge_methods_supported
        && !methods.iter().any(|m| m == "S256")
    {
        return Err(AuthFault::Discovery(
            "the authorization server does not offer PKCE with S256".to_owned(),
        ));
    }
    let client = client(http, spec, secrets, &discovered).await?;
    let scopes = scopes(spec, challenge, &discovered, held);
    let (verifier, code_challenge) = pkce()?;
    {
        let mut query = authorize_url.query_pairs_mut();
        query
            .append_pair("response_type", "code")
            .append_pair("client_id", &client.id)
            .append_pair("redirect_uri", &spec.redirect_uri)
            .append_pair("code_challenge", &code_challenge)
            .append_pair("code_challenge_method", "S256")
            .append_pair("resource", &discovered.resource);
        if !scopes.is_empty() {
            query.append_pair("scope", &scopes.join(" "));
        }
    }
    Ok(SignIn {
        authorize_url,
        verifier,
        redirect_uri: spec.redirect_uri.clone(),
        client,
        endpoint: Endpoint {
            token_endpoint: discovered.server.token_endpoint.clone(),
            resource: discovered.resource.clone(),
        },
        scopes,
    })
}

/// Finishes `sign_in` with the URL the user's browser was sent back to: its `state` must
/// be `state`, and its code is exchanged (with the PKCE verifier) for tokens.
///
/// # Errors
/// A wrong `state`, an error the authorization server sent back, or a refused exchange.
pub(crate) async fn finish(
    http: &reqwest::Client,
    sign_in: SignIn,
    state: &str,
    callback: &Url,
) -> Result<UserTokens, AuthFault> {
    let param = |name: &str| {
        callback
            .query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    };
    if param("state").as_deref() != Some(state) {
        return Err(AuthFault::Refused(
            "the sign-in came back with another state; nothing was stored".to_owned(),
        ));
    }
    if let Some(error) = param("error") {
        return Err(AuthFault::Refused(clip(error)));
    }
    let code = param("code")
        .ok_or_else(|| AuthFault::Garbage("the sign-in came back without a code".to_owned()))?;
    exchange_code(http, sign_in, &code).await
}

/// Exchanges the `code` a sign-in came back with (with its PKCE verifier) for tokens, and
/// refuses a token that says it is for another resource.
///
/// # Errors
/// The exchange was refused or failed, or the token is another audience's.
pub(crate) async fn exchange_code(
    http: &reqwest::Client,
    sign_in: SignIn,
    code: &str,
) -> Result<UserTokens, AuthFault> {
    let form = vec![
        ("grant_type", "authorization_code".to_owned()),
        ("code", code.to_owned()),
        ("redirect_uri", sign_in.redirect_uri.clone()),
        ("code_verifier", sign_in.verifier.expose().to_owned()),
        ("resource", sign_in.endpoint.resource.clone()),
    ];
    let body = exchange(http, &sign_in.client, &sign_in.endpoint, form).await?;
    if !super::audience::allows(&body.access_token, &sign_in.endpoint.resource) {
        return Err(AuthFault::Refused(
            "the authorization server issued a token for another resource; nothing was stored"
                .to_owned(),
        ));
    }
    Ok(tokens(
        body,
        sign_in.client,
        sign_in.endpoint,
        sign_in.scopes,
    ))
}

/// New tokens from a refresh token (the scopes it was granted; a rotated refresh token
/// replaces the old one).
///
/// # Errors
/// The authorization server refused, or could not be reached.
pub(crate) async fn refresh(
    http: &reqwest::Client,
    held: &UserTokens,
) -> Result<UserTokens, AuthFault> {
    let Some(refresh) = &held.refresh else {
        return Err(AuthFault::Refused("there is no refresh token".to_owned()));
    };
    let form = vec![
        ("grant_type", "refresh_token".to_owned()),
        ("refresh_token", refresh.expose().to_owned()),
        ("resource", held.endpoint.resource.clone()),
    ];
    let body = exchange(http, &held.client, &held.endpoint, form).await?;
    let mut renewed = tokens(
        body,
        held.client.clone(),
        held.endpoint.clone(),
        held.scopes.clone(),
    );
    if renewed.refresh.is_none() {
        renewed.refresh = held.refresh.clone();
    }
    Ok(renewed)
}

fn tokens(
    body: TokenResponse,
    client: Client,
    endpoint: Endpoint,
    scopes: Vec<String>,
) -> UserTokens {
    UserTokens {
        access: Token::issued(body.access_token, body.expires_in),
        refresh: body
            .refresh_token
            .filter(|r| !r.is_empty())
            .map(Secret::new),
        client,
        endpoint,
        scopes,
    }
}

/// One token request with the client's authentication.
async fn exchange(
    http: &reqwest::Client,
    client: &Client,
    endpoint: &Endpoint,
    mut form: Vec<(&'static str, String)>,
) -> Result<TokenResponse, AuthFault> {
    let basic = match &client.auth {
        ClientAuth::None => {
            form.push(("client_id", client.id.clone()));
            None
        }
        ClientAuth::Post(secret) => {
            form.push(("client_id", client.id.clone()));
            form.push(("client_secret", secret.expose().to_owned()));
            None
        }
        ClientAuth::Basic(secret) => Some((client.id.clone(), secret.clone())),
    };
    let shown_secret = match &client.auth {
        ClientAuth::Basic(s) | ClientAuth::Post(s) => Some(s.clone()),
        ClientAuth::None => None,
    };
    post_token(
        http,
        &endpoint.token_endpoint,
        &form,
        basic.as_ref().map(|(id, s)| (id.as_str(), s)),
        shown_secret.as_ref(),
    )
    .await
}

/// The client: pre-registered, a client ID metadata document where the authorization
/// server takes one, else registered dynamically (RFC 7591) as a public client.
async fn client(
    http: &reqwest::Client,
    spec: &UserSpec,
    secrets: &Secrets,
    discovered: &Discovered,
) -> Result<Client, AuthFault> {
    let server = &discovered.server;
    let supported = |method: &str| {
        server
            .token_endpoint_auth_methods_supported
            .as_deref()
            .is_none_or(|list| list.iter().any(|m| m == method))
    };
    if let Some(id) = &spec.client_id {
        let auth = match &spec.client_secret {
            None => ClientAuth::None,
            Some(reference) => {
                let secret = secrets.get(reference).map_err(AuthFault::Credentials)?;
                if supported("client_secret_basic") {
                    ClientAuth::Basic(secret)
                } else {
                    ClientAuth::Post(secret)
                }
            }
        };
        return Ok(Client {
            id: id.clone(),
            auth,
        });
    }
    if let Some(url) = &spec.client_metadata_url
        && server.client_id_metadata_document_supported == Some(true)
    {
        return Ok(Client {
            id: url.clone(),
            auth: ClientAuth::None,
        });
    }
    let endpoint = server.registration_endpoint.as_deref().ok_or_else(|| {
        AuthFault::Discovery(
            "the authorization server takes no registration and no client is configured (give oauth.client_id)"
                .to_owned(),
        )
    })?;
    let method = if supported("none") {
        "none"
    } else if supported("client_secret_basic") {
        "client_secret_basic"
    } else {
        "client_secret_post"
    };
    let request = json!({
        "client_name": spec.client_name,
        "redirect_uris": [spec.redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": method,
    });
    let url = Url::parse(endpoint)
        .map_err(|_| AuthFault::Discovery("the registration endpoint is not a URL".to_owned()))?;
    let response = http
        .post(url.clone())
        .json(&request)
        .send()
        .await
        .map_err(|e| AuthFault::Unreachable(format!("{}: {}", shown(&url), chain(&e))))?;
    let status = response.status();
    if !status.is_success() {
        return Err(AuthFault::Refused(format!(
            "the client registration at {} answered HTTP {}",
            shown(&url),
            status.as_u16()
        )));
    }
    let registered: Registered = read_json(response).await.map_err(AuthFault::Garbage)?;
    let secret = registered
        .client_secret
        .filter(|s| !s.is_empty())
        .map(Secret::new);
    let auth = match (registered.token_endpoint_auth_method.as_deref(), secret) {
        (Some("client_secret_post"), Some(s)) => ClientAuth::Post(s),
        (Some("none"), _) | (_, None) => ClientAuth::None,
        (_, Some(s)) => ClientAuth::Basic(s),
    };
    Ok(Client {
        id: registered.client_id,
        auth,
    })
}

#[derive(Deserialize)]
struct Registered {
    client_id: String,
    #[serde(default)]
    client_secret: Option<String>,
    #[serde(default)]
    token_endpoint_auth_method: Option<String>,
}

/// The scopes to ask for (the MCP spec's order): a step-up's, the challenge's, the
/// configured ones, else the resource's; and `offline_access` where the authorization
/// server offers it, for a refresh token.
fn scopes(
    spec: &UserSpec,
    challenge: &Challenge,
    discovered: &Discovered,
    held: &[String],
) -> Vec<String> {
    let mut scopes: Vec<String> = if challenge.is_insufficient_scope() {
        let mut scopes = held.to_vec();
        for scope in challenge.scopes() {
            if !scopes.contains(&scope) {
                scopes.push(scope);
            }
        }
        scopes
    } else if challenge.scope.is_some() {
        challenge.scopes()
    } else if let Some(scopes) = &spec.scopes {
        scopes.clone()
    } else {
        discovered.scopes_supported.clone().unwrap_or_default()
    };
    let offered = discovered
        .server
        .scopes_supported
        .as_deref()
        .is_some_and(|s| s.iter().any(|s| s == OFFLINE_ACCESS));
    if offered && !scopes.iter().any(|s| s == OFFLINE_ACCESS) {
        scopes.push(OFFLINE_ACCESS.to_owned());
    }
    scopes
}

/// The user's tokens of one protected resource: the current one while it is fresh, a
/// refreshed one when it expires, else a new sign-in through the authorizer (also for a
/// step-up to more scope). Renewals are serialized.
pub(crate) struct UserTokenSource {
    spec: UserSpec,
    resource: Url,
    http: reqwest::Client,
    secrets: Arc<Secrets>,
    authorizer: Arc<dyn UserAuthorizer>,
    held: tokio::sync::Mutex<Option<UserTokens>>,
}

impl UserTokenSource {
    pub(crate) fn new(
        spec: UserSpec,
        resource: Url,
        http: reqwest::Client,
        secrets: Arc<Secrets>,
        authorizer: Arc<dyn UserAuthorizer>,
    ) -> Self {
        UserTokenSource {
            spec,
            resource,
            http,
            secrets,
            authorizer,
            held: tokio::sync::Mutex::new(None),
        }
    }
}

#[async_trait::async_trait]
impl Tokens for UserTokenSource {
    async fn cached(&self) -> Option<Secret> {
        let held = self.held.lock().await;
        held.as_ref()
            .filter(|t| t.access.fresh())
            .map(|t| t.access.value.clone())
    }

    async fn renew(
        &self,
        stale: Option<&Secret>,
        challenge: &Challenge,
    ) -> Result<Secret, AuthFault> {
        let mut held = self.held.lock().await;
        if let Some(tokens) = held.as_ref()
            && tokens.access.fresh()
            && stale.is_none_or(|s| s.expose() != tokens.access.value.expose())
        {
            return Ok(tokens.access.value.clone());
        }
        if !challenge.is_insufficient_scope()
            && let Some(tokens) = held.as_ref()
            && tokens.refresh.is_some()
        {
            match refresh(&self.http, tokens).await {
                Ok(renewed) => {
                    let value = renewed.access.value.clone();
                    *held = Some(renewed);
                    return Ok(value);
                }
                // A refresh token can be revoked or expire: sign in again.
                Err(e) => {
                    tracing::info!(error = %e, "the refresh token was refused; signing in again")
                }
            }
        }
        let scopes = held.as_ref().map(|t| t.scopes.clone()).unwrap_or_default();
        let mut sign_in = begin(
            &self.http,
            &self.spec,
            &self.secrets,
            &self.resource,
            challenge,
            &scopes,
        )
        .await?;
        let state = random_text()?;
        sign_in
            .authorize_url
            .query_pairs_mut()
            .append_pair("state", &state);
        let landed = self
            .authorizer
            .sign_in(sign_in.authorize_url.as_str(), &self.spec.redirect_uri)
            .await
            .map_err(AuthFault::Refused)?;
        let landed = Url::parse(&landed).map_err(|_| {
            AuthFault::Garbage("the sign-in came back to something that is not a URL".to_owned())
        })?;
        let tokens = finish(&self.http, sign_in, &state, &landed).await?;
        let value = tokens.access.value.clone();
        *held = Some(tokens);
        Ok(value)
    }
}

/// 256 random bits as URL-safe text.
pub(crate) fn random_text() -> Result<String, AuthFault> {
    use ring::rand::SecureRandom as _;
    let mut bytes = [0u8; 32];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| AuthFault::Credentials("no randomness for the sign-in".to_owned()))?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

/// A PKCE verifier and its S256 challenge (RFC 7636).
fn pkce() -> Result<(Secret, String), AuthFault> {
    let verifier = random_text()?;
    let digest = ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes());
    Ok((
        Secret::new(verifier),
        URL_SAFE_NO_PAD.encode(digest.as_ref()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pkce_challenge_is_the_verifiers_s256() {
        // Computed with another SHA-256 and base64url (Python's hashlib and base64).
        let verifier = "dBjftJeZ4CVP-mJ92K1qZhjZzYwHwZuGyqgVf5B5W1k";
        let digest = ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes());
        assert_eq!(
            URL_SAFE_NO_PAD.encode(digest.as_ref()),
            "AoOYaYwz2ndo0iFHvpT3iL9i_c1xlLCx0rlybcGapyg"
        );
        let (verifier, challenge) = pkce().unwrap();
        assert_eq!(verifier.expose().len(), 43);
        assert_eq!(challenge.len(), 43);
        assert_ne!(random_text().unwrap(), random_text().unwrap());
    }

    #[test]
    fn settings_are_checked_with_their_names() {
        let ok = UserSpec::parse(
            "server.oauth",
            &json!({"grant": "authorization_code", "redirect_uri": "http://127.0.0.1:8787/v1/links/callback"}),
        )
        .unwrap();
        assert_eq!(ok.client_name, "Baton");
        let refused = |v: Value| UserSpec::parse("server.oauth", &v).unwrap_err();
        assert!(refused(json!({"grant": "authorization_code"})).contains("redirect_uri"));
        assert!(
            refused(json!({"grant": "authorization_code", "redirect_uri": "ftp://x"}))
                .contains("http(s) URL")
        );
        assert!(
            refused(json!({"grant": "authorization_code", "redirect_uri": "http://x", "client_secret": {"env": "S"}}))
                .contains("only with client_id")
        );
        assert!(
            refused(json!({"grant": "authorization_code", "redirect_uri": "http://x", "private_key": "k"}))
                .contains("unknown setting")
        );
    }
}
