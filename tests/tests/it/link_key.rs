//! The account links' key on Lambda (D-37), against moto's KMS: a data key made under the
//! links' encryption context decrypts to that key, which seals and opens links; a
//! ciphertext made under another context, one of another length, or text that is not
//! base64 is a plain error naming the setting.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use baton_aws::link_key::{LinkKeyError, decrypt};
use baton_core::Principal;
use baton_runtime::Sealer;

use crate::secrets::Moto;

#[tokio::test]
async fn the_link_key_is_a_kms_data_key_decrypted_under_its_context() {
    let moto = Moto::start().await;
    let kms = aws_sdk_kms::Client::new(&moto.sdk);
    let key_id = kms
        .create_key()
        .send()
        .await
        .unwrap()
        .key_metadata()
        .unwrap()
        .key_id()
        .to_owned();
    let data_key = |bytes: i32, context: &'static str| {
        let kms = kms.clone();
        let key_id = key_id.clone();
        async move {
            let made = kms
                .generate_data_key()
                .key_id(key_id)
                .number_of_bytes(bytes)
                .encryption_context("baton", context)
                .send()
                .await
                .unwrap();
            (
                made.plaintext().unwrap().as_ref().to_vec(),
                STANDARD.encode(made.ciphertext_blob().unwrap().as_ref()),
            )
        }
    };

    let (plain, ciphertext) = data_key(32, "link-key").await;
    let key = decrypt(&moto.sdk, &ciphertext).await.unwrap();
    assert_eq!(key, plain);
    // What the decrypted key seals, the key KMS made opens.
    let alice = Principal::new("alice").unwrap();
    let sealed = Sealer::new(&key)
        .unwrap()
        .seal(&alice, "https://partner.example/mcp", b"tokens")
        .unwrap();
    assert_eq!(
        Sealer::new(&plain)
            .unwrap()
            .open(&alice, "https://partner.example/mcp", &sealed),
        Ok(b"tokens".to_vec())
    );

    let (_, other_context) = data_key(32, "something-else").await;
    let refused = decrypt(&moto.sdk, &other_context).await;
    assert!(matches!(refused, Err(LinkKeyError::Kms(_))), "{refused:?}");
    let (_, short) = data_key(16, "link-key").await;
    assert_eq!(
        decrypt(&moto.sdk, &short).await,
        Err(LinkKeyError::Length(16))
    );
    assert_eq!(
        decrypt(&moto.sdk, "not base64!").await,
        Err(LinkKeyError::NotBase64)
    );
    let message = LinkKeyError::Length(16).to_string();
    assert!(message.contains("BATON_LINK_KEY_KMS"), "{message}");
}
