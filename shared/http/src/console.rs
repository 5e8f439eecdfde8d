//! The web console: one page, its script and its style, compiled into the binary so that
//! `baton serve` needs no files beside it and no build step.
//!
//! The page talks to the same `POST /v1/turns` stream as every other client and to
//! `GET /v1/agents` for the list of specialists. It loads nothing from elsewhere, and the
//! content security policy below holds it to that: scripts and styles from this origin
//! only, no inline code, requests to this origin only, pictures from this origin or from
//! the page's own memory (`blob:`).

use axum::Router;
use axum::http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, REFERRER_POLICY, X_CONTENT_TYPE_OPTIONS,
    X_FRAME_OPTIONS,
};
use axum::response::IntoResponse;
use axum::routing::get;

/// The page.
const PAGE: &str = include_str!("../assets/console.html");
/// Its script.
const SCRIPT: &str = include_str!("../assets/console.js");
/// Its style.
const STYLE: &str = include_str!("../assets/console.css");

/// Same-origin everything, no inline script or style, no framing. Pictures may also be
/// `blob:` URLs: the page shows the pictures a user picked, pasted or dropped from the
/// bytes it holds, before and after it sends them (D-42), never from elsewhere.
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
                      connect-src 'self'; img-src 'self' data: blob:; base-uri 'none'; \
                      form-action 'none'; frame-ancestors 'none'";

/// The console's routes: `GET /`, `GET /console.js`, `GET /console.css`.
pub(crate) fn routes<S>() -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    Router::new()
        .route("/", get(page))
        .route("/console.js", get(script))
        .route("/console.css", get(style))
}

async fn page() -> impl IntoResponse {
    asset("text/html; charset=utf-8", PAGE)
}

async fn script() -> impl IntoResponse {
    asset("text/javascript; charset=utf-8", SCRIPT)
}

async fn style() -> impl IntoResponse {
    asset("text/css; charset=utf-8", STYLE)
}

/// An embedded file with its type and the console's headers. `no-cache` so that a newer
/// binary's page is picked up at once (the files are small).
fn asset(content_type: &'static str, body: &'static str) -> impl IntoResponse {
    (
        [
            (CONTENT_TYPE, content_type),
            (CACHE_CONTROL, "no-cache"),
            (CONTENT_SECURITY_POLICY, POLICY),
            (X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (X_FRAME_OPTIONS, "DENY"),
            (REFERRER_POLICY, "no-referrer"),
        ],
        body,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use tower::ServiceExt;

    async fn get_path(path: &str) -> (StatusCode, axum::http::HeaderMap, String) {
        let response = routes::<()>()
            .oneshot(Request::get(path).body(Body::empty()).unwrap())
            .await
            .unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        (status, headers, String::from_utf8(bytes.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn each_file_is_served_with_its_type_and_the_policy() {
        for (path, kind, body) in [
            ("/", "text/html", PAGE),
            ("/console.js", "text/javascript", SCRIPT),
            ("/console.css", "text/css", STYLE),
        ] {
            let (status, headers, text) = get_path(path).await;
            assert_eq!(status, StatusCode::OK, "{path}");
            let content_type = headers[CONTENT_TYPE].to_str().unwrap();
            assert!(content_type.starts_with(kind), "{path}: {content_type}");
            assert_eq!(headers[CONTENT_SECURITY_POLICY], POLICY, "{path}");
            assert_eq!(headers[X_CONTENT_TYPE_OPTIONS], "nosniff", "{path}");
            assert_eq!(text, body, "{path}");
        }
    }

    #[tokio::test]
    async fn the_console_is_served_only_when_the_state_enables_it() {
        use crate::agents::tests::{get, state};
        for path in ["/", "/console.js", "/console.css"] {
            let (status, body) = get(state(Some("alice")), path).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {body}");
            let (status, _) = get(state(Some("alice")).with_console(), path).await;
            assert_eq!(status, StatusCode::OK, "{path}");
        }
        // The page itself asks for no principal: it is the same for everyone.
        let (status, body) = get(state(None).with_console(), "/").await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, PAGE);
    }

    #[test]
    fn the_page_loads_its_own_files_and_nothing_from_elsewhere() {
        assert!(PAGE.contains(r#"src="/console.js""#));
        assert!(PAGE.contains(r#"href="/console.css""#));
        for file in [PAGE, SCRIPT, STYLE] {
            assert!(!file.contains("http://"), "an absolute address");
            assert!(!file.contains("https://"), "an absolute address");
            assert!(!file.contains("//cdn"), "a CDN");
        }
        // The policy forbids inline code, so the page must have none.
        assert!(!PAGE.contains("<script>"), "inline script");
        assert!(!PAGE.contains("<style"), "inline style");
        assert!(!PAGE.contains(" style="), "inline style attribute");
        assert!(!PAGE.contains(" onclick="), "inline handler");
    }

    #[test]
    fn the_script_never_parses_server_text_as_html() {
        for sink in [
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
        ] {
            assert!(!SCRIPT.contains(sink), "{sink} in console.js");
        }
        assert!(!SCRIPT.contains("eval("), "eval in console.js");
    }

    #[test]
    fn the_page_has_the_elements_clients_and_tests_rely_on() {
        for id in [
            r#"id="message""#,
            r#"id="send""#,
            r#"id="log""#,
            r#"id="sticky""#,
            r#"id="agents""#,
            r#"id="new-conversation""#,
            r#"id="picture-input""#,
            r#"id="attach""#,
            r#"id="attachments""#,
        ] {
            assert!(PAGE.contains(id), "{id} missing");
        }
        // The message box has a label for screen readers.
        assert!(PAGE.contains(r#"<label for="message""#));
    }

    #[test]
    fn the_policy_lets_the_page_show_its_own_pictures_and_nothing_else() {
        let img = POLICY
            .split(';')
            .map(str::trim)
            .find(|d| d.starts_with("img-src"))
            .unwrap();
        assert_eq!(img, "img-src 'self' data: blob:");
        for directive in [
            "script-src 'self'",
            "connect-src 'self'",
            "default-src 'none'",
        ] {
            assert!(POLICY.contains(directive), "{directive}");
        }
    }
}
