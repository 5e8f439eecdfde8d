//! Where each body goes (inline in its BODY item, or an S3 object the item references)
//! and the S3 requests for the large ones.

use aws_sdk_s3::primitives::ByteStream;
use baton_core::ports::store::{Body, StoreError};
use futures::future::try_join_all;

use super::store::DynamoStore;
use super::{errors, keys};

/// Where one body of a commit is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Placement {
    /// In the BODY item's `json` attribute.
    Inline,
    /// In S3 under this object key; the BODY item's `s3_key` names it.
    Object(String),
}

/// Places each body: inline up to the configured limit, else an object under
/// `bodies/<episode>/<turn_id>/<n>.json` (`n` is the body's index in the commit, so a
/// retried commit writes the same objects again rather than new ones).
pub(crate) fn place(
    store: &DynamoStore,
    episode_id: &str,
    turn_id: &str,
    bodies: &[Body],
) -> Vec<Placement> {
    bodies
        .iter()
        .enumerate()
        .map(|(n, body)| {
            if body.json.len() <= store.config.inline_body_limit() {
                Placement::Inline
            } else {
                Placement::Object(keys::body_object_key(episode_id, turn_id, n))
            }
        })
        .collect()
}

/// Writes every object-placed body to S3, concurrently. Any failure fails the lot: the
/// caller then writes nothing to the table.
pub(crate) async fn put_all(
    store: &DynamoStore,
    bodies: &[Body],
    placements: &[Placement],
) -> Result<(), StoreError> {
    let puts = bodies
        .iter()
        .zip(placements)
        .filter_map(|(body, placement)| match placement {
            Placement::Object(key) => Some(put(store, key, body)),
            Placement::Inline => None,
        });
    try_join_all(puts).await.map(|_| ())
}

async fn put(store: &DynamoStore, key: &str, body: &Body) -> Result<(), StoreError> {
    store
        .s3
        .put_object()
        .bucket(store.config.bucket())
        .key(key)
        .content_type("application/json")
        .body(ByteStream::from(body.json.clone().into_bytes()))
        .send()
        .await
        .map_err(|e| errors::sdk("storing a large body", &e))?;
    Ok(())
}

/// Reads one object-placed body back as text (1 GetObject).
pub(crate) async fn get(store: &DynamoStore, key: &str) -> Result<String, StoreError> {
    let output = store
        .s3
        .get_object()
        .bucket(store.config.bucket())
        .key(key)
        .send()
        .await
        .map_err(|e| {
            if e.as_service_error().is_some_and(|se| se.is_no_such_key()) {
                errors::undecodable("a body object (missing)", &key)
            } else {
                errors::sdk("reading a large body", &e)
            }
        })?;
    let bytes = output.body.collect().await.map_err(|e| {
        tracing::warn!(error = %e, key, "journal: reading a body object was cut off");
        StoreError::Unavailable(errors::UNREACHABLE.into())
    })?;
    String::from_utf8(bytes.into_bytes().to_vec())
        .map_err(|e| errors::undecodable("a body object", &e))
}
