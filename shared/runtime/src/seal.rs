//! Sealing what a store keeps but must never be able to use (D-37): an account link's tokens
//! are encrypted and authenticated (AES-256-GCM) under a key the store never sees, and bound
//! to their principal and server, so that a sealed value copied into another principal's
//! row, or another server's, does not open.
//!
//! A sealed value is `v1.` and the base64url of a fresh 96-bit nonce followed by the
//! ciphertext and its tag.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use baton_core::Principal;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom as _, SystemRandom};

/// The version tag in front of every sealed value.
const VERSION: &str = "v1.";
/// What a sign-in's state is bound to: nothing a link is (a link's data begins
/// `baton-link/`), so neither opens as the other.
const STATE_AAD: &[u8] = b"baton-link-state/v1";

/// Why sealing or opening failed. Never holds the key or the plaintext.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    /// The key is not 32 bytes (base64 of them, when given as text).
    #[error("the link key must be 32 bytes, written in base64")]
    BadKey,
    /// The system gave no randomness for a nonce.
    #[error("no randomness to seal with")]
    Randomness,
    /// Not a value this key sealed for this principal and server (another key, another
    /// owner, or changed).
    #[error("the sealed value does not open with this key for this principal and server")]
    Unopenable,
}

/// Seals and opens with one key.
pub struct Sealer {
    key: LessSafeKey,
    random: SystemRandom,
}

impl fmt::Debug for Sealer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The key is never shown.
        f.debug_struct("Sealer").finish_non_exhaustive()
    }
}

impl Sealer {
    /// A sealer with the 32-byte `key`.
    ///
    /// # Errors
    /// [`SealError::BadKey`] for any other length.
    pub fn new(key: &[u8]) -> Result<Self, SealError> {
        let unbound = UnboundKey::new(&AES_256_GCM, key).map_err(|_| SealError::BadKey)?;
        Ok(Sealer {
            key: LessSafeKey::new(unbound),
            random: SystemRandom::new(),
        })
    }

    /// A sealer with the key written in (standard) base64, as configuration holds it.
    ///
    /// # Errors
    /// [`SealError::BadKey`] when it is not base64 of 32 bytes.
    pub fn from_base64(text: &str) -> Result<Self, SealError> {
        let key = STANDARD
            .decode(text.trim())
            .map_err(|_| SealError::BadKey)?;
        Self::new(&key)
    }

    /// A new random key, in base64, for configuration to hold.
    ///
    /// # Errors
    /// [`SealError::Randomness`] when the system gives none.
    pub fn new_key() -> Result<String, SealError> {
        let mut key = [0u8; 32];
        SystemRandom::new()
            .fill(&mut key)
            .map_err(|_| SealError::Randomness)?;
        Ok(STANDARD.encode(key))
    }

    /// `plaintext` sealed for `principal`'s link to `server`.
    ///
    /// # Errors
    /// [`SealError::Randomness`] when no nonce can be drawn.
    pub fn seal(
        &self,
        principal: &Principal,
        server: &str,
        plaintext: &[u8],
    ) -> Result<String, SealError> {
        self.seal_with(bound_to(principal, server), plaintext)
    }

    /// `plaintext` sealed as a sign-in's `state` (D-37): it travels through the user's
    /// browser and comes back to the callback, which alone can read it.
    ///
    /// # Errors
    /// [`SealError::Randomness`] when no nonce can be drawn.
    pub fn seal_state(&self, plaintext: &[u8]) -> Result<String, SealError> {
        self.seal_with(STATE_AAD.to_vec(), plaintext)
    }

    /// What a sign-in's `state` holds, if this key sealed it as one.
    ///
    /// # Errors
    /// [`SealError::Unopenable`] otherwise.
    pub fn open_state(&self, sealed: &str) -> Result<Vec<u8>, SealError> {
        self.open_with(STATE_AAD.to_vec(), sealed)
    }

