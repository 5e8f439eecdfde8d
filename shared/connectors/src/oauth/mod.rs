//! OAuth 2.1 as the MCP authorization spec describes it, for the connectors that call
//! protected resources: a client acting as itself (`client.rs`, the client-credentials
//! grant) or a user's own sign-in (`user.rs`, the authorization-code grant with PKCE;
//! `linked.rs` keeps it per principal as an account link), both found from the resource's challenge (`challenge.rs`, `discovery.rs`) and both
//! getting their tokens through one request and answer (`token.rs`).

mod assertion;
mod audience;
mod challenge;
mod client;
mod discovery;
mod linked;
mod token;
mod user;

use serde_json::Value;

pub(crate) use crate::error::AuthFault;
use crate::secrets::{Secret, Secrets};
pub(crate) use challenge::Challenge;
pub(crate) use client::{OAuthSpec, TokenSource};
pub(crate) use linked::{LinkedTokenSource, finish_link};
pub(crate) use token::read_json;
pub(crate) use user::{UserSpec, UserTokenSource};

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

    /// The sign-in a renewal started because the user must connect their account, once.
    fn take_needed(&self) -> Option<baton_core::ports::connector::LinkNeeded> {
        None
    }
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
pub(super) fn settings<'v>(
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
pub(super) fn parse_scopes(
    field: &str,
    value: Option<&Value>,
) -> Result<Option<Vec<String>>, String> {
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
