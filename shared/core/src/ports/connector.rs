//! The `Connector` port: how a tool reaches data, and the envelope it answers with (D-28).

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::principal::Principal;

/// Status of an envelope: the only decision boundary (D-28).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EnvelopeStatus {
    /// Payload is safe to use.
    Ok,
    /// Usable, degraded data.
    Partial,
    /// Not safe to act on: the call failed.
    Error,
}

/// A source that failed while building a partial answer (observability only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailedSource {
    /// Source name.
    pub source: String,
    /// Whether the producer considered it critical.
    #[serde(default)]
    pub critical: bool,
}

/// Cache metadata: observable, never acted on.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CacheMeta {
    /// Served from cache.
    #[serde(default)]
    pub cached: bool,
    /// Time to live in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_s: Option<u64>,
}

/// The universal response envelope of a data connector (`EnricherResponse`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    /// Decision boundary.
    pub status: EnvelopeStatus,
    /// The data.
    #[serde(default)]
    pub payload: serde_json::Value,
    /// Sources that failed (never inspected for criticality by consumers).
    #[serde(default)]
    pub partial: Vec<FailedSource>,
    /// Who the data is for, as asserted by the producer.
    pub principal: String,
    /// Semantic version of the payload schema.
    pub version: String,
    /// Kind of payload.
    pub domain_type: String,
    /// Producer id.
    pub enricher_id: String,
    /// Cache metadata.
    #[serde(default)]
    pub cache_meta: CacheMeta,
}

impl Envelope {
    /// The major version number, if the version parses.
    pub fn major_version(&self) -> Option<u64> {
        major_of(&self.version)
    }
}

/// Major component of a `MAJOR.MINOR.PATCH` version string.
pub fn major_of(version: &str) -> Option<u64> {
    version
        .trim()
        .trim_start_matches('v')
        .split('.')
        .next()?
        .parse()
        .ok()
}

/// One call of a tool through its connector.
#[derive(Debug, Clone)]
pub struct ConnectorRequest {
    /// Registry id of the tool.
    pub tool_id: Arc<str>,
    /// Connector configuration from `tools.yaml`.
    pub config: Arc<serde_json::Value>,
    /// Validated arguments.
    pub args: serde_json::Value,
    /// On whose behalf (D-29): always set.
    pub principal: Principal,
    /// Episode the call belongs to.
    pub episode_id: Arc<str>,
    /// Agent making the call.
    pub agent_id: Arc<str>,
    /// When the call is made (the runtime's clock, milliseconds since the Unix epoch):
    /// what a connector answers "as of", e.g. which offers have ended.
    pub now_ms: u64,
    /// Where the connector reports progress while the call runs, as status codes (D-12);
    /// `None` when nobody listens.
    pub progress: Option<Arc<dyn ProgressSink>>,
    /// The W3C `traceparent` of the call's `execute_tool` span (D-33), for a connector to
    /// send on so that the remote side's spans join the turn's trace; `None` when traces
    /// are not exported.
    pub traceparent: Option<Arc<str>>,
    /// A key this act carries on every attempt (the same call of the same turn, run again
    /// after a crash or a retried resume): a connector passes it on (HTTP:
    /// `Idempotency-Key`) so that a service can refuse to act twice (D-36).
    pub idempotency_key: Option<Arc<str>>,
    /// The principal's account links (D-37), for a connector whose server acts with the
    /// user's own authorization; `None` where this runtime keeps none.
    pub links: Option<Arc<dyn AccountLinks>>,
    /// The user's answer to what the service asked when this call was made before
    /// ([`ConnectorError::NeedsInput`]), to give if it asks the same again (D-36).
    pub input: Option<Arc<crate::input::InputGiven>>,
}

/// The account links a connector reads and renews for the principal of a call (D-37): what
/// a server's sign-in left (the connector's own text: tokens and what renews them), kept
/// sealed by the runtime, so a connector never sees another principal's.
#[async_trait]
pub trait AccountLinks: Send + Sync + std::fmt::Debug {
    /// What `principal`'s link to `server` holds, if they connected it.
    ///
    /// # Errors
    /// The store failed, or the link does not open (another key): in plain words.
    async fn open(&self, principal: &Principal, server: &str) -> Result<Option<String>, String>;

