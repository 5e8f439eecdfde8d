//! `mcp`: tools served by a Model Context Protocol server, through the official Rust SDK
//! (`rmcp`). One `tools.yaml` entry per MCP tool; its description and argument schema may
//! be left to the server's listing ([`Connector::discover`]).
//!
//! ```yaml
//! connector:
//!   kind: mcp
//!   server:
//!     command: [python3, mcp/server.py]   # stdio; runs in the registry root
//!     env: {NAME: value, KEY: {env: VAR}} # optional; the server inherits only HOME,
//!                                         # LOGNAME, PATH, SHELL, TERM and USER
//!     # or: url: http://127.0.0.1:8931/mcp  (streamable HTTP)
//!   tool: echo                  # the server's tool name (default: the tool id)
//!   domain_type: echo           # envelope header
//!   enricher_id: mcp-everything
//!   version: 1.0.0
//!   progress_status: searching  # optional: reported on each progress notification
//!   connect_timeout_ms: 10000   # optional: starting a session, listing tools
//!   call_timeout_ms: 30000      # optional: one tools/call
//! ```
//!
//! The principal, episode and agent travel as the request's `_meta` (`baton/principal`,
//! `baton/episode`, `baton/agent`). See `docs/connectors-mcp.md`.

mod authorized;
mod call;
mod config;
mod fault;
mod handler;
mod progress;
mod questions;
mod session;

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use baton_core::ports::connector::{
    Connector, ConnectorError, ConnectorRequest, DiscoveredTool, Envelope,
};
use serde_json::{Map, Value};

use crate::oauth::{AuthSpec, UserAuthorizer};
use crate::secrets::{EnvSecretSource, SecretSource, Secrets};
use call::{Origin, baton_meta, call_tool, envelope_of};
use config::{EnvValue, McpConfig, Server};
use fault::Fault;
use session::Pool;
use session::User;

/// Calls tools on MCP servers (`connector: {kind: mcp, server: ...}`), over stdio or
/// streamable HTTP. Sessions are shared per server and started on first use; a session
/// whose server is gone is started again by the next call.
pub struct McpConnector {
    pool: Pool,
}

impl std::fmt::Debug for McpConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpConnector").finish_non_exhaustive()
    }
}

impl McpConnector {
    /// The connector kind named in `tools.yaml`.
    pub const KIND: &'static str = "mcp";

    /// A connector whose stdio servers run in `registry_root` (relative paths in their
    /// commands are the registry's), and whose HTTP servers' secrets (headers, OAuth
    /// client credentials) come from environment variables. Nothing starts until a tool
    /// is discovered or called.
    pub fn new(registry_root: &Path) -> Self {
        Self::with_secret_source(registry_root, Arc::new(EnvSecretSource))
    }

    /// As [`McpConnector::new`], with the secrets from `source` (on Lambda: Secrets
    /// Manager and SSM by ARN).
    pub fn with_secret_source(registry_root: &Path, source: Arc<dyn SecretSource>) -> Self {
        McpConnector {
            pool: Pool::new(registry_root, Arc::new(Secrets::new(source))),
        }
    }

    /// Has users sign in through `authorizer` for servers that act with the user's own
    /// authorization (`oauth: {grant: authorization_code, ...}`). One connector's tokens
    /// are one user's: this is for a connector that serves a single user.
    pub fn with_user_authorizer(mut self, authorizer: Arc<dyn UserAuthorizer>) -> Self {
        self.pool.set_authorizer(authorizer);
        self
    }
}

