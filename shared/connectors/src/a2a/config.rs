//! The `connector:` settings of an `a2a` tool, checked.

use std::time::Duration;

use baton_core::ports::upstream::ConversationPolicy;
use reqwest::Url;
use reqwest::header::HeaderName;
use serde_json::Value;

use crate::secrets::{HeaderSpec, parse_headers};

/// The settings a tool's `connector:` block may hold (`kind` included).
const SETTINGS: &[&str] = &[
    "kind",
    "url",
    "headers",
    "timeout_ms",
    "max_answer_bytes",
    "lifetime_s",
    "replay_turns",
];
/// How long connecting, and each wait for the agent's next event, may take by default.
const DEFAULT_TIMEOUT_MS: u64 = 30_000;
/// The longest answer taken by default.
const DEFAULT_MAX_ANSWER_BYTES: u64 = 256 * 1024;
/// No setting may let one answer take more memory than this.
const MAX_MAX_ANSWER_BYTES: u64 = 16 * 1024 * 1024;
/// Headers the connector sets itself.
const RESERVED_HEADERS: &[&str] = &[
    "a2a-version",
    "accept",
    "content-type",
    "content-length",
    "host",
    "connection",
    "transfer-encoding",
    "traceparent",
    super::PRINCIPAL_HEADER,
];

/// One `a2a` tool's settings.
#[derive(Debug, Clone)]
pub(crate) struct A2aConfig {
    /// The agent's base URL: its card is at `/.well-known/agent-card.json` under it.
    pub(crate) url: Url,
    pub(crate) headers: Vec<(HeaderName, HeaderSpec)>,
    /// Connecting, and each wait for the next event.
    pub(crate) timeout: Duration,
    pub(crate) max_answer_bytes: usize,
}

impl A2aConfig {
    /// Parses and checks a tool's settings.
    ///
    /// # Errors
    /// What is wrong, naming the setting.
    pub(crate) fn parse(config: &Value) -> Result<Self, String> {
        let map = config
            .as_object()
            .ok_or("the connector settings must be a mapping")?;
        if let Some(unknown) = map.keys().find(|k| !SETTINGS.contains(&k.as_str())) {
            return Err(format!(
                "unknown setting `{unknown}`; allowed: {}",
                SETTINGS.join(", ")
            ));
        }
        let url = match map.get("url") {
            Some(Value::String(url)) => Url::parse(url)
                .ok()
                .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
                .filter(|u| u.username().is_empty() && u.password().is_none())
                .ok_or_else(|| {
                    format!("url {url:?} must be an http:// or https:// URL with a host and no credentials (send those in `headers`)")
                })?,
            _ => return Err("needs a `url`, the agent's base URL (its card is under /.well-known/agent-card.json)".to_owned()),
        };
        let headers = match map.get("headers") {
            None => Vec::new(),
            Some(Value::Object(raw)) => parse_headers(raw, RESERVED_HEADERS)?,
            Some(_) => return Err("headers must be a mapping of names to values".to_owned()),
        };
        let timeout = match map.get("timeout_ms") {
            None => Duration::from_millis(DEFAULT_TIMEOUT_MS),
            Some(v) => v
                .as_u64()
                .filter(|ms| *ms > 0)
                .map(Duration::from_millis)
                .ok_or_else(|| format!("timeout_ms = {v}: must be a positive number"))?,
        };
        let max_answer_bytes = match map.get("max_answer_bytes") {
            None => DEFAULT_MAX_ANSWER_BYTES,
            Some(v) => v
                .as_u64()
                .filter(|n| (1..=MAX_MAX_ANSWER_BYTES).contains(n))
                .ok_or_else(|| {
                    format!("max_answer_bytes = {v}: must be a whole number, 1 to {MAX_MAX_ANSWER_BYTES}")
                })?,
        };
        ConversationPolicy::from_config(config)?;
        Ok(A2aConfig {
            url,
            headers,
            timeout,
            max_answer_bytes: usize::try_from(max_answer_bytes).unwrap_or(usize::MAX),
        })
    }

    /// Where the agent's card is.
    pub(crate) fn card_url(&self) -> Url {
        let mut url = self.url.clone();
        let path = url.path().trim_end_matches('/').to_owned();
        url.set_path(&format!("{path}/.well-known/agent-card.json"));
        url.set_query(None);
        url
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_minimal_config_takes_the_defaults() {
        let c = A2aConfig::parse(&json!({"kind": "a2a", "url": "http://127.0.0.1:8941"})).unwrap();
        assert_eq!(c.timeout, Duration::from_secs(30));
        assert_eq!(c.max_answer_bytes, 256 * 1024);
        assert_eq!(
            c.card_url().as_str(),
            "http://127.0.0.1:8941/.well-known/agent-card.json"
        );
        let under = A2aConfig::parse(&json!({"url": "https://h/agents/stores/"})).unwrap();
        assert_eq!(
            under.card_url().as_str(),
            "https://h/agents/stores/.well-known/agent-card.json"
        );
    }

    #[test]
    fn bad_settings_are_named() {
        for (config, expected) in [
            (json!({}), "needs a `url`"),
            (json!({"url": "ftp://h"}), "http:// or https://"),
            (json!({"url": "http://u:p@h"}), "no credentials"),
            (
                json!({"url": "http://h", "nope": 1}),
                "unknown setting `nope`",
            ),
            (json!({"url": "http://h", "timeout_ms": 0}), "timeout_ms"),
            (
                json!({"url": "http://h", "max_answer_bytes": 0}),
                "max_answer_bytes",
            ),
            (json!({"url": "http://h", "lifetime_s": 0}), "lifetime_s"),
            (
                json!({"url": "http://h", "headers": {"A2A-Version": "0.3"}}),
                "set by the connector",
            ),
            (json!({"url": "http://h", "headers": {"X": "inline"}}), ""),
        ] {
            match A2aConfig::parse(&config) {
                Err(e) => assert!(!expected.is_empty() && e.contains(expected), "{e}"),
                Ok(_) => assert!(expected.is_empty(), "{config} should fail"),
            }
        }
    }
}
