//! Client assertions for `private_key_jwt` (RFC 7523 §2.2): a short-lived JWT naming the
//! client, signed with its private key (ring, already the process's crypto provider).

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{self, EcdsaKeyPair, RsaKeyPair};
use rustls::pki_types::PrivatePkcs8KeyDer;
use rustls::pki_types::pem::PemObject;
use serde_json::json;

/// How long an assertion is valid: long enough for one token request.
const LIFETIME_SECS: u64 = 60;

/// The signing algorithms a client key may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Algorithm {
    Es256,
    Es384,
    Rs256,
}

impl Algorithm {
    pub(crate) const NAMES: &'static str = "ES256, ES384, RS256";

    pub(crate) fn parse(name: &str) -> Option<Self> {
        match name {
            "ES256" => Some(Algorithm::Es256),
            "ES384" => Some(Algorithm::Es384),
            "RS256" => Some(Algorithm::Rs256),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Algorithm::Es256 => "ES256",
            Algorithm::Es384 => "ES384",
            Algorithm::Rs256 => "RS256",
        }
    }
}

/// A client's signing key, loaded from PKCS#8 PEM.
pub(crate) enum SigningKey {
    Ecdsa(EcdsaKeyPair, Algorithm),
    Rsa(RsaKeyPair),
}

impl SigningKey {
    /// Loads `pem` (a PKCS#8 `PRIVATE KEY`) for `algorithm`.
    ///
    /// # Errors
    /// A plain reason (never key material).
    pub(crate) fn from_pem(pem: &str, algorithm: Algorithm) -> Result<Self, String> {
        let der = PrivatePkcs8KeyDer::from_pem_slice(pem.as_bytes()).map_err(|_| {
            "the private key is not a PKCS#8 PEM key (BEGIN PRIVATE KEY)".to_owned()
        })?;
        let rng = SystemRandom::new();
        let rejected = |e: ring::error::KeyRejected| {
            format!("the private key does not fit {}: {e}", algorithm.name())
        };
        match algorithm {
            Algorithm::Es256 => EcdsaKeyPair::from_pkcs8(
                &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
                der.secret_pkcs8_der(),
                &rng,
            )
            .map(|k| SigningKey::Ecdsa(k, algorithm))
            .map_err(rejected),
            Algorithm::Es384 => EcdsaKeyPair::from_pkcs8(
                &signature::ECDSA_P384_SHA384_FIXED_SIGNING,
                der.secret_pkcs8_der(),
                &rng,
            )
            .map(|k| SigningKey::Ecdsa(k, algorithm))
            .map_err(rejected),
            Algorithm::Rs256 => RsaKeyPair::from_pkcs8(der.secret_pkcs8_der())
                .map(SigningKey::Rsa)
                .map_err(rejected),
        }
    }

    fn algorithm(&self) -> Algorithm {
        match self {
            SigningKey::Ecdsa(_, algorithm) => *algorithm,
            SigningKey::Rsa(_) => Algorithm::Rs256,
        }
    }

    /// A signed assertion: `client_id` as issuer and subject, `audience` (the
    /// authorization server's issuer) as audience, a random id and a one-minute life.
    ///
    /// # Errors
    /// Only when the system's random source or the signer fails.
    pub(crate) fn assertion(&self, client_id: &str, audience: &str) -> Result<String, String> {
        let rng = SystemRandom::new();
        let mut id = [0u8; 16];
        rng.fill(&mut id)
            .map_err(|_| "no randomness for the assertion".to_owned())?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let header = json!({"alg": self.algorithm().name(), "typ": "JWT"});
        let claims = json!({
            "iss": client_id,
            "sub": client_id,
            "aud": audience,
            "jti": URL_SAFE_NO_PAD.encode(id),
            "iat": now,
            "exp": now + LIFETIME_SECS,
        });
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = match self {
            SigningKey::Ecdsa(key, _) => key
                .sign(&rng, signing_input.as_bytes())
                .map_err(|_| "signing the assertion failed".to_owned())?
                .as_ref()
                .to_vec(),
            SigningKey::Rsa(key) => {
                let mut out = vec![0; key.public().modulus_len()];
                key.sign(
                    &signature::RSA_PKCS1_SHA256,
                    &rng,
                    signing_input.as_bytes(),
                    &mut out,
                )
                .map_err(|_| "signing the assertion failed".to_owned())?;
                out
            }
        };
        Ok(format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(signature)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(part: &str) -> serde_json::Value {
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).unwrap()).unwrap()
    }

    #[test]
    fn an_es256_assertion_verifies_with_the_public_key() {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let signer = SigningKey::from_pem(&key.serialize_pem(), Algorithm::Es256).unwrap();
        let jwt = signer.assertion("client-1", "https://as.example").unwrap();
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        assert_eq!(decode(parts[0])["alg"], "ES256");
        let claims = decode(parts[1]);
        assert_eq!(claims["iss"], "client-1");
        assert_eq!(claims["sub"], "client-1");
        assert_eq!(claims["aud"], "https://as.example");
        assert!(claims["exp"].as_u64().unwrap() > claims["iat"].as_u64().unwrap());
        let public = signature::UnparsedPublicKey::new(
            &signature::ECDSA_P256_SHA256_FIXED,
            key.public_key_raw(),
        );
        let signed = format!("{}.{}", parts[0], parts[1]);
        public
            .verify(
                signed.as_bytes(),
                &URL_SAFE_NO_PAD.decode(parts[2]).unwrap(),
            )
            .unwrap();
    }

    #[test]
    fn a_key_of_another_kind_or_no_key_is_refused_plainly() {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let e = SigningKey::from_pem(&key.serialize_pem(), Algorithm::Rs256)
            .err()
            .unwrap();
        assert!(e.contains("does not fit RS256"), "{e}");
        let e = SigningKey::from_pem("not a key", Algorithm::Es256)
            .err()
            .unwrap();
        assert!(e.contains("not a PKCS#8 PEM key"), "{e}");
    }
}
