//! DNS-rebinding protection for every route: a page on another site whose name was
//! rebound to a loopback address still sends its own name as the `Host`, and a browser
//! sends the page's origin as `Origin`. A server that answers only its own names, and no
//! other site's pages, cannot be driven from a browser that way (the MCP specification
//! asks it of `/mcp`; every route that acts as the configured principal needs it too).

use axum::extract::{Request, State};
use axum::http::header::{HOST, ORIGIN};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::Error;

/// Which hosts the server answers, and which sites' pages may call it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowedHosts {
    /// These hosts (names or `host:port`), besides `localhost`, `127.0.0.1` and `::1`, on
    /// any port.
    Loopback(Vec<String>),
    /// Any host and any origin: for a deployment whose every request is authenticated
    /// before it arrives (the Lambda turn function behind its function URL).
    Any,
}

impl AllowedHosts {
    /// Whether `authority` (`host` or `host:port`, an IPv6 host in brackets) is one the
    /// server answers: its host is allowed on any port, a `host:port` entry on that port.
    pub fn allows(&self, authority: &str) -> bool {
        let AllowedHosts::Loopback(extra) = self else {
            return true;
        };
        let authority = authority.trim().to_ascii_lowercase();
        let host = host_of(&authority);
        ["localhost", "127.0.0.1", "::1"].contains(&host)
            || extra.iter().any(|e| {
                let e = e.to_ascii_lowercase();
                e == authority
                    || e == host
                    || e.trim_start_matches('[').trim_end_matches(']') == host
            })
    }
}

/// The host part of an authority: without its port, an IPv6 host without its brackets.
fn host_of(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match authority.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => authority,
    }
}

/// Paths any host may read: they say only whether the process answers and can run turns,
/// and a load balancer asks them under an address of its own.
const OPEN_PATHS: [&str; 2] = ["/healthz", "/readyz"];

/// Refuses (403) a request for a host the server does not answer, or from a page of a
/// site it does not serve. A request with no `Host` (only a client written by hand sends
/// none) or no `Origin` (anything but a browser) is judged on what it has.
pub(crate) async fn guard(
    State(hosts): State<AllowedHosts>,
    request: Request,
    next: Next,
) -> Response {
    let hosts = &hosts;
    if *hosts == AllowedHosts::Any || OPEN_PATHS.contains(&request.uri().path()) {
        return next.run(request).await;
    }
    let authority = request
        .uri()
        .authority()
        .map(|a| a.as_str().to_owned())
        .or_else(|| {
            request
                .headers()
                .get(HOST)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        });
    if let Some(authority) = authority
        && !hosts.allows(&authority)
    {
        tracing::info!(host = %authority.chars().take(100).collect::<String>(), "request for a host this server does not answer refused");
        return Error::ForeignHost.into_response();
    }
    if let Some(origin) = request.headers().get(ORIGIN) {
        let allowed = origin
            .to_str()
            .ok()
            .and_then(|o| url::Url::parse(o).ok())
            .filter(|u| matches!(u.scheme(), "http" | "https"))
            .and_then(|u| u.host_str().map(str::to_owned))
            .is_some_and(|host| hosts.allows(&host));
        if !allowed {
            tracing::info!("request from a page of another site refused");
            return Error::ForeignOrigin.into_response();
        }
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names_on_any_port_and_the_listed_hosts_are_answered() {
        let hosts = AllowedHosts::Loopback(vec!["baton.internal".into(), "10.0.0.5:8787".into()]);
        for ok in [
            "localhost",
            "localhost:8787",
            "127.0.0.1:1",
            "[::1]:8787",
            "BATON.internal:9",
            "10.0.0.5:8787",
        ] {
            assert!(hosts.allows(ok), "{ok}");
        }
        for refused in [
            "evil.example.com",
            "evil.example.com:8787",
            "localhost.evil.example.com",
            "127.0.0.1.nip.io",
            "10.0.0.5:9999",
            "",
        ] {
            assert!(!hosts.allows(refused), "{refused}");
        }
        assert!(AllowedHosts::Any.allows("evil.example.com"));
    }
}
