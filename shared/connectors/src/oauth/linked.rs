//! A user's own authorization kept as an account link (D-37): one token source per
//! principal and server, reading the principal's link on every use (a link revoked or
//! renewed elsewhere is seen at once), renewing it with its refresh token, and, where there
//! is none that works, starting a sign-in that the runtime sends the user to and finishes
//! at its callback ([`finish_link`]). What is kept is this module's own text, sealed by
//! the runtime; nothing here logs a token.

use std::sync::{Arc, Mutex, PoisonError};

use baton_core::Principal;
use baton_core::ports::connector::{AccountLinks, ConnectorError, LinkNeeded};
use reqwest::Url;
use serde::{Deserialize, Serialize};

use super::token::Token;
use super::user::{Client, ClientAuth, Endpoint, SignIn, UserSpec, UserTokens};
use super::{AuthFault, Challenge, Tokens};
use crate::secrets::{Secret, Secrets};

/// A client as kept: its id, how it authenticates, and its secret if it has one.
#[derive(Serialize, Deserialize)]
struct KeptClient {
    id: String,
    /// `none`, `basic` or `post`.
    auth: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    secret: Option<String>,
}

impl KeptClient {
    fn of(client: &Client) -> Self {
        let (auth, secret) = match &client.auth {
            ClientAuth::None => ("none", None),
            ClientAuth::Basic(s) => ("basic", Some(s.expose().to_owned())),
            ClientAuth::Post(s) => ("post", Some(s.expose().to_owned())),
        };
        KeptClient {
            id: client.id.clone(),
            auth: auth.to_owned(),
            secret,
        }
    }

    fn client(self) -> Client {
        let auth = match (self.auth.as_str(), self.secret) {
            ("basic", Some(s)) => ClientAuth::Basic(Secret::new(s)),
            ("post", Some(s)) => ClientAuth::Post(Secret::new(s)),
            _ => ClientAuth::None,
        };
        Client { id: self.id, auth }
    }
}

/// A sign-in under way, as the runtime seals it into the `state` it sends.
#[derive(Serialize, Deserialize)]
struct Pending {
    verifier: String,
    redirect_uri: String,
    client: KeptClient,
    endpoint: Endpoint,
    scopes: Vec<String>,
}

/// The tokens of a link, as kept.
#[derive(Serialize, Deserialize)]
struct Kept {
    access: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    refresh: Option<String>,
    client: KeptClient,
    endpoint: Endpoint,
    #[serde(default)]
    scopes: Vec<String>,
}

fn keep_text(tokens: &UserTokens) -> Result<String, AuthFault> {
    serde_json::to_string(&Kept {
        access: tokens.access.value.expose().to_owned(),
        expires_ms: tokens.access.expires_epoch_ms(),
        refresh: tokens.refresh.as_ref().map(|r| r.expose().to_owned()),
        client: KeptClient::of(&tokens.client),
        endpoint: tokens.endpoint.clone(),
        scopes: tokens.scopes.clone(),
    })
    .map_err(|_| AuthFault::Garbage("the tokens could not be written down".to_owned()))
}

fn read_kept(text: &str) -> Option<UserTokens> {
    let kept: Kept = serde_json::from_str(text).ok()?;
    Some(UserTokens {
        access: Token::kept(kept.access, kept.expires_ms),
        refresh: kept.refresh.map(Secret::new),
        client: kept.client.client(),
        endpoint: kept.endpoint,
        scopes: kept.scopes,
    })
}

/// What a link keeps once the user signed in: the sign-in `pending` (as [`LinkNeeded`]
/// carried it) finished with the `code` the authorization server sent back; a connector's
/// [`finish_link`](baton_core::ports::connector::Connector::finish_link).
///
/// # Errors
/// The authorization server could not be reached (`Unavailable`), or the exchange was
/// refused or the token is another resource's (`InvalidEnvelope`, with the reason).
pub(crate) async fn finish_link(
    http: &reqwest::Client,
    pending: &str,
    code: &str,
) -> Result<String, ConnectorError> {
    exchange_pending(http, pending, code)
        .await
        .map_err(|fault| match fault {
            AuthFault::Unreachable(_) => ConnectorError::Unavailable(fault.to_string()),
            _ => ConnectorError::InvalidEnvelope(fault.to_string()),
        })
}