    /// Replaces what `principal`'s link to `server` holds (renewed tokens).
    ///
    /// # Errors
    /// The store failed, in plain words.
    async fn keep(&self, principal: &Principal, server: &str, contents: &str)
    -> Result<(), String>;
}

/// A call that cannot run until the user connects their account (D-37): the sign-in a
/// connector started, for the runtime to send the user to and to finish at its callback.
#[derive(Clone, PartialEq, Eq)]
pub struct LinkNeeded {
    /// The server, as the link's key.
    pub server: String,
    /// The server in plain words.
    pub label: String,
    /// The sign-in page, without its `state` (the runtime adds a sealed one).
    pub authorize_url: String,
    /// What the connector finishes the sign-in with (a PKCE verifier, its client): secret,
    /// sealed into the `state` by the runtime, never shown.
    pub pending: String,
}

impl std::fmt::Debug for LinkNeeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkNeeded")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

/// The idempotency key of `agent_id`'s call of `tool_id` with `args` in turn `turn_id` of
/// `episode_id`: the same act gets the same key, any other a different one.
pub fn idempotency_key(
    episode_id: &str,
    turn_id: &str,
    agent_id: &str,
    tool_id: &str,
    args: &serde_json::Value,
) -> String {
    use sha2::{Digest, Sha256};
    use std::fmt::Write as _;
    let mut hasher = Sha256::new();
    for part in [episode_id, turn_id, agent_id, tool_id] {
        hasher.update(part.as_bytes());
        // A separator keeps ("ab", "c") apart from ("a", "bc").
        hasher.update([0u8]);
    }
    hasher.update(args.to_string().as_bytes());
    let mut out = String::from("bk_");
    for b in &hasher.finalize()[..16] {
        // Writing to a String cannot fail.
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// Reads the W3C `traceparent` of the span the caller runs under, or `None` (D-33): how
/// the engine learns what to pass on without knowing the tracing backend.
pub type TraceContext = fn() -> Option<String>;

/// Links the span the caller runs under to the span a W3C `traceparent` names (D-33): a
/// resumed turn to the turn that waited, in another trace.
pub type TraceLink = fn(&str);

/// Receives a connector's progress while one call runs: each report is a typed status
/// code (D-12) that the orchestrator's card gives words to. Reports must not block.
pub trait ProgressSink: Send + Sync + std::fmt::Debug {
    /// One progress report.
    fn progress(&self, status_code: &str);
}

/// A tool as its backend describes it (an MCP server's tool listing): what `tools.yaml`
/// may leave out for such a connector.
#[derive(Debug, Clone, PartialEq)]
pub struct DiscoveredTool {
    /// The backend's description of the tool.
    pub description: Option<String>,
    /// The backend's JSON Schema of the arguments.
    pub schema: serde_json::Value,
}

/// What went wrong reaching a connector.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectorError {
    /// The backend could not be reached or failed; retrying later may help.
    #[error("connector unavailable: {0}")]
    Unavailable(String),
    /// The backend answered with something that is not an envelope.
    #[error("connector answered with an invalid envelope: {0}")]
    InvalidEnvelope(String),
    /// The connector is misconfigured.
    #[error("connector misconfigured: {0}")]
    Config(String),
    /// The server acts with the user's own authorization, and this principal has not
    /// connected their account (or it was revoked): the user must sign in first (D-37).
    #[error("the user must connect their account at {}", .0.label)]
    NeedsLink(Box<LinkNeeded>),
    /// The service had already seen this call's idempotency key (D-36): it acted before,
    /// on an earlier attempt of the same act, and did not act again. What it did then is
    /// not in this answer.
    #[error("the service had already acted on this request: {0}")]
    AlreadyActed(String),
    /// The service asked the user something mid-call (an MCP elicitation) that the call
    /// had no answer for: it was told the user cannot answer now, and did not act. The turn
    /// asks the user and makes the call again with the answer (D-36).
    #[error("the service asks the user: {}", .0.message)]
    NeedsInput(Box<crate::input::InputAsked>),
}

/// A kind of connector (fixture, envelope HTTP, ...).
///
/// Contract: one call, one envelope. Cancellation: the future may be dropped at any
/// await point (timeouts do so); a connector must not leave shared state half-written.
#[async_trait]
pub trait Connector: Send + Sync {
    /// Calls the backend for one tool invocation.
    async fn call(&self, request: ConnectorRequest) -> Result<Envelope, ConnectorError>;

    /// Checks one tool's connector configuration at load time (files exist, fields
    /// make sense), so a bad registry fails before serving.
    ///
    /// # Errors
    /// A plain description of what is wrong with the configuration.
    fn check_config(&self, tool_id: &str, config: &serde_json::Value) -> Result<(), String> {
        let _ = (tool_id, config);
        Ok(())
    }

    /// Asks the backend how it describes one tool (its description and argument schema),
    /// for connectors whose backends list their tools. Called once per tool when the
    /// registry is loaded, before it is validated; `Ok(None)`: this kind lists nothing.
    ///
    /// # Errors
    /// A plain description naming the backend when it cannot be reached or does not have
    /// the tool.
    async fn discover(
        &self,
        tool_id: &str,
        config: &serde_json::Value,
    ) -> Result<Option<DiscoveredTool>, String> {
        let _ = (tool_id, config);
        Ok(None)
    }

    /// The protocol a call leaves the process by (`http`, `mcp`), or `None` for a connector
    /// that answers in the process: a call that leaves it gets a CLIENT span (D-33).
    fn protocol(&self) -> Option<&'static str> {
        None
    }

    /// Waits for what the connector still does in the background for calls that ended (a
    /// remote task cancelled when its stream was dropped), each bounded by its own
    /// timeout: a process calls it before it exits, so that such work is not cut off.
    async fn settle(&self) {}

    /// Checks that one tool's backend can be used now (reachable, and speaking what the
    /// connector speaks). `baton validate` calls it for every tool; starting does not,
    /// so that one backend down at start does not stop the others (their calls fail
    /// plainly until it is back).
    ///
    /// # Errors
    /// A plain description naming the backend.
    async fn probe(&self, tool_id: &str, config: &serde_json::Value) -> Result<(), String> {
        let _ = (tool_id, config);
        Ok(())
    }

    /// The chat service behind this connector, when it is one: a tool of such a kind is
    /// served as a conversation by an external-wrapper specialist, not called as a tool
    /// (see [`UpstreamChat`](super::upstream::UpstreamChat)).
    fn upstream_chat(&self) -> Option<&dyn super::upstream::UpstreamChat> {
        None
    }

    /// Whether one tool's server acts with the user's own authorization, so that its calls
    /// need the principal's account links (D-37).
    fn acts_for_user(&self, config: &serde_json::Value) -> bool {
        let _ = config;
        false
    }

    /// Finishes a sign-in this connector started for one tool ([`LinkNeeded::pending`])
    /// with the `code` its authorization server sent back: what the link keeps (the
    /// connector's own text for [`AccountLinks`]).
    ///
    /// # Errors
    /// A refused or failed exchange, in plain words; nothing is kept.
    async fn finish_link(
        &self,
        config: &serde_json::Value,
        pending: &str,
        code: &str,
    ) -> Result<String, ConnectorError> {
        let _ = (config, pending, code);
        Err(ConnectorError::Config(
            "this kind of tool does not link accounts".to_owned(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_same_act_gets_the_same_key_and_any_other_another() {
        let key = |turn: &str, points: u32| {
            idempotency_key(
                "ep_1",
                turn,
                "rewards",
                "redeem",
                &json!({ "points": points }),
            )
        };
        assert_eq!(key("t1", 800), key("t1", 800));
        assert_ne!(key("t1", 800), key("t2", 800));
        assert_ne!(key("t1", 800), key("t1", 900));
        assert!(key("t1", 800).starts_with("bk_"));
        assert_ne!(
            idempotency_key("ab", "c", "x", "y", &json!({})),
            idempotency_key("a", "bc", "x", "y", &json!({}))
        );
    }
}
