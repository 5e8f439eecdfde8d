//! Where each body goes (inline in its BODY item, or an S3 object the item references)
//! and the S3 requests for the large ones and for pictures (D-42), which are always
//! objects: a picture's bytes never go into an item, however small.

use aws_sdk_s3::primitives::ByteStream;
use baton_core::picture::{Bytes, Picture};
use baton_core::ports::store::{Body, StoreError};
use futures::future::try_join_all;

use super::config::DynamoStore;
use super::{error, keys};

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
    put_object(
        store,
        key,
        "application/json",
        &body.json,
        "storing a large body",
    )
    .await
}

/// Writes each picture to S3 under its episode and SHA-256, its media type as the
/// object's Content-Type, concurrently. Any failure fails the lot: the caller then writes
/// nothing to the table.
pub(crate) async fn put_pictures(
    store: &DynamoStore,
    episode_id: &str,
    pictures: &[&Picture],
) -> Result<(), StoreError> {
    let puts = pictures.iter().map(|picture| {
        put_bytes(
            store,
            keys::picture_object_key(episode_id, &picture.sha256),
            picture.media_type.as_str(),
            // Shared, not copied.
            ByteStream::from(picture.bytes.clone()),
            "storing a picture",
        )
    });
    try_join_all(puts).await.map(|_| ())
}

/// Writes `text` as the object `key` (1 PutObject); `doing` names the write in errors.
pub(crate) async fn put_object(
    store: &DynamoStore,
    key: &str,
    content_type: &str,
    text: &str,
    doing: &'static str,
) -> Result<(), StoreError> {
    put_bytes(
        store,
        key.to_owned(),
        content_type,
        ByteStream::from(text.as_bytes().to_vec()),
        doing,
    )
    .await
}

/// Writes `body` as the object `key` (1 PutObject).
async fn put_bytes(
    store: &DynamoStore,
    key: String,
    content_type: &str,
    body: ByteStream,
    doing: &'static str,
) -> Result<(), StoreError> {
    if baton_core::fault!("bodies.write") {
        return Err(baton_core::failpoint::store_fault("bodies.write"));
    }
    store
        .s3
        .put_object()
        .bucket(store.config.bucket())
        .key(key)
        .content_type(content_type)
        .body(body)
        .send()
        .await
        .map_err(|e| error::sdk(doing, &e))?;
    Ok(())
}

/// Reads one object-placed body back as text (1 GetObject).
pub(crate) async fn get(store: &DynamoStore, key: &str) -> Result<String, StoreError> {
    get_object(store, key, "reading a large body", "a body object")
        .await?
        .ok_or_else(|| error::undecodable("a body object (missing)", &key))
}

/// Reads the object `key` as text (1 GetObject); `None` when there is no such object.
/// `doing` names the read and `what` the object in errors.
pub(crate) async fn get_object(
    store: &DynamoStore,
    key: &str,
    doing: &'static str,
    what: &'static str,
) -> Result<Option<String>, StoreError> {
    let Some(bytes) = get_bytes(store, key, doing, what).await? else {
        return Ok(None);
    };
    String::from_utf8(Vec::from(bytes))
        .map(Some)
        .map_err(|e| error::undecodable(what, &e))
}

/// Reads the object `key` (1 GetObject); `None` when there is no such object. `doing`
/// names the read and `what` the object in errors.
pub(crate) async fn get_bytes(
    store: &DynamoStore,
    key: &str,
    doing: &'static str,
    what: &'static str,
) -> Result<Option<Bytes>, StoreError> {
    if baton_core::fault!("bodies.read") {
        return Err(baton_core::failpoint::store_fault("bodies.read"));
    }
    let output = match store
        .s3
        .get_object()
        .bucket(store.config.bucket())
        .key(key)
        .send()
        .await
    {
        Ok(output) => output,
        Err(e) if e.as_service_error().is_some_and(|se| se.is_no_such_key()) => return Ok(None),
        Err(e) => return Err(error::sdk(doing, &e)),
    };
    let bytes = output.body.collect().await.map_err(|e| {
        tracing::warn!(error = %e, key, what, "journal: reading an object was cut off");
        StoreError::Unavailable(error::UNREACHABLE.into())
    })?;
    Ok(Some(bytes.into_bytes()))
}
