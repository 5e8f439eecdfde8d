//! The principal: on whose behalf a turn runs (D-29, D-30).

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// An authenticated user or service id. Built only from the auth context, never from a
/// request body.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Principal(Arc<str>);

/// Why a string cannot be a principal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a principal must be 1 to 128 visible characters without spaces")]
pub struct InvalidPrincipal;

impl Principal {
    /// Validates and wraps a principal id.
    ///
    /// # Errors
    /// Empty, longer than 128 characters, or containing whitespace or control characters.
    pub fn new(id: &str) -> Result<Self, InvalidPrincipal> {
        let ok = !id.is_empty()
            && id.chars().count() <= 128
            && id.chars().all(|c| !c.is_whitespace() && !c.is_control());
        if ok {
            Ok(Principal(Arc::from(id)))
        } else {
            Err(InvalidPrincipal)
        }
    }

    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The episode id of this principal's conversation `conversation`, a client's own id
    /// for it (an AG-UI thread): `ep_` and 32 hex digits of a hash of both, so that two
    /// principals naming the same conversation never meet on one episode.
    pub fn episode_for(&self, conversation: &str) -> String {
        use sha2::{Digest, Sha256};
        let mut hasher = Sha256::new();
        hasher.update(self.0.as_bytes());
        // A separator keeps ("ab", "c") apart from ("a", "bc").
        hasher.update([0u8]);
        hasher.update(conversation.as_bytes());
        hex_onto(String::from("ep_"), &hasher.finalize()[..16])
    }

    /// A stable pseudonym for places that must tell principals apart without naming them
    /// (exported traces): the first 64 bits of the id's SHA-256, in hex.
    pub fn pseudonym(&self) -> String {
        use sha2::{Digest, Sha256};
        hex_onto(
            String::with_capacity(16),
            &Sha256::digest(self.0.as_bytes())[..8],
        )
    }
}

/// `bytes` in lower-case hex, after `out`.
/// `out` followed by `bytes` in lower-case hex (the core's one hex writer).
pub(crate) fn hex_onto(mut out: String, bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    for b in bytes {
        // Writing to a String cannot fail.
        let _ = write!(out, "{b:02x}");
    }
    out
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pseudonym_is_stable_and_does_not_name_the_principal() {
        let alice = Principal::new("alice@example.com").unwrap();
        assert_eq!(
            alice.pseudonym(),
            Principal::new("alice@example.com").unwrap().pseudonym()
        );
        assert_eq!(alice.pseudonym().len(), 16);
        assert!(!alice.pseudonym().contains("alice"));
        assert_ne!(
            alice.pseudonym(),
            Principal::new("bob").unwrap().pseudonym()
        );
    }

    #[test]
    fn a_conversations_episode_is_the_callers_own_and_a_valid_id() {
        let alice = Principal::new("alice").unwrap();
        let episode = alice.episode_for("thread-1");
        assert_eq!(episode, alice.episode_for("thread-1"));
        assert_eq!(episode.len(), 3 + 32);
        assert!(episode.starts_with("ep_"));
        assert!(episode[3..].chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(
            episode,
            Principal::new("bob").unwrap().episode_for("thread-1")
        );
        assert_ne!(episode, alice.episode_for("thread-2"));
        // The separator keeps the two parts apart.
        assert_ne!(
            Principal::new("ab").unwrap().episode_for("c"),
            Principal::new("a").unwrap().episode_for("bc")
        );
    }
}