async fn exchange_pending(
    http: &reqwest::Client,
    pending: &str,
    code: &str,
) -> Result<String, AuthFault> {
    let pending: Pending = serde_json::from_str(pending)
        .map_err(|_| AuthFault::Garbage("the sign-in's state is not one of ours".to_owned()))?;
    let sign_in = SignIn {
        // Only the exchange is left: the page was visited.
        authorize_url: Url::parse("about:blank")
            .map_err(|_| AuthFault::Garbage("no URL".to_owned()))?,
        verifier: Secret::new(pending.verifier),
        redirect_uri: pending.redirect_uri,
        client: pending.client.client(),
        endpoint: pending.endpoint,
        scopes: pending.scopes,
    };
    let tokens = super::user::exchange_code(http, sign_in, code).await?;
    keep_text(&tokens)
}

/// One principal's tokens for one server, kept as their account link.
pub(crate) struct LinkedTokenSource {
    spec: UserSpec,
    resource: Url,
    http: reqwest::Client,
    secrets: Arc<Secrets>,
    links: Arc<dyn AccountLinks>,
    principal: Principal,
    /// The link's key: the server's URL.
    server: String,
    /// The sign-in started when no token would do, for the connector to hand on.
    needed: Mutex<Option<LinkNeeded>>,
    /// Serializes renewals, so that one refresh token is used once.
    renewing: tokio::sync::Mutex<()>,
}

impl LinkedTokenSource {
    pub(crate) fn new(
        spec: UserSpec,
        resource: Url,
        http: reqwest::Client,
        secrets: Arc<Secrets>,
        links: Arc<dyn AccountLinks>,
        principal: Principal,
    ) -> Self {
        LinkedTokenSource {
            server: resource.to_string(),
            spec,
            resource,
            http,
            secrets,
            links,
            principal,
            needed: Mutex::new(None),
            renewing: tokio::sync::Mutex::new(()),
        }
    }

    async fn held(&self) -> Result<Option<UserTokens>, AuthFault> {
        let text = self
            .links
            .open(&self.principal, &self.server)
            .await
            .map_err(AuthFault::Credentials)?;
        Ok(text.as_deref().and_then(read_kept))
    }

    /// Starts a sign-in and keeps it for [`Tokens::take_needed`].
    async fn ask_for_link(
        &self,
        challenge: &Challenge,
        scopes: &[String],
    ) -> Result<Secret, AuthFault> {
        let sign_in = super::user::begin(
            &self.http,
            &self.spec,
            &self.secrets,
            &self.resource,
            challenge,
            scopes,
        )
        .await?;
        let pending = serde_json::to_string(&Pending {
            verifier: sign_in.verifier.expose().to_owned(),
            redirect_uri: sign_in.redirect_uri.clone(),
            client: KeptClient::of(&sign_in.client),
            endpoint: sign_in.endpoint.clone(),
            scopes: sign_in.scopes.clone(),
        })
        .map_err(|_| AuthFault::Garbage("the sign-in could not be written down".to_owned()))?;
        let label = self
            .resource
            .host_str()
            .map_or_else(|| self.server.clone(), str::to_owned);
        *self.needed.lock().unwrap_or_else(PoisonError::into_inner) = Some(LinkNeeded {
            server: self.server.clone(),
            label,
            authorize_url: sign_in.authorize_url.to_string(),
            pending,
        });
        Err(AuthFault::NeedsLink)
    }
}

#[async_trait::async_trait]
impl Tokens for LinkedTokenSource {
    async fn cached(&self) -> Option<Secret> {
        match self.held().await {
            Ok(Some(tokens)) if tokens.access.fresh() => Some(tokens.access.value),
            Ok(_) => None,
            Err(e) => {
                tracing::warn!(error = %e, "an account link could not be read");
                None
            }
        }
    }

    async fn renew(
        &self,
        stale: Option<&Secret>,
        challenge: &Challenge,
    ) -> Result<Secret, AuthFault> {
        let _one = self.renewing.lock().await;
        let held = self.held().await?;
        if let Some(tokens) = &held
            && tokens.access.fresh()
            && stale.is_none_or(|s| s.expose() != tokens.access.value.expose())
        {
            return Ok(tokens.access.value.clone());
        }
        if !challenge.is_insufficient_scope()
            && let Some(tokens) = &held
            && tokens.refresh.is_some()
        {
            match super::user::refresh(&self.http, tokens).await {
                Ok(renewed) => {
                    let text = keep_text(&renewed)?;
                    self.links
                        .keep(&self.principal, &self.server, &text)
                        .await
                        .map_err(AuthFault::Credentials)?;
                    return Ok(renewed.access.value);
                }
                // A refresh token can be revoked or expire: the user signs in again.
                Err(e) => {
                    tracing::info!(error = %e, "a link's refresh token was refused; asking the user to sign in again")
                }
            }
        }
        let scopes = held.map(|t| t.scopes).unwrap_or_default();
        self.ask_for_link(challenge, &scopes).await
    }

    fn take_needed(&self) -> Option<LinkNeeded> {
        self.needed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}
