//! Account links (D-37): a principal's own authorization of a server that acts for them.
//! The keeper seals what a connector keeps (tokens) under the link key before the store
//! sees it, seals a sign-in's `state` so that only this runtime can finish it, and finishes
//! it at the callback: the state names the principal, the server and the tool, expires,
//! and is spent once (a link made by it remembers its nonce).
//!
//! A sign-in page works for whoever opens it, so a link the callback makes is pending: the
//! page shows a one-time code, and only the conversation that asked, given that code,
//! makes the link usable (`confirm`). A victim who signs in at an attacker's page sees the
//! code, and the attacker's conversation never gets it: nothing of the victim's is ever
//! served to the attacker. A wrong code drops the pending link.

use std::sync::Arc;

use async_trait::async_trait;
use baton_core::Principal;
use baton_core::ports::clock::Clock;
use baton_core::ports::connector::{AccountLinks, Connector, ConnectorError, LinkNeeded};
use baton_core::ports::store::{AccountLink, Store};
use serde::{Deserialize, Serialize};

use crate::seal::Sealer;

/// How long a sign-in page may take before its state is refused, ms.
pub const SIGN_IN_TTL_MS: u64 = 15 * 60 * 1000;

/// Why a link could not be made, read or removed: what the user is shown. The detail (a
/// store's or an authorization server's words) goes to the log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    /// No link key is configured.
    #[error("This Baton keeps no account links: no link key is configured.")]
    NotOffered,
    /// The state is not one this runtime sealed, or it was changed.
    #[error(
        "This sign-in is not one of ours, or it was changed. Nothing was stored; start again from the conversation."
    )]
    BadState,
    /// The sign-in took too long.
    #[error("This sign-in has expired. Nothing was stored; start again from the conversation.")]
    Expired,
    /// The same sign-in came back again.
    #[error("This sign-in has already finished. Nothing else was stored.")]
    AlreadyDone,
    /// The tool it was for is no longer served.
    #[error("The tool this sign-in was for is no longer available. Nothing was stored.")]
    UnknownTool,
    /// The authorization server (or the user) said no.
    #[error("The sign-in did not complete: {0}. Nothing was stored.")]
    Refused(String),
    /// The authorization server could not be reached.
    #[error("The sign-in service could not be reached. Nothing was stored; try again in a moment.")]
    Unreachable,
    /// The store failed.
    #[error("Your account links cannot be reached right now; try again in a moment.")]
    Store,
    /// The code given in the conversation is not the one the sign-in page showed.
    #[error(
        "That code does not match the sign-in, so the account was not connected. Sign in again to connect it."
    )]
    WrongCode,
}

/// What a link keeps, sealed: the connector's text and the nonce of the sign-in that made
/// it.
#[derive(Serialize, Deserialize)]
struct Kept {
    #[serde(default)]
    n: String,
    t: String,
    /// While the link waits for its code: the code's SHA-256. A pending link serves no
    /// call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    c: Option<String>,
}

/// A sign-in under way, sealed into its `state`.
#[derive(Serialize, Deserialize)]
struct SignInState {
    /// The principal.
    p: String,
    /// The server (the link's key).
    s: String,
    /// The tool whose connector finishes it.
    t: String,
    /// The connector's pending sign-in.
    k: String,
    /// A nonce: a link made by this sign-in remembers it.
    n: String,
    /// Expiry, epoch ms.
    x: u64,
}

/// A sign-in finished: the link it made waits for `code` in the conversation of
/// `principal`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Linked {
    /// Whose.
    pub principal: Principal,
    /// To which server.
    pub server: String,
    /// The one-time code that makes the link usable, shown to whoever signed in.
    pub code: String,
}

/// Seals, keeps and finishes account links.
pub(crate) struct LinkKeeper {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) sealer: Arc<Sealer>,
    pub(crate) clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for LinkKeeper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkKeeper").finish_non_exhaustive()
    }
}

impl LinkKeeper {
    async fn kept(&self, principal: &Principal, server: &str) -> Result<Option<Kept>, String> {
        let Some(link) = self
            .store
            .link(principal, server)
            .await
            .map_err(|e| format!("the account links cannot be read: {e}"))?
        else {
            return Ok(None);
        };
        let opened = self
            .sealer
            .open(principal, server, &link.sealed)
            .map_err(|e| e.to_string())?;
        serde_json::from_slice(&opened)
            .map(Some)
            .map_err(|_| "an account link holds something unreadable".to_owned())
    }

