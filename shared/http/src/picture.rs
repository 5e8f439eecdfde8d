//! Pictures as requests carry them (D-42): base64 text, alone beside the type the client
//! declares, or in a `data:` URL. Decoded here, and the declared type checked against the
//! bytes; the runtime then checks each picture's limits and strips its hidden data.

use base64::Engine as _;
use base64::engine::DecodePaddingMode;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use baton_core::picture::{Bytes, check_declared};

use crate::error::Error;

/// Standard base64, padded or not: clients differ, and the padding says nothing.
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Decodes picture `n` (1-based, for the message) of a request: base64 `data`, which the
/// client declares to be `declared`.
pub(crate) fn decode(n: usize, data: &str, declared: Option<&str>) -> Result<Bytes, Error> {
    let bytes = BASE64.decode(data.trim()).map_err(|e| {
        tracing::debug!(error = %e, picture = n, "picture is not base64");
        refusal(n, "its data is not base64")
    })?;
    checked(n, bytes, declared)
}

/// Picture `n`'s bytes, as the client sent them, once its declared type (if any) is
/// checked against them.
pub(crate) fn checked(n: usize, bytes: Vec<u8>, declared: Option<&str>) -> Result<Bytes, Error> {
    if let Some(declared) = declared {
        check_declared(&bytes, declared).map_err(|e| refusal(n, &e.to_string()))?;
    }
    Ok(Bytes::from(bytes))
}

/// Decodes picture `n` from a URL, which must be a `data:` URL in base64: a server that
/// fetched whatever address a client named could be made to call anywhere (its own
/// network, a cloud's metadata service), so remote URLs are refused.
pub(crate) fn from_url(n: usize, url: &str) -> Result<Bytes, Error> {
    let Some(rest) = strip_prefix_ignore_case(url.trim(), "data:") else {
        return Err(refusal(
            n,
            "remote picture URLs are not fetched; send the picture itself, as a data: URL \
             (data:image/jpeg;base64,...)",
        ));
    };
    let Some((header, data)) = rest.split_once(',') else {
        return Err(refusal(n, "its data: URL has no data"));
    };
    let Some(media_type) = header
        .len()
        .checked_sub(";base64".len())
        .filter(|&at| {
            header
                .get(at..)
                .is_some_and(|t| t.eq_ignore_ascii_case(";base64"))
        })
        .and_then(|at| header.get(..at))
    else {
        return Err(refusal(
            n,
            "its data: URL must be base64 (data:image/jpeg;base64,...)",
        ));
    };
    decode(n, data, Some(media_type))
}

fn strip_prefix_ignore_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| s.get(prefix.len()..))
        .flatten()
}

/// A refusal of picture `n`, in the words the runtime uses for its own.
fn refusal(n: usize, why: &str) -> Error {
    Error::InvalidBody(format!("Picture {n} was not taken: {why}."))
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose;
    use baton_core::picture::MediaType;

    const PNG_1X1: &[u8] = &[
        0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, b'I', b'H', b'D', b'R',
    ];

    fn b64(bytes: &[u8]) -> String {
        general_purpose::STANDARD.encode(bytes)
    }

    #[test]
    fn base64_padded_or_not_decodes() {
        let padded = b64(PNG_1X1);
        assert_eq!(decode(1, &padded, None).unwrap(), PNG_1X1);
        let bare = padded.trim_end_matches('=');
        assert_eq!(decode(1, bare, Some("image/png")).unwrap(), PNG_1X1);
    }

    #[test]
    fn a_data_url_decodes_and_its_type_is_checked() {
        let url = format!("data:image/png;base64,{}", b64(PNG_1X1));
        assert_eq!(from_url(1, &url).unwrap(), PNG_1X1);
        let lying = format!("DATA:image/jpeg;BASE64,{}", b64(PNG_1X1));
        let e = from_url(2, &lying).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "Picture 2 was not taken: it is declared as {} but its bytes are {}.",
                MediaType::Jpeg,
                MediaType::Png
            )
        );
    }

    #[test]
    fn remote_and_malformed_urls_are_refused_plainly() {
        for (url, why) in [
            (
                "https://example.com/a.jpg",
                "remote picture URLs are not fetched",
            ),
            ("data:image/png;base64", "has no data"),
            ("data:image/png,rawtext", "must be base64"),
            ("data:image/png;base64,@@@", "not base64"),
            (
                "data:image/heic;base64,AAAA",
                "\"image/heic\" is not a type Baton takes",
            ),
        ] {
            let e = from_url(1, url).unwrap_err().to_string();
            assert!(e.starts_with("Picture 1 was not taken: "), "{url}: {e}");
            assert!(e.contains(why), "{url}: {e}");
        }
    }
}
