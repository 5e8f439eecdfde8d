//! The body archive: every stored body copied to `archive/<episode>/<url-safe key>.json`.
//!
//! Idempotent by construction: the archive key is a function of the body key and the
//! content is the body itself, so a redelivery overwrites an object with the same bytes.

use aws_sdk_s3::Client;
use aws_sdk_s3::primitives::ByteStream;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use crate::change::{BodyChange, BodySource};
use crate::error::{Error, Result};

/// Where the history writer archives the body `key` of `episode_id`.
///
/// The key is percent-encoded (everything but `A–Z a–z 0–9 - _ . ~`), so distinct body keys
/// never collide and a `/` in a key does not make folders.
pub fn archive_key(episode_id: &str, key: &str) -> String {
    format!("archive/{episode_id}/{}.json", url_safe(key, false))
}

/// Copies one body into the archive: inline bodies are put, bodies already in the bucket
/// are copied server-side.
///
/// # Errors
///
/// [`Error::S3`] when the put or copy fails (for example, the source object is missing).
pub(crate) async fn archive_body(s3: &Client, bucket: &str, body: &BodyChange) -> Result<()> {
    let target = archive_key(&body.episode_id, &body.key);
    match &body.source {
        BodySource::Inline(json) => s3
            .put_object()
            .bucket(bucket)
            .key(&target)
            .content_type("application/json")
            .body(ByteStream::from(json.clone().into_bytes()))
            .send()
            .await
            .map(|_| ())
            .map_err(|e| Error::s3(format!("archiving body {} to {target}", body.key), e)),
        BodySource::S3(source) => s3
            .copy_object()
            .bucket(bucket)
            .key(&target)
            .copy_source(format!("{bucket}/{}", url_safe(source, true)))
            .content_type("application/json")
            .send()
            .await
            .map(|_| ())
            .map_err(|e| Error::s3(format!("copying body {source} to {target}"), e)),
    }
}

/// Everything but `A–Z a–z 0–9 - _ . ~` is encoded in an archive key.
const KEY: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');
/// The same, keeping `/` between path segments (a copy source).
const PATH: &AsciiSet = &KEY.remove(b'/');

/// Percent-encodes `text`, keeping `/` when it separates path segments.
fn url_safe(text: &str, keep_slashes: bool) -> String {
    let set = if keep_slashes { PATH } else { KEY };
    utf8_percent_encode(text, set).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archive_keys_are_url_safe_and_distinct() {
        assert_eq!(archive_key("e1", "t-1/0"), "archive/e1/t-1%2F0.json");
        assert_eq!(archive_key("e1", "a b#ü"), "archive/e1/a%20b%23%C3%BC.json");
        // '%' itself is encoded, so an already-encoded key cannot collide with its source.
        assert_ne!(archive_key("e1", "t-1%2F0"), archive_key("e1", "t-1/0"));
    }

    #[test]
    fn copy_sources_keep_their_folders() {
        assert_eq!(
            url_safe("bodies/e1/t 1/0.json", true),
            "bodies/e1/t%201/0.json"
        );
    }
}
