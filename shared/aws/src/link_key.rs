//! The account links' key on Lambda (D-37): a 32-byte data key made once with KMS, kept in
//! the function's configuration only as its ciphertext (`BATON_LINK_KEY_KMS`), and
//! decrypted once at Init. The key never leaves memory; KMS is asked nothing on a turn.
//!
//! ```sh
//! aws kms generate-data-key --key-id alias/baton-links --number-of-bytes 32 \
//!   --encryption-context baton=link-key --query CiphertextBlob --output text
//! ```

use aws_config::SdkConfig;
use aws_sdk_kms::error::DisplayErrorContext;
use aws_sdk_kms::primitives::Blob;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

/// The encryption context the data key is made and decrypted under: a ciphertext made for
/// anything else does not decrypt as the link key.
pub const ENCRYPTION_CONTEXT: (&str, &str) = ("baton", "link-key");

/// Why the link key could not be had. Never holds the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkKeyError {
    /// The configured ciphertext is not base64.
    #[error("BATON_LINK_KEY_KMS is not base64 (give the CiphertextBlob of a KMS data key)")]
    NotBase64,
    /// KMS refused or could not be reached.
    #[error(
        "KMS could not decrypt BATON_LINK_KEY_KMS (made with encryption context baton=link-key? allowed by the role?): {0}"
    )]
    Kms(String),
    /// KMS answered with a key of another length.
    #[error("BATON_LINK_KEY_KMS holds a {0}-byte key; make it with --number-of-bytes 32")]
    Length(usize),
}

/// The link key in `ciphertext` (base64 of a KMS data key's `CiphertextBlob`), decrypted
/// by KMS with the clients' settings.
///
/// # Errors
/// See [`LinkKeyError`].
pub async fn decrypt(sdk: &SdkConfig, ciphertext: &str) -> Result<Vec<u8>, LinkKeyError> {
    let blob = STANDARD
        .decode(ciphertext.trim())
        .map_err(|_| LinkKeyError::NotBase64)?;
    let kms = aws_sdk_kms::Client::new(sdk);
    let (name, value) = ENCRYPTION_CONTEXT;
    let answer = kms
        .decrypt()
        .ciphertext_blob(Blob::new(blob))
        .encryption_context(name, value)
        .send()
        .await
        .map_err(|e| LinkKeyError::Kms(DisplayErrorContext(&e).to_string()))?;
    let key = answer
        .plaintext()
        .map(|p| p.as_ref().to_vec())
        .unwrap_or_default();
    if key.len() != 32 {
        return Err(LinkKeyError::Length(key.len()));
    }
    Ok(key)
}
