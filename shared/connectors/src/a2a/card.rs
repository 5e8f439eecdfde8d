//! The agent's card (`/.well-known/agent-card.json`): fetched, checked for what Baton
//! speaks (A2A 1.x over JSON-RPC, streaming), and the endpoint chosen from its
//! `supportedInterfaces`.

use ::a2a::AgentCard;
use futures::StreamExt;
use reqwest::Url;
use reqwest::header::HeaderMap;

use crate::error::{chain, clip};

/// The largest card read.
const MAX_CARD_BYTES: usize = 256 * 1024;
/// The protocol binding Baton speaks.
const BINDING: &str = "JSONRPC";

/// What Baton uses of a card.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    /// Where JSON-RPC requests go.
    pub(crate) rpc: Url,
    /// The protocol version chosen (sent as `A2A-Version`).
    pub(crate) version: String,
    /// The agent's own description (its name when it gives none).
    pub(crate) description: String,
}

/// Why a card could not be had.
pub(crate) enum CardError {
    /// Not reached, or not answered: the agent may be back later.
    Unreachable(String),
    /// Answered, with a card Baton cannot use.
    Unusable(String),
}

/// Fetches and checks the card at `url`.
///
/// # Errors
/// Why the agent cannot be used, in plain words.
pub(crate) async fn fetch(
    http: &reqwest::Client,
    url: &Url,
    headers: HeaderMap,
    timeout: std::time::Duration,
) -> Result<Endpoint, CardError> {
    let down = |why: String| CardError::Unreachable(clip(why));
    let response = http
        .get(url.clone())
        .headers(headers)
        .header(reqwest::header::ACCEPT, "application/json")
        .timeout(timeout)
        .send()
        .await
        .map_err(|e| {
            down(format!(
                "its card at {url} cannot be fetched: {}",
                chain(&e)
            ))
        })?;
    let status = response.status();
    if !status.is_success() {
        return Err(down(format!(
            "its card at {url} answered HTTP {}",
            status.as_u16()
        )));
    }
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk =
            chunk.map_err(|e| down(format!("its card at {url} broke off: {}", chain(&e))))?;
        if body.len() + chunk.len() > MAX_CARD_BYTES {
            return Err(CardError::Unusable(format!(
                "its card at {url} is larger than {MAX_CARD_BYTES} bytes"
            )));
        }
        body.extend_from_slice(&chunk);
    }
    let card: AgentCard = serde_json::from_slice(&body).map_err(|e| {
        CardError::Unusable(clip(format!(
            "its card at {url} is not an A2A 1.0 agent card: {e}"
        )))
    })?;
    check(&card).map_err(|why| CardError::Unusable(format!("its card at {url}: {why}")))
}

/// What Baton needs of a card: a JSON-RPC interface of protocol version 1.x, over http(s),
/// and streaming.
pub(crate) fn check(card: &AgentCard) -> Result<Endpoint, String> {
    let offered: Vec<String> = card
        .supported_interfaces
        .iter()
        .map(|i| format!("{} {}", i.protocol_binding, i.protocol_version))
        .collect();
    let interface = card
        .supported_interfaces
        .iter()
        .filter(|i| i.protocol_binding.eq_ignore_ascii_case(BINDING))
        .find(|i| major(&i.protocol_version) == Some(1))
        .ok_or_else(|| {
            format!(
                "it offers no JSON-RPC interface of A2A 1.x (it offers: {})",
                if offered.is_empty() {
                    "nothing".to_owned()
                } else {
                    offered.join(", ")
                }
            )
        })?;
    let rpc = Url::parse(&interface.url)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .ok_or_else(|| {
            format!(
                "its JSON-RPC interface URL {:?} is not an http(s) URL",
                interface.url
            )
        })?;
    if card.capabilities.streaming != Some(true) {
        return Err(
            "it does not stream (capabilities.streaming); Baton needs SendStreamingMessage"
                .to_owned(),
        );
    }
    let description = if card.description.trim().is_empty() {
        card.name.clone()
    } else {
        card.description.clone()
    };
    Ok(Endpoint {
        rpc,
        version: interface.protocol_version.clone(),
        description,
    })
}

/// The major number of a version such as `1.0`.
fn major(version: &str) -> Option<u32> {
    version.split('.').next()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn card(value: serde_json::Value) -> AgentCard {
        serde_json::from_value(value).unwrap()
    }

    fn base() -> serde_json::Value {
        json!({
            "name": "Store finder",
            "description": "Where the stores are.",
            "version": "1.0.0",
            "supportedInterfaces": [
                {"url": "grpc.example:443", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
                {"url": "http://127.0.0.1:8941/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            ],
            "capabilities": {"streaming": true},
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"],
            "skills": [],
        })
    }

    #[test]
    fn the_json_rpc_interface_of_version_one_is_chosen() {
        let e = check(&card(base())).unwrap();
        assert_eq!(e.rpc.as_str(), "http://127.0.0.1:8941/");
        assert_eq!(e.version, "1.0");
        assert_eq!(e.description, "Where the stores are.");
    }

    #[test]
    fn an_incompatible_card_says_why() {
        let mut old = base();
        old["supportedInterfaces"] =
            json!([{"url": "http://h/", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}]);
        let e = check(&card(old)).unwrap_err();
        assert!(
            e.contains("no JSON-RPC interface of A2A 1.x (it offers: JSONRPC 0.3)"),
            "{e}"
        );
        let mut still = base();
        still["capabilities"] = json!({});
        assert!(check(&card(still)).unwrap_err().contains("does not stream"));
        let mut grpc_only = base();
        grpc_only["supportedInterfaces"] =
            json!([{"url": "h:443", "protocolBinding": "GRPC", "protocolVersion": "1.0"}]);
        assert!(check(&card(grpc_only)).unwrap_err().contains("GRPC 1.0"));
        let mut nameless = base();
        nameless["description"] = json!("");
        assert_eq!(check(&card(nameless)).unwrap().description, "Store finder");
    }
}