    async fn save(&self, principal: &Principal, server: &str, kept: &Kept) -> Result<(), String> {
        let text = serde_json::to_vec(kept).map_err(|e| e.to_string())?;
        let sealed = self
            .sealer
            .seal(principal, server, &text)
            .map_err(|e| e.to_string())?;
        self.store
            .save_link(
                principal,
                &AccountLink {
                    server: server.to_owned(),
                    sealed,
                    updated_ms: self.clock.now_ms(),
                },
            )
            .await
            .map_err(|e| format!("the account link cannot be saved: {e}"))
    }

    /// Whether `link` (one of `principal`'s, as stored) is connected: it opens, and does
    /// not wait for its sign-in's code.
    pub(crate) fn connected(&self, principal: &Principal, link: &AccountLink) -> bool {
        self.sealer
            .open(principal, &link.server, &link.sealed)
            .ok()
            .and_then(|opened| serde_json::from_slice::<Kept>(&opened).ok())
            .is_some_and(|kept| kept.c.is_none())
    }

    /// The page `principal` signs in at for `needed`, started by `tool_id`'s connector: its
    /// URL with a sealed state.
    pub(crate) fn sign_in_url(
        &self,
        principal: &Principal,
        tool_id: &str,
        needed: &LinkNeeded,
    ) -> Result<String, String> {
        let state = SignInState {
            p: principal.as_str().to_owned(),
            s: needed.server.clone(),
            t: tool_id.to_owned(),
            k: needed.pending.clone(),
            n: uuid::Uuid::new_v4().simple().to_string(),
            x: self.clock.now_ms().saturating_add(SIGN_IN_TTL_MS),
        };
        let text = serde_json::to_vec(&state).map_err(|e| e.to_string())?;
        let sealed = self.sealer.seal_state(&text).map_err(|e| e.to_string())?;
        let mut url = parse_url(&needed.authorize_url)?;
        url.query_pairs_mut().append_pair("state", &sealed);
        Ok(url.into())
    }

    /// Finishes the sign-in whose sealed `state` came back with `code` (or the
    /// authorization server's `error`): the connector of the tool it names exchanges the
    /// code, and the link is kept for the principal it names.
    pub(crate) async fn finish(
        &self,
        connector_of: impl Fn(&str) -> Option<(Arc<dyn Connector>, Arc<serde_json::Value>)>,
        state: &str,
        code: Option<&str>,
        error: Option<&str>,
    ) -> Result<Linked, LinkError> {
        let opened = self
            .sealer
            .open_state(state)
            .map_err(|_| LinkError::BadState)?;
        let state: SignInState =
            serde_json::from_slice(&opened).map_err(|_| LinkError::BadState)?;
        let principal = Principal::new(&state.p).map_err(|_| LinkError::BadState)?;
        if self.clock.now_ms() >= state.x {
            return Err(LinkError::Expired);
        }
        let kept = self.kept(&principal, &state.s).await.map_err(|e| {
            tracing::warn!(error = %e, "an account link could not be read at the callback");
            LinkError::Store
        })?;
        if kept.is_some_and(|k| k.n == state.n) {
            return Err(LinkError::AlreadyDone);
        }
        if let Some(error) = error {
            let said = match error {
                "access_denied" => "access was not granted".to_owned(),
                other => format!("the sign-in service answered {}", clip(other)),
            };
            return Err(LinkError::Refused(said));
        }
        let code = code
            .filter(|c| !c.is_empty())
            .ok_or_else(|| LinkError::Refused("the sign-in came back without a code".to_owned()))?;
        let (connector, config) = connector_of(&state.t).ok_or(LinkError::UnknownTool)?;
        let text = connector
            .finish_link(&config, &state.k, code)
            .await
            .map_err(|e| {
                tracing::warn!(tool = %state.t, error = %e, "a sign-in could not be finished");
                match e {
                    ConnectorError::Unavailable(_) => LinkError::Unreachable,
                    ConnectorError::InvalidEnvelope(why)
                    | ConnectorError::Config(why)
                    | ConnectorError::AlreadyActed(why) => {
                        LinkError::Refused(why.trim_start_matches("authorization: ").to_owned())
                    }
                    ConnectorError::NeedsLink(_) => {
                        LinkError::Refused("the service asked to sign in again".to_owned())
                    }
                    ConnectorError::NeedsInput(_) => {
                        LinkError::Refused("the service asked a question instead".to_owned())
                    }
                }
            })?;
        let code = new_code();
        self.save(
            &principal,
            &state.s,
            &Kept {
                n: state.n,
                t: text,
                c: Some(code_hash(&code)),
            },
        )
        .await
        .map_err(|e| {
            tracing::warn!(error = %e, "an account link could not be saved");
            LinkError::Store
        })?;
        tracing::info!(principal = %principal.as_str(), server = %state.s, "an account was signed in; the link waits for its code");
        Ok(Linked {
            principal,
            server: state.s,
            code,
        })
    }

