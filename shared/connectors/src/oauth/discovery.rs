//! Finding the authorization server of a protected resource: its metadata (RFC 9728) from
//! the challenge or the well-known paths, then the server's own (RFC 8414, OpenID
//! discovery), as the MCP authorization spec orders them.

use reqwest::Url;
use serde::Deserialize;

use super::{AuthFault, read_json};
use crate::error::chain;

/// The protected resource's metadata, as far as a client acting as itself needs it.
#[derive(Debug, Deserialize)]
struct ResourceMetadata {
    #[serde(default)]
    resource: Option<String>,
    #[serde(default)]
    authorization_servers: Vec<String>,
    #[serde(default)]
    scopes_supported: Option<Vec<String>>,
}

/// The authorization server's metadata.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ServerMetadata {
    #[serde(default)]
    pub(crate) issuer: Option<String>,
    pub(crate) token_endpoint: String,
    #[serde(default)]
    pub(crate) token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// Where a user signs in (the authorization-code grant).
    #[serde(default)]
    pub(crate) authorization_endpoint: Option<String>,
    /// Where a client registers itself (RFC 7591).
    #[serde(default)]
    pub(crate) registration_endpoint: Option<String>,
    #[serde(default)]
    pub(crate) scopes_supported: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) code_challenge_methods_supported: Option<Vec<String>>,
    /// Whether a client's id may be the URL of its metadata document.
    #[serde(default)]
    pub(crate) client_id_metadata_document_supported: Option<bool>,
}

/// What discovery found for one resource.
#[derive(Debug, Clone)]
pub(crate) struct Discovered {
    /// The resource indicator sent with token requests (RFC 8707).
    pub(crate) resource: String,
    /// The scopes the resource lists, if it lists any.
    pub(crate) scopes_supported: Option<Vec<String>>,
    /// The authorization server's identifier (the JWT audience of `private_key_jwt`).
    pub(crate) issuer: String,
    pub(crate) server: ServerMetadata,
}

/// Discovers the authorization server of `resource_url`, starting from the challenge's
/// metadata URL when it gave one.
pub(crate) async fn discover(
    http: &reqwest::Client,
    resource_url: &Url,
    metadata_url: Option<&str>,
) -> Result<Discovered, AuthFault> {
    let prm = match metadata_url {
        Some(url) => {
            let url = Url::parse(url).map_err(|_| {
                AuthFault::Discovery(
                    "the resource's challenge names a metadata URL that is not a URL".to_owned(),
                )
            })?;
            Some(
                fetch::<ResourceMetadata>(http, &url)
                    .await?
                    .ok_or_else(|| {
                        AuthFault::Discovery(format!("no resource metadata at {}", shown(&url)))
                    })?,
            )
        }
        None => {
            let mut found = None;
            for url in resource_metadata_urls(resource_url) {
                if let Some(prm) = fetch::<ResourceMetadata>(http, &url).await? {
                    found = Some(prm);
                    break;
                }
            }
            found
        }
    };
    let legacy = prm.is_none();
    let (resource, scopes_supported, issuer) = match prm {
        Some(prm) => {
            let resource = match prm.resource {
                Some(resource) => {
                    if !covers(&resource, resource_url) {
                        return Err(AuthFault::Discovery(format!(
                            "the resource metadata is for {resource}, not for {}",
                            shown(resource_url)
                        )));
                    }
                    resource
                }
                None => resource_url.to_string(),
            };
            let issuer = prm
                .authorization_servers
                .into_iter()
                .next()
                .ok_or_else(|| {
                    AuthFault::Discovery(
                        "the resource metadata names no authorization server".to_owned(),
                    )
                })?;
            (resource, prm.scopes_supported, issuer)
        }
        // A server of the 2025-03-26 spec has no resource metadata: its own origin is the
        // authorization server.
        None => (
            resource_url.to_string(),
            None,
            resource_url.origin().ascii_serialization(),
        ),
    };
    let issuer_url = Url::parse(&issuer).map_err(|_| {
        AuthFault::Discovery(format!("the authorization server {issuer:?} is not a URL"))
    })?;
    let mut server = None;
    for url in server_metadata_urls(&issuer_url) {
        if let Some(found) = fetch::<ServerMetadata>(http, &url).await? {
            server = Some(found);
            break;
        }
    }
    let server = match server {
        Some(server) => server,
        // The 2025-03-26 spec's fallback: a server with no metadata at all serves the
        // default endpoints at its origin.
        None if legacy => legacy_endpoints(&issuer_url),
        None => {
            return Err(AuthFault::Discovery(format!(
                "no authorization server metadata for {}",
                shown(&issuer_url)
            )));
        }
    };
    if let Some(said) = &server.issuer
        && !legacy
        && said.trim_end_matches('/') != issuer.trim_end_matches('/')
    {
        // RFC 8414 §3.3: metadata naming another issuer must not be used. (A 2025-03-26
        // server's metadata is found at the resource's own origin, which names its
        // authorization server: there the document is the resource's word, not a claim
        // about an issuer asked for.)
        return Err(AuthFault::Discovery(format!(
            "the authorization server metadata of {issuer} names another issuer, {said}"
        )));
    }
    Url::parse(&server.token_endpoint).map_err(|_| {
        AuthFault::Discovery(format!("the token endpoint of {issuer} is not a URL"))
    })?;
    Ok(Discovered {
        resource,
        scopes_supported,
        issuer: server.issuer.clone().unwrap_or(issuer),
        server,
    })
}