    fn seal_with(&self, aad: Vec<u8>, plaintext: &[u8]) -> Result<String, SealError> {
        let mut nonce = [0u8; NONCE_LEN];
        self.random
            .fill(&mut nonce)
            .map_err(|_| SealError::Randomness)?;
        let mut sealed = plaintext.to_vec();
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad),
                &mut sealed,
            )
            .map_err(|_| SealError::Randomness)?;
        let mut out = Vec::with_capacity(NONCE_LEN + sealed.len());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        Ok(format!("{VERSION}{}", URL_SAFE_NO_PAD.encode(out)))
    }

    /// What `sealed` holds, if this key sealed it for `principal`'s link to `server`.
    ///
    /// # Errors
    /// [`SealError::Unopenable`] otherwise.
    pub fn open(
        &self,
        principal: &Principal,
        server: &str,
        sealed: &str,
    ) -> Result<Vec<u8>, SealError> {
        self.open_with(bound_to(principal, server), sealed)
    }

    fn open_with(&self, aad: Vec<u8>, sealed: &str) -> Result<Vec<u8>, SealError> {
        let body = sealed.strip_prefix(VERSION).ok_or(SealError::Unopenable)?;
        let mut bytes = URL_SAFE_NO_PAD
            .decode(body)
            .map_err(|_| SealError::Unopenable)?;
        if bytes.len() < NONCE_LEN {
            return Err(SealError::Unopenable);
        }
        let mut ciphertext = bytes.split_off(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(&bytes).map_err(|_| SealError::Unopenable)?;
        let opened = self
            .key
            .open_in_place(nonce, Aad::from(aad), &mut ciphertext)
            .map_err(|_| SealError::Unopenable)?;
        Ok(opened.to_vec())
    }
}

/// The associated data a value is bound to: its principal and server (a NUL between them,
/// which neither holds).
fn bound_to(principal: &Principal, server: &str) -> Vec<u8> {
    let mut aad = b"baton-link/v1\0".to_vec();
    aad.extend_from_slice(principal.as_str().as_bytes());
    aad.push(0);
    aad.extend_from_slice(server.as_bytes());
    aad
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(byte: u8) -> Sealer {
        Sealer::new(&[byte; 32]).unwrap()
    }

    fn alice() -> Principal {
        Principal::new("alice").unwrap()
    }

    #[test]
    fn a_sealed_value_opens_only_with_its_key_principal_and_server() {
        let sealer = key(7);
        let sealed = sealer
            .seal(&alice(), "https://files.example/mcp", b"{\"access\":\"t\"}")
            .unwrap();
        assert!(sealed.starts_with("v1."));
        assert!(!sealed.contains("access"));
        assert_eq!(
            sealer.open(&alice(), "https://files.example/mcp", &sealed),
            Ok(b"{\"access\":\"t\"}".to_vec())
        );
        let bob = Principal::new("bob").unwrap();
        for (who, server, with) in [
            (&bob, "https://files.example/mcp", &sealer),
            (&alice(), "https://other.example/mcp", &sealer),
            (&alice(), "https://files.example/mcp", &key(8)),
        ] {
            assert_eq!(with.open(who, server, &sealed), Err(SealError::Unopenable));
        }
        // Two seals of the same tokens differ (a fresh nonce each).
        let again = sealer
            .seal(&alice(), "https://files.example/mcp", b"{\"access\":\"t\"}")
            .unwrap();
        assert_ne!(sealed, again);
    }

    #[test]
    fn a_changed_or_malformed_value_does_not_open() {
        let sealer = key(7);
        let sealed = sealer.seal(&alice(), "s", b"tokens").unwrap();
        let mut changed = sealed.clone().into_bytes();
        let last = changed.len() - 2;
        changed[last] = if changed[last] == b'A' { b'B' } else { b'A' };
        let changed = String::from_utf8(changed).unwrap();
        for bad in [changed.as_str(), "v1.", "v1.!!", "v2.AAAA", "", "tokens"] {
            assert_eq!(
                sealer.open(&alice(), "s", bad),
                Err(SealError::Unopenable),
                "{bad}"
            );
        }
    }

    #[test]
    fn keys_are_thirty_two_bytes_of_base64() {
        assert!(Sealer::from_base64(&STANDARD.encode([1u8; 32])).is_ok());
        assert_eq!(
            Sealer::from_base64(&STANDARD.encode([1u8; 16])).err(),
            Some(SealError::BadKey)
        );
        assert_eq!(
            Sealer::from_base64("not base64").err(),
            Some(SealError::BadKey)
        );
        assert_eq!(format!("{:?}", key(9)), "Sealer { .. }");
    }

    #[test]
    fn a_state_and_a_link_do_not_open_as_each_other() {
        let sealer = key(7);
        let state = sealer.seal_state(b"sign-in").unwrap();
        assert_eq!(sealer.open_state(&state), Ok(b"sign-in".to_vec()));
        assert_eq!(
            sealer.open(&alice(), "s", &state),
            Err(SealError::Unopenable)
        );
        let link = sealer.seal(&alice(), "s", b"tokens").unwrap();
        assert_eq!(sealer.open_state(&link), Err(SealError::Unopenable));
        assert_eq!(key(8).open_state(&state), Err(SealError::Unopenable));
    }

    proptest::proptest! {
        #[test]
        fn any_text_opens_to_an_error_or_a_value_never_a_panic(text in "\\PC{0,80}") {
            let _ = key(3).open(&alice(), "s", &text);
        }
    }
}
