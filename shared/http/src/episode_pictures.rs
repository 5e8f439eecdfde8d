//! `GET /v1/episodes/{id}/pictures/{sha256}`: a picture the caller sent with a turn of one
//! of their episodes (D-42), as it was stored (hidden data already removed), so that a
//! client drawing the conversation again (the console after a reload) can show it.
//!
//! The picture is named by its SHA-256, so the same address always holds the same bytes:
//! the browser may keep it (privately) and ask again with `If-None-Match`. Its type is the
//! one the store recorded from its bytes (JPEG, PNG or WebP; never anything a browser would
//! run), and `nosniff` keeps it that way.

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, ETAG, IF_NONE_MATCH,
    X_CONTENT_TYPE_OPTIONS,
};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use baton_core::ports::store::is_picture_name;
use baton_runtime::{RejectionKind, TurnRejection};

use crate::caller::Caller;
use crate::error::Error;
use crate::state::AppState;

/// How long a browser may keep a picture without asking again: its address names its
/// content, so only its owner's access could change, and the cache is the owner's own.
pub(crate) const CACHE: &str = "private, max-age=86400, immutable";

/// Nothing in a picture's response may load or run anything, should it be opened as a page.
const POLICY: &str = "default-src 'none'; sandbox";

/// Another principal's episode, an unknown one, a name that is not a SHA-256 and a picture
/// no committed turn of the episode sent are all the same "not found" (D-30).
pub(crate) async fn get_picture(
    State(state): State<AppState>,
    Caller(principal): Caller,
    headers: HeaderMap,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Result<Response, Error> {
    let Ok(Path((episode_id, sha256))) = path else {
        return Err(not_found());
    };
    if !is_picture_name(&sha256) {
        return Err(not_found());
    }
    let picture = state
        .runtime
        .picture(&principal, &episode_id, &sha256)
        .await?;
    let etag = format!("\"{sha256}\"");
    let mut response = if matches(&headers, &etag) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let mut response = picture.bytes.into_response();
        response.headers_mut().insert(
            CONTENT_TYPE,
            HeaderValue::from_static(picture.media_type.as_str()),
        );
        response
    };
    let h = response.headers_mut();
    h.insert(CACHE_CONTROL, HeaderValue::from_static(CACHE));
    h.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_static(POLICY));
    if let Ok(value) = HeaderValue::from_str(&etag) {
        h.insert(ETAG, value);
    }
    Ok(response)
}

/// Whether the request's `If-None-Match` names this picture (or any version: `*`).
fn matches(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get_all(IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|tag| tag.trim().trim_start_matches("W/"))
        .any(|tag| tag == etag || tag == "*")
}

fn not_found() -> Error {
    Error::Rejected(TurnRejection {
        kind: RejectionKind::NotFound,
        message: "That picture was not found.".to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(IF_NONE_MATCH, HeaderValue::from_str(value).unwrap());
        h
    }

    #[test]
    fn if_none_match_names_the_picture_in_any_of_its_forms() {
        let etag = "\"abc\"";
        assert!(matches(&with("\"abc\""), etag));
        assert!(matches(&with("W/\"abc\""), etag));
        assert!(matches(&with("\"x\", \"abc\""), etag));
        assert!(matches(&with("*"), etag));
        assert!(!matches(&with("\"abd\""), etag));
        assert!(!matches(&HeaderMap::new(), etag));
    }
}