    /// Makes `principal`'s pending link to `server` usable with the `code` its sign-in
    /// page showed. A link already confirmed stays so (a resume run again after a crash);
    /// a wrong code, or none pending, drops it.
    ///
    /// # Errors
    /// [`LinkError::WrongCode`], or the store failed.
    pub(crate) async fn confirm(
        &self,
        principal: &Principal,
        server: &str,
        code: &str,
    ) -> Result<(), LinkError> {
        let store_failed = |e: String| {
            tracing::warn!(error = %e, "an account link could not be confirmed");
            LinkError::Store
        };
        let kept = self.kept(principal, server).await.map_err(store_failed)?;
        match kept {
            Some(Kept { c: None, .. }) => Ok(()),
            Some(Kept {
                n,
                t,
                c: Some(hash),
            }) if baton_core::interruption::link_code(code)
                .is_some_and(|given| code_hash(&given) == hash) =>
            {
                self.save(principal, server, &Kept { n, t, c: None })
                    .await
                    .map_err(store_failed)?;
                tracing::info!(principal = %principal.as_str(), %server, "an account was connected");
                Ok(())
            }
            _ => {
                tracing::warn!(principal = %principal.as_str(), %server, "a wrong code was given for an account link; the pending link is dropped");
                self.store
                    .delete_link(principal, server)
                    .await
                    .map_err(|e| store_failed(e.to_string()))?;
                Err(LinkError::WrongCode)
            }
        }
    }
}

#[async_trait]
impl AccountLinks for LinkKeeper {
    async fn open(&self, principal: &Principal, server: &str) -> Result<Option<String>, String> {
        // A link that waits for its code serves nothing yet.
        Ok(self
            .kept(principal, server)
            .await?
            .filter(|k| k.c.is_none())
            .map(|k| k.t))
    }

    async fn keep(
        &self,
        principal: &Principal,
        server: &str,
        contents: &str,
    ) -> Result<(), String> {
        // A renewal keeps the nonce of the sign-in that made the link.
        let n = self
            .kept(principal, server)
            .await
            .ok()
            .flatten()
            .map(|k| k.n)
            .unwrap_or_default();
        self.save(
            principal,
            server,
            &Kept {
                n,
                t: contents.to_owned(),
                c: None,
            },
        )
        .await
    }
}

/// A new confirmation code: [`LINK_CODE_DIGITS`](baton_core::interruption::LINK_CODE_DIGITS)
/// random digits.
fn new_code() -> String {
    let random = uuid::Uuid::new_v4().as_u128();
    let modulus = 10u128.pow(baton_core::interruption::LINK_CODE_DIGITS as u32);
    format!(
        "{:0width$}",
        random % modulus,
        width = baton_core::interruption::LINK_CODE_DIGITS
    )
}

/// What a pending link keeps of its code.
fn code_hash(code: &str) -> String {
    baton_core::interruption::args_sha256(&serde_json::Value::String(code.to_owned()))
}

/// `text` as a URL (the connector made it; a broken one is its error).
fn parse_url(text: &str) -> Result<url::Url, String> {
    url::Url::parse(text).map_err(|_| "the sign-in page is not a URL".to_owned())
}

/// At most 200 characters of a server's words.
fn clip(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).take(200).collect()
}
