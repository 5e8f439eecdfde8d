//! Account links (D-37): the sign-in callback a user's browser comes back to, and the
//! caller's own links, listed and revoked.
//!
//! The callback carries no principal of its own: the browser of any user lands there. The
//! sealed `state` names the principal, and only this runtime can have made it; it expires,
//! and is spent once. What went wrong is shown as a plain page; nothing is stored then.
//!
//! Whoever opens a sign-in page can finish it, so the callback connects nothing by itself:
//! its page shows a one-time code, which the conversation that asked must give. A page
//! opened by someone else (sent an attacker's link) tells them not to give it away.

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use baton_runtime::{LinkError, RejectionKind, TurnRejection};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::caller::Caller;
use crate::error::Error;
use crate::state::AppState;

/// What the authorization server sends the browser back with.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Callback {
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    error: Option<String>,
}

/// `GET /v1/links/callback`: finishes a sign-in and says so in a page.
pub(crate) async fn get_callback(
    State(state): State<AppState>,
    query: Result<Query<Callback>, QueryRejection>,
) -> Response {
    let Callback {
        state: sealed,
        code,
        error,
    } = query.map(|Query(q)| q).unwrap_or_default();
    let Some(sealed) = sealed.filter(|s| !s.is_empty()) else {
        return page(
            StatusCode::BAD_REQUEST,
            "Not connected",
            &LinkError::BadState.to_string(),
        );
    };
    match state
        .runtime
        .finish_link(&sealed, code.as_deref(), error.as_deref())
        .await
    {
        Ok(linked) => code_page(&linked),
        Err(e) => {
            let status = match e {
                LinkError::NotOffered => StatusCode::NOT_FOUND,
                LinkError::Unreachable | LinkError::Store => StatusCode::SERVICE_UNAVAILABLE,
                LinkError::AlreadyDone => StatusCode::CONFLICT,
                _ => StatusCode::BAD_REQUEST,
            };
            page(status, "Not connected", &e.to_string())
        }
    }
}

/// Which link `DELETE /v1/links` removes.
#[derive(Debug, Deserialize)]
pub(crate) struct Which {
    server: String,
}

/// `GET /v1/links`: the caller's links, each server and when it was linked or renewed.
pub(crate) async fn get_links(
    State(state): State<AppState>,
    Caller(principal): Caller,
) -> Result<Json<Value>, Error> {
    let links = state.runtime.links(&principal).await.map_err(rejection)?;
    let links: Vec<Value> = links
        .into_iter()
        .map(|(server, updated_ms)| json!({ "server": server, "updated_ms": updated_ms }))
        .collect();
    Ok(Json(json!({ "links": links })))
}

/// `DELETE /v1/links?server=…`: revokes the caller's link to that server.
pub(crate) async fn delete_link(
    State(state): State<AppState>,
    Caller(principal): Caller,
    which: Result<Query<Which>, QueryRejection>,
) -> Result<Json<Value>, Error> {
    let Ok(Query(which)) = which else {
        return Err(Error::InvalidBody(
            "name the link to revoke: ?server=<the server's URL>".to_owned(),
        ));
    };
    let revoked = state
        .runtime
        .revoke_link(&principal, &which.server)
        .await
        .map_err(rejection)?;
    Ok(Json(json!({ "server": which.server, "revoked": revoked })))
}

fn rejection(e: LinkError) -> Error {
    let kind = match e {
        LinkError::NotOffered => RejectionKind::NotFound,
        LinkError::Store | LinkError::Unreachable => RejectionKind::Unavailable,
        _ => RejectionKind::Invalid,
    };
    Error::Rejected(TurnRejection {
        kind,
        message: e.to_string(),
    })
}

/// A server's name as users know it.
fn host_of(server: &str) -> String {
    url::Url::parse(server)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_else(|| server.to_owned())
}

/// The page of a finished sign-in: the code that connects the account, for the
/// conversation that asked, and a warning for anyone who did not start it.
fn code_page(linked: &baton_runtime::Linked) -> Response {
    let host = escape(&host_of(&linked.server));
    let who = escape(linked.principal.as_str());
    let code = escape(&linked.code);
    let extra = format!(
        "<p id=\"message\">You signed in at {host}. To connect that account to the Baton user \
         <strong>{who}</strong>, give this code in the conversation that sent you here:</p>\
         <p><strong id=\"code\">{code}</strong></p>\
         <p id=\"warning\">Did someone else send you this sign-in? Then give the code to no one \
         and close this page: without the code nothing is connected.</p>"
    );
    html(StatusCode::OK, "One step left", &extra)
}

/// A small page for the browser that came back: never cached, and never sending its
/// address (which held the code) on.
fn page(status: StatusCode, title: &str, words: &str) -> Response {
    html(
        status,
        title,
        &format!("<p id=\"message\">{}</p>", escape(words)),
    )
}

/// A page of `title` and the (escaped) `body`, with the headers every such page has.
fn html(status: StatusCode, title: &str, body: &str) -> Response {
    let body = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title></head>\
         <body><h1 id=\"title\">{title}</h1>{body}</body></html>"
    );
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'"),
    );
    response
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_shows_words_never_markup() {
        assert_eq!(
            escape("<script>alert('x')</script> & \"y\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;y&quot;"
        );
        assert_eq!(host_of("http://127.0.0.1:8943/mcp"), "127.0.0.1");
        assert_eq!(host_of("not a url"), "not a url");
    }
}