#[async_trait]
impl Connector for McpConnector {
    fn protocol(&self) -> Option<&'static str> {
        Some("mcp")
    }

    async fn call(&self, request: ConnectorRequest) -> Result<Envelope, ConnectorError> {
        let config = McpConfig::parse(&request.config).map_err(ConnectorError::Config)?;
        let server = config.server.label();
        let tool = config.tool_name(&request.tool_id);
        let fail = |fault: Fault| format!("MCP server {server}, tool {tool}: {fault}");
        let args = match &request.args {
            Value::Object(args) => args.clone(),
            Value::Null => Map::new(),
            other => {
                return Err(ConnectorError::Config(format!(
                    "tool {tool}: arguments must be a JSON object, not {other}"
                )));
            }
        };
        let progress = match (&request.progress, &config.progress_status) {
            (Some(sink), Some(status)) => Some((sink.clone(), Arc::from(status.as_str()))),
            _ => None,
        };
        // A server that acts for the user gets the principal's own session and tokens.
        let user = match (&request.links, acts_for_user(&config)) {
            (Some(links), true) => Some(User {
                principal: request.principal.clone(),
                links: links.clone(),
            }),
            _ => None,
        };
        let user = user.as_ref();
        let needs_link = || {
            self.pool
                .take_needed(&config.server, user)
                .map(|needed| ConnectorError::NeedsLink(Box::new(needed)))
        };
        let session = match self
            .pool
            .session(&config.server, user, config.connect_timeout)
            .await
        {
            Ok(session) => session,
            Err(f) => return Err(needs_link().unwrap_or(ConnectorError::Unavailable(fail(f)))),
        };
        let call = call_tool(
            &session,
            tool,
            args,
            baton_meta(&request),
            progress,
            request.input.clone(),
        );
        let answer = match config.call_timeout {
            Some(after) => tokio::time::timeout(after, call)
                .await
                .unwrap_or(Err(Fault::Timeout { after })),
            None => call.await,
        };
        match answer {
            Ok(result) => Ok(envelope_of(
                result,
                &config.meta,
                request.principal.as_str(),
                &Origin {
                    server: &server,
                    tool,
                },
            )),
            Err(fault) => {
                if fault.ends_session() {
                    self.pool.forget(&config.server, user, &session);
                }
                if let Some(needed) = needs_link() {
                    return Err(needed);
                }
                Err(match fault {
                    Fault::Asked(asked) => ConnectorError::NeedsInput(asked),
                    Fault::Garbage(_) => ConnectorError::InvalidEnvelope(fail(fault)),
                    _ => ConnectorError::Unavailable(fail(fault)),
                })
            }
        }
    }

    fn check_config(&self, _tool_id: &str, config: &Value) -> Result<(), String> {
        let config = McpConfig::parse(config)?;
        // What the server needs is checked now, so a bad setup fails at load time.
        match &config.server {
            Server::Command { env, .. } => {
                for (name, value) in env {
                    if let EnvValue::FromEnv(from) = value
                        && std::env::var_os(from).is_none()
                    {
                        return Err(format!(
                            "server.env.{name}: the environment variable {from} is not set"
                        ));
                    }
                }
            }
            Server::Url(http) => {
                self.pool
                    .secrets()
                    .header_map(&http.headers)
                    .map_err(|e| format!("server.{e}"))?;
                if let Some(oauth) = &http.oauth {
                    oauth
                        .check(self.pool.secrets())
                        .map_err(|e| format!("server.oauth: {e}"))?;
                }
            }
        }
        Ok(())
    }

    async fn discover(
        &self,
        tool_id: &str,
        config: &Value,
    ) -> Result<Option<DiscoveredTool>, String> {
        let config = McpConfig::parse(config)?;
        if acts_for_user(&config) {
            // Only a signed-in user may list its tools: `tools.yaml` describes them.
            return Ok(None);
        }
        let server = config.server.label();
        let tool = config.tool_name(tool_id);
        let fail = |what: String| format!("MCP server {server}, tool {tool}: {what}");
        let session = self
            .pool
            .session(&config.server, None, config.connect_timeout)
            .await
            .map_err(|f| fail(f.to_string()))?;
        let listing = tokio::time::timeout(config.connect_timeout, session.peer().list_all_tools())
            .await
            .unwrap_or_else(|_| {
                Err(rmcp::ServiceError::Timeout {
                    timeout: config.connect_timeout,
                })
            });
        let tools = match listing {
            Ok(tools) => tools,
            Err(e) => {
                let fault = Fault::from(e);
                if fault.ends_session() {
                    self.pool.forget(&config.server, None, &session);
                }
                return Err(fail(format!("listing its tools failed: {fault}")));
            }
        };
        let Some(found) = tools.iter().find(|t| t.name == tool) else {
            let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
            return Err(fail(format!(
                "the server has no such tool (it lists: {})",
                if names.is_empty() {
                    "nothing".to_owned()
                } else {
                    names.join(", ")
                }
            )));
        };
        let schema = Value::Object((*found.input_schema).clone());
        if let Err(e) = jsonschema::validator_for(&schema) {
            return Err(fail(format!(
                "its inputSchema is not a valid JSON Schema: {e}"
            )));
        }
        Ok(Some(DiscoveredTool {
            description: found.description.as_ref().map(|d| d.to_string()),
            schema,
        }))
    }

    fn acts_for_user(&self, config: &Value) -> bool {
        McpConfig::parse(config).is_ok_and(|c| acts_for_user(&c))
    }

    async fn finish_link(
        &self,
        config: &Value,
        pending: &str,
        code: &str,
    ) -> Result<String, ConnectorError> {
        let config = McpConfig::parse(config).map_err(ConnectorError::Config)?;
        if !acts_for_user(&config) {
            return Err(ConnectorError::Config(
                "this server does not act with the user's own sign-in".to_owned(),
            ));
        }
        let http = self.pool.http().map_err(ConnectorError::Unavailable)?;
        crate::oauth::finish_link(&http, pending, code).await
    }
}

/// Whether the server acts with the user's own authorization (`grant: authorization_code`).
fn acts_for_user(config: &McpConfig) -> bool {
    matches!(&config.server, Server::Url(http) if matches!(http.oauth, Some(AuthSpec::User(_))))
}