/// The default endpoints of a 2025-03-26 server without metadata, at its origin.
fn legacy_endpoints(origin: &Url) -> ServerMetadata {
    let at = |path: &str| {
        let mut url = origin.clone();
        url.set_path(path);
        url.set_query(None);
        url.to_string()
    };
    ServerMetadata {
        issuer: None,
        token_endpoint: at("/token"),
        token_endpoint_auth_methods_supported: None,
        authorization_endpoint: Some(at("/authorize")),
        registration_endpoint: Some(at("/register")),
        scopes_supported: None,
        code_challenge_methods_supported: None,
        client_id_metadata_document_supported: None,
    }
}

/// Where a resource's metadata may be, in order (RFC 9728 §3.1): under the well-known
/// prefix with the resource's path, then at the root.
pub(crate) fn resource_metadata_urls(resource: &Url) -> Vec<Url> {
    well_known(resource, "oauth-protected-resource", false)
}

/// Where an authorization server's metadata may be, in order (the MCP spec's list: RFC
/// 8414 with the issuer's path inserted, OpenID discovery inserted, then appended).
pub(crate) fn server_metadata_urls(issuer: &Url) -> Vec<Url> {
    let mut urls = well_known(issuer, "oauth-authorization-server", true);
    urls.extend(well_known(issuer, "openid-configuration", true));
    let path = issuer.path().trim_end_matches('/');
    if !path.is_empty() {
        let mut appended = issuer.clone();
        appended.set_path(&format!("{path}/.well-known/openid-configuration"));
        appended.set_query(None);
        urls.push(appended);
    }
    urls
}

/// `/.well-known/{name}{path}` (and, unless `path_only`, `/.well-known/{name}` after it
/// when the URL has a path).
fn well_known(url: &Url, name: &str, path_only: bool) -> Vec<Url> {
    let path = url.path().trim_end_matches('/');
    let at = |p: String| {
        let mut u = url.clone();
        u.set_path(&p);
        u.set_query(None);
        u.set_fragment(None);
        u
    };
    let mut urls = vec![at(format!("/.well-known/{name}{path}"))];
    if !path.is_empty() && !path_only {
        urls.push(at(format!("/.well-known/{name}")));
    }
    urls
}

/// Whether the metadata's `resource` covers the URL Baton calls: same origin, and a path
/// that is the URL's path or a parent of it.
fn covers(resource: &str, url: &Url) -> bool {
    let Ok(resource) = Url::parse(resource) else {
        return false;
    };
    if resource.origin() != url.origin() {
        return false;
    }
    let parent = resource.path().trim_end_matches('/');
    let path = url.path();
    path == parent
        || path.trim_end_matches('/') == parent
        || path.starts_with(&format!("{parent}/"))
}

/// A metadata document, or `None` when the server has none there (404 or 405).
async fn fetch<T: serde::de::DeserializeOwned>(
    http: &reqwest::Client,
    url: &Url,
) -> Result<Option<T>, AuthFault> {
    let response = http
        .get(url.clone())
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|e| AuthFault::Unreachable(format!("{}: {}", shown(url), chain(&e))))?;
    let status = response.status();
    if matches!(status.as_u16(), 404 | 405) {
        return Ok(None);
    }
    if !status.is_success() {
        return Err(AuthFault::Discovery(format!(
            "{} answered HTTP {}",
            shown(url),
            status.as_u16()
        )));
    }
    read_json(response)
        .await
        .map(Some)
        .map_err(|why| AuthFault::Discovery(format!("{}: {why}", shown(url))))
}

/// A URL as messages show it: without credentials or query.
pub(crate) fn shown(url: &Url) -> String {
    let mut url = url.clone();
    let _ = url.set_username("");
    let _ = url.set_password(None);
    url.set_query(None);
    url.set_fragment(None);
    url.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(list: Vec<Url>) -> Vec<String> {
        list.into_iter().map(|u| u.to_string()).collect()
    }

    #[test]
    fn resource_metadata_is_looked_for_with_the_path_then_at_the_root() {
        let u = Url::parse("https://h:8443/tenant/mcp?x=1").unwrap();
        assert_eq!(
            urls(resource_metadata_urls(&u)),
            vec![
                "https://h:8443/.well-known/oauth-protected-resource/tenant/mcp",
                "https://h:8443/.well-known/oauth-protected-resource",
            ]
        );
        let root = Url::parse("https://h/").unwrap();
        assert_eq!(
            urls(resource_metadata_urls(&root)),
            vec!["https://h/.well-known/oauth-protected-resource"]
        );
    }

    #[test]
    fn server_metadata_follows_the_mcp_order() {
        let with_path = Url::parse("https://as/tenant1").unwrap();
        assert_eq!(
            urls(server_metadata_urls(&with_path)),
            vec![
                "https://as/.well-known/oauth-authorization-server/tenant1",
                "https://as/.well-known/openid-configuration/tenant1",
                "https://as/tenant1/.well-known/openid-configuration",
            ]
        );
        let root = Url::parse("https://as").unwrap();
        assert_eq!(
            urls(server_metadata_urls(&root)),
            vec![
                "https://as/.well-known/oauth-authorization-server",
                "https://as/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn a_resource_covers_its_own_url_and_children_only() {
        let u = Url::parse("http://h:1/mcp").unwrap();
        assert!(covers("http://h:1/mcp", &u));
        assert!(covers("http://h:1/", &u));
        assert!(covers("http://h:1", &u));
        assert!(!covers("http://h:1/mc", &u));
        assert!(!covers("http://h:2/mcp", &u));
        assert!(!covers("https://evil.example.com/mcp", &u));
        assert!(!covers("not a url", &u));
    }
}
