//! The agent card (`/.well-known/agent-card.json`), built from the entry orchestrator's
//! card: its skills are the assistant itself and each specialist, with the specialists'
//! descriptions and routing examples; those the Direct Line reaches are tagged so.

use std::collections::HashMap;

use a2a::{
    AgentCapabilities, AgentCard, AgentInterface, AgentSkill, ApiKeySecurityScheme,
    HttpAuthSecurityScheme, SecurityScheme, TRANSPORT_PROTOCOL_JSONRPC,
};
use axum::http::HeaderMap;
use baton_core::registry::{Agent, Registry};

use crate::principal::CallerScheme;

/// The tag of a skill that a message can address directly (the Direct Line).
pub(crate) const DIRECT_LINE_TAG: &str = "direct-line";

/// The card of `entry`, served at `base` (the scheme and authority the client used).
pub(crate) fn card(
    registry: &Registry,
    entry: &Agent,
    base: &str,
    scheme: Option<&CallerScheme>,
) -> AgentCard {
    let direct = entry
        .orchestration
        .as_ref()
        .is_some_and(|o| o.direct_line.enabled);
    let mut skills = vec![AgentSkill {
        id: entry.id.to_string(),
        name: entry.label.to_string(),
        description: entry.description.to_string(),
        tags: vec!["assistant".to_owned()],
        examples: None,
        input_modes: None,
        output_modes: None,
        security_requirements: None,
    }];
    for agent in specialists(registry, entry) {
        let mut tags = vec!["specialist".to_owned()];
        if direct {
            tags.push(DIRECT_LINE_TAG.to_owned());
        }
        let examples = &agent.routing.examples;
        skills.push(AgentSkill {
            id: agent.id.to_string(),
            name: agent.label.to_string(),
            description: agent.description.to_string(),
            tags,
            examples: (!examples.is_empty()).then(|| examples.clone()),
            input_modes: None,
            output_modes: None,
            security_requirements: None,
        });
    }
    let (security_schemes, security_requirements) = security(scheme);
    AgentCard {
        name: entry.label.to_string(),
        description: entry.description.to_string(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        supported_interfaces: vec![AgentInterface::new(
            format!("{base}{}", super::PATH),
            TRANSPORT_PROTOCOL_JSONRPC,
        )],
        capabilities: AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(false),
            extensions: None,
            extended_agent_card: Some(false),
        },
        default_input_modes: vec!["text/plain".to_owned()],
        default_output_modes: vec!["text/plain".to_owned()],
        skills,
        provider: None,
        documentation_url: None,
        icon_url: None,
        security_schemes,
        security_requirements,
        signatures: None,
    }
}

/// The orchestrator's specialists, in declared order.
pub(crate) fn specialists<'a>(
    registry: &'a Registry,
    entry: &'a Agent,
) -> impl Iterator<Item = &'a std::sync::Arc<Agent>> {
    entry
        .orchestration
        .iter()
        .flat_map(|o| o.sub_agents.iter())
        .filter_map(|id| registry.agent(id))
}

type Schemes = HashMap<String, SecurityScheme>;
type Requirements = Vec<HashMap<String, Vec<String>>>;

/// The card's security schemes and requirements: any one of the schemes will do.
fn security(scheme: Option<&CallerScheme>) -> (Option<Schemes>, Option<Requirements>) {
    let schemes: Vec<(&str, SecurityScheme)> = match scheme {
        None => return (None, None),
        Some(CallerScheme::Header(name)) => vec![(
            "principal",
            SecurityScheme::ApiKey(ApiKeySecurityScheme {
                location: "header".to_owned(),
                name: name.clone(),
                description: Some(
                    "The caller's principal id (a local server trusts whoever can reach it)."
                        .to_owned(),
                ),
            }),
        )],
        Some(CallerScheme::BearerOrSigV4) => vec![
            (
                "bearer",
                SecurityScheme::HttpAuth(HttpAuthSecurityScheme {
                    scheme: "bearer".to_owned(),
                    description: Some(
                        "A token from the deployment's authorizer; its subject is the caller."
                            .to_owned(),
                    ),
                    bearer_format: Some("JWT".to_owned()),
                }),
            ),
            (
                "sigv4",
                SecurityScheme::HttpAuth(HttpAuthSecurityScheme {
                    scheme: "AWS4-HMAC-SHA256".to_owned(),
                    description: Some(
                        "An AWS SigV4-signed request (a function URL with IAM auth).".to_owned(),
                    ),
                    bearer_format: None,
                }),
            ),
        ],
    };
    let requirements = schemes
        .iter()
        .map(|(name, _)| HashMap::from([((*name).to_owned(), Vec::new())]))
        .collect();
    let schemes = schemes
        .into_iter()
        .map(|(name, s)| (name.to_owned(), s))
        .collect();
    (Some(schemes), Some(requirements))
}

/// The scheme and authority a client reached this server at: `Host` (or the forwarded
/// host) with the forwarded scheme, else `http`. A function URL forwards `https`.
pub(crate) fn base_url(headers: &HeaderMap) -> String {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(',').next())
            .map(str::trim)
            .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_graphic()))
    };
    let host = header("x-forwarded-host")
        .or_else(|| header("host"))
        .unwrap_or("localhost");
    let scheme = match header("x-forwarded-proto") {
        Some("https") => "https",
        _ => "http",
    };
    format!("{scheme}://{host}")
}

/// When this process loaded the card's registry (first asked at start-up): its
/// `Last-Modified`, as an HTTP date.
pub(crate) fn since() -> String {
    static SINCE: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or_default();
        chrono::DateTime::from_timestamp(i64::try_from(now).unwrap_or_default(), 0)
            .map(|t| t.format("%a, %d %b %Y %H:%M:%S GMT").to_string())
            .unwrap_or_default()
    });
    SINCE.clone()
}

/// A strong entity tag of the card's bytes.
pub(crate) fn etag(body: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    use std::fmt::Write as _;
    let mut tag = String::from("\"");
    for b in &Sha256::digest(body)[..12] {
        // Writing to a String cannot fail.
        let _ = write!(tag, "{b:02x}");
    }
    tag.push('"');
    tag
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_base_follows_the_forwarded_scheme_and_host() {
        let mut headers = HeaderMap::new();
        headers.insert("host", "abc.lambda-url.eu-west-1.on.aws".parse().unwrap());
        headers.insert("x-forwarded-proto", "https".parse().unwrap());
        assert_eq!(
            base_url(&headers),
            "https://abc.lambda-url.eu-west-1.on.aws"
        );
        let mut local = HeaderMap::new();
        local.insert("host", "127.0.0.1:8080".parse().unwrap());
        assert_eq!(base_url(&local), "http://127.0.0.1:8080");
        assert_eq!(base_url(&HeaderMap::new()), "http://localhost");
    }
}
