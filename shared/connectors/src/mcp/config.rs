//! The `mcp` connector's settings in `tools.yaml`, checked by hand so that every problem
//! is named in words a registry author can act on (unknown keys list the allowed ones).

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::header::HeaderName;
use serde_json::{Map, Value};

use crate::envelope::EnvelopeMeta;
use crate::oauth::AuthSpec;
use crate::secrets::{HeaderSpec, parse_headers};

/// The settings a tool's `connector:` block may hold (`kind` included).
const SETTINGS: &[&str] = &[
    "kind",
    "server",
    "tool",
    "domain_type",
    "enricher_id",
    "version",
    "progress_status",
    "connect_timeout_ms",
    "call_timeout_ms",
];
/// The settings of the `server:` block.
const SERVER_SETTINGS: &[&str] = &["command", "env", "url", "headers", "oauth"];
/// Headers the transport sets itself (MCP's own, and HTTP framing).
const RESERVED_HEADERS: &[&str] = &[
    "accept",
    "content-type",
    "content-length",
    "host",
    "connection",
    "transfer-encoding",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];
/// How long starting a session or listing tools may take unless the tool says otherwise.
const DEFAULT_CONNECT_TIMEOUT_MS: u64 = 10_000;
/// A timeout longer than a day is a typo, not a wish.
const MAX_TIMEOUT_MS: u64 = 24 * 60 * 60 * 1000;

/// One variable of a stdio server's environment.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum EnvValue {
    /// Written in `tools.yaml`.
    Literal(String),
    /// Copied from Baton's own environment when the server starts (`{env: NAME}`), so
    /// that secrets stay out of the registry.
    FromEnv(String),
}

/// Where an MCP server runs. Sessions are shared by every tool naming the same server.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Server {
    /// A child process speaking MCP over its stdin and stdout.
    Command {
        /// The program, then its arguments.
        command: Vec<String>,
        /// Variables added to the few the server inherits.
        env: BTreeMap<String, EnvValue>,
    },
    /// A streamable-HTTP endpoint.
    Url(HttpServer),
}

/// A streamable-HTTP server and how Baton authenticates to it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct HttpServer {
    pub(crate) url: String,
    /// Sent on every request (secrets by reference, as the `http` connector's).
    pub(crate) headers: Vec<(HeaderName, HeaderSpec)>,
    /// OAuth as a client acting as itself.
    pub(crate) oauth: Option<AuthSpec>,
}

impl Server {
    /// How the server is named in messages: its command line, or its URL without
    /// credentials or query (never the environment, which may hold secrets).
    pub(crate) fn label(&self) -> String {
        match self {
            Server::Command { command, .. } => command.join(" "),
            Server::Url(HttpServer { url, .. }) => match reqwest::Url::parse(url) {
                Ok(mut parsed) => {
                    // Best effort: these setters fail only for URLs that cannot have them.
                    let _ = parsed.set_username("");
                    let _ = parsed.set_password(None);
                    parsed.set_query(None);
                    parsed.set_fragment(None);
                    parsed.to_string()
                }
                Err(_) => url.clone(),
            },
        }
    }
}

/// One tool's `mcp` settings.
#[derive(Debug, Clone)]
pub(crate) struct McpConfig {
    pub(crate) server: Server,
    /// The server's name for the tool; the tool id when absent.
    pub(crate) tool: Option<String>,
    pub(crate) meta: EnvelopeMeta,
    pub(crate) progress_status: Option<String>,
    pub(crate) connect_timeout: Duration,
    pub(crate) call_timeout: Option<Duration>,
}

impl McpConfig {
    /// Parses and checks a tool's settings.
    pub(crate) fn parse(config: &Value) -> Result<Self, String> {
        let config = config
            .as_object()
            .ok_or("the connector settings must be a mapping")?;
        refuse_unknown(config, SETTINGS, "setting")?;
        let server = server_of(config.get("server"))?;
        let tool = match config.get("tool") {
            None => None,
            Some(v) => Some(text(v, "tool", "the server's name for the tool")?),
        };
        let meta = EnvelopeMeta {
            domain_type: required_text(config, "domain_type")?,
            enricher_id: required_text(config, "enricher_id")?,
            version: required_text(config, "version")?,
        };
        meta.check()?;
        let progress_status = match config.get("progress_status") {
            None => None,
            Some(v) => Some(text(v, "progress_status", "a status code")?),
        };
        let connect_timeout = match config.get("connect_timeout_ms") {
            None => Duration::from_millis(DEFAULT_CONNECT_TIMEOUT_MS),
            Some(v) => millis(v, "connect_timeout_ms")?,
        };
        let call_timeout = match config.get("call_timeout_ms") {
            None => None,
            Some(v) => Some(millis(v, "call_timeout_ms")?),
        };
        Ok(McpConfig {
            server,
            tool,
            meta,
            progress_status,
            connect_timeout,
            call_timeout,
        })
    }

    /// The server's name for the tool.
    pub(crate) fn tool_name<'a>(&'a self, tool_id: &'a str) -> &'a str {
        self.tool.as_deref().unwrap_or(tool_id)
    }
}

fn server_of(server: Option<&Value>) -> Result<Server, String> {
    const HOW: &str = "give `server: {command: [program, args...]}` for a stdio server or `server: {url: http://host/mcp}` for streamable HTTP";
    let server = match server {
        None => return Err(format!("needs a `server`; {HOW}")),
        Some(Value::Object(server)) => server,
        Some(other) => return Err(format!("server = {other} is not a mapping; {HOW}")),
    };
    refuse_unknown(server, SERVER_SETTINGS, "server setting")?;
    match (server.get("command"), server.get("url")) {
        (Some(command), None) => {
            if let Some(key) = ["headers", "oauth"]
                .into_iter()
                .find(|k| server.contains_key(*k))
            {
                return Err(format!(
                    "server.{key} applies to a `url` server; a stdio server takes its credentials through server.env"
                ));
            }
            let command = command_of(command)?;
            let env = match server.get("env") {
                None => BTreeMap::new(),
                Some(env) => env_of(env)?,
            };
            Ok(Server::Command { command, env })
        }
        (None, Some(url)) => {
            if server.contains_key("env") {
                return Err(
                    "server.env applies to a stdio server (`command`), not to a `url`".to_owned(),
                );
            }
            let headers = match server.get("headers") {
                None => Vec::new(),
                Some(Value::Object(raw)) => {
                    parse_headers(raw, RESERVED_HEADERS).map_err(|e| format!("server.{e}"))?
                }
                Some(_) => {
                    return Err("server.headers must be a mapping of names to values".to_owned());
                }
            };
            let oauth = match server.get("oauth") {
                None => None,
                Some(raw) => Some(AuthSpec::parse("server.oauth", raw)?),
            };
            if oauth.is_some()
                && headers
                    .iter()
                    .any(|(name, _)| name == reqwest::header::AUTHORIZATION)
            {
                return Err(
                    "server.headers.Authorization and server.oauth both set the Authorization header; give one".to_owned(),
                );
            }
            Ok(Server::Url(HttpServer {
                url: url_of(url)?,
                headers,
                oauth,
            }))
        }
        (Some(_), Some(_)) => Err(format!(
            "server has both `command` and `url`; give exactly one: {HOW}"
        )),
        (None, None) => Err(format!("server has neither `command` nor `url`; {HOW}")),
    }
}

fn command_of(command: &Value) -> Result<Vec<String>, String> {
    let bad = || {
        format!(
            "server.command = {command} must be a non-empty list of non-empty strings, the program first"
        )
    };
    let items = command
        .as_array()
        .filter(|a| !a.is_empty())
        .ok_or_else(bad)?;
    items
        .iter()
        .map(|item| {
            item.as_str()
                .filter(|s| !s.is_empty() && !s.contains('\0'))
                .map(str::to_owned)
                .ok_or_else(bad)
        })
        .collect()
}

fn env_of(env: &Value) -> Result<BTreeMap<String, EnvValue>, String> {
    let env = env
        .as_object()
        .ok_or_else(|| format!("server.env = {env} must be a mapping of names to values"))?;
    env.iter()
        .map(|(name, value)| {
            if !is_variable_name(name) {
                return Err(format!(
                    "server.env: {name:?} is not a variable name (empty, or has `=`)"
                ));
            }
            let parsed = match value {
                Value::String(s) if !s.contains('\0') => Some(EnvValue::Literal(s.clone())),
                // Numbers and booleans are written as YAML authors expect them to read.
                Value::Number(n) => Some(EnvValue::Literal(n.to_string())),
                Value::Bool(b) => Some(EnvValue::Literal(b.to_string())),
                Value::Object(from) if from.len() == 1 => from
                    .get("env")
                    .and_then(Value::as_str)
                    .filter(|var| is_variable_name(var))
                    .map(|var| EnvValue::FromEnv(var.to_owned())),
                _ => None,
            };
            parsed.map(|v| (name.clone(), v)).ok_or_else(|| {
                format!(
                    "server.env.{name} = {value} must be a string, a number, a boolean or {{env: VARIABLE}}"
                )
            })
        })
        .collect()
}

fn is_variable_name(name: &str) -> bool {
    !name.is_empty() && !name.contains(['=', '\0'])
}

fn url_of(url: &Value) -> Result<String, String> {
    let url = url
        .as_str()
        .ok_or_else(|| format!("server.url = {url} must be a string"))?;
    let parsed =
        reqwest::Url::parse(url).map_err(|e| format!("server.url {url:?} is not a URL: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none_or(str::is_empty) {
        return Err(format!(
            "server.url {url:?} must be an http:// or https:// URL with a host"
        ));
    }
    Ok(url.to_owned())
}

fn refuse_unknown(map: &Map<String, Value>, allowed: &[&str], what: &str) -> Result<(), String> {
    match map.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(key) => Err(format!(
            "unknown {what} `{key}`; allowed: {}",
            allowed.join(", ")
        )),
        None => Ok(()),
    }
}

fn required_text(config: &Map<String, Value>, key: &str) -> Result<String, String> {
    match config.get(key) {
        Some(v) => text(v, key, "the envelope header"),
        None => Err(format!("needs `{key}` (part of the envelope header)")),
    }
}

fn text(value: &Value, key: &str, what: &str) -> Result<String, String> {
    value
        .as_str()
        .filter(|s| !s.trim().is_empty())
        .map(str::to_owned)
        .ok_or_else(|| format!("{key} = {value} must be a non-empty string ({what})"))
}

fn millis(value: &Value, key: &str) -> Result<Duration, String> {
    value
        .as_u64()
        .filter(|ms| (1..=MAX_TIMEOUT_MS).contains(ms))
        .map(Duration::from_millis)
        .ok_or_else(|| {
            format!("{key} = {value} must be a whole number of milliseconds, 1 to {MAX_TIMEOUT_MS}")
        })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn base() -> Value {
        json!({
            "kind": "mcp",
            "server": {"command": ["python3", "server.py", "stdio"]},
            "domain_type": "echo",
            "enricher_id": "mcp-test",
            "version": "1.0.0",
        })
    }

    fn with(key: &str, value: Value) -> Value {
        let mut config = base();
        config[key] = value;
        config
    }

    fn err(config: Value) -> String {
        McpConfig::parse(&config).unwrap_err()
    }

    #[test]
    fn a_minimal_stdio_tool_parses_with_the_defaults() {
        let c = McpConfig::parse(&base()).unwrap();
        assert_eq!(c.tool_name("echo_tool"), "echo_tool");
        assert_eq!(c.connect_timeout, Duration::from_millis(10_000));
        assert_eq!(c.call_timeout, None);
        assert_eq!(c.server.label(), "python3 server.py stdio");
        let c = McpConfig::parse(&with("tool", json!("echo"))).unwrap();
        assert_eq!(c.tool_name("echo_tool"), "echo");
    }

    #[test]
    fn unknown_keys_are_refused_listing_the_allowed_ones() {
        let e = err(with("tols", json!("echo")));
        assert!(e.contains("`tols`") && e.contains("progress_status"), "{e}");
        let e = err(with("server", json!({"command": ["x"], "cwd": "/"})));
        assert!(
            e.contains("`cwd`") && e.contains("command, env, url"),
            "{e}"
        );
    }

    #[test]
    fn the_server_needs_exactly_one_of_command_and_url() {
        let e = err(with(
            "server",
            json!({"command": ["x"], "url": "http://h/mcp"}),
        ));
        assert!(e.contains("both"), "{e}");
        let e = err(with("server", json!({})));
        assert!(e.contains("neither"), "{e}");
        let e = err(with("server", json!("python3 server.py")));
        assert!(e.contains("not a mapping"), "{e}");
        let mut config = base();
        config.as_object_mut().unwrap().remove("server");
        assert!(err(config).contains("needs a `server`"));
    }

    #[test]
    fn commands_must_be_non_empty_lists_of_strings() {
        for bad in [
            json!([]),
            json!("python3"),
            json!(["python3", 3]),
            json!([""]),
        ] {
            let e = err(with("server", json!({"command": bad})));
            assert!(e.contains("server.command"), "{e}");
        }
    }

    #[test]
    fn urls_must_be_http_or_https_with_a_host() {
        for bad in ["ftp://h/mcp", "not a url", "http://"] {
            let e = err(with("server", json!({"url": bad})));
            assert!(e.contains("server.url"), "{bad}: {e}");
        }
        let c = McpConfig::parse(&with(
            "server",
            json!({"url": "https://user:pw@h:8443/mcp?token=s"}),
        ))
        .unwrap();
        assert_eq!(c.server.label(), "https://h:8443/mcp");
        let e = err(with(
            "server",
            json!({"url": "http://h/mcp", "env": {"A": "b"}}),
        ));
        assert!(e.contains("server.env"), "{e}");
    }

    #[test]
    fn env_values_are_strings_and_names_are_names() {
        let c = McpConfig::parse(&with(
            "server",
            json!({"command": ["x"], "env": {"A": "b", "N": 3, "F": true}}),
        ))
        .unwrap();
        let Server::Command { env, .. } = c.server else {
            panic!("a command server")
        };
        assert_eq!(env["N"], EnvValue::Literal("3".into()));
        let c = McpConfig::parse(&with(
            "server",
            json!({"command": ["x"], "env": {"KEY": {"env": "MY_KEY"}}}),
        ))
        .unwrap();
        let Server::Command { env, .. } = c.server else {
            panic!("a command server")
        };
        assert_eq!(env["KEY"], EnvValue::FromEnv("MY_KEY".into()));
        let e = err(with(
            "server",
            json!({"command": ["x"], "env": {"KEY": {"env": ""}}}),
        ));
        assert!(e.contains("{env: VARIABLE}"), "{e}");
        let e = err(with(
            "server",
            json!({"command": ["x"], "env": {"A=B": "c"}}),
        ));
        assert!(e.contains("variable name"), "{e}");
        let e = err(with(
            "server",
            json!({"command": ["x"], "env": {"A": ["c"]}}),
        ));
        assert!(e.contains("server.env.A"), "{e}");
    }

    #[test]
    fn the_envelope_header_is_required_and_checked() {
        let mut config = base();
        config.as_object_mut().unwrap().remove("domain_type");
        assert!(err(config).contains("domain_type"));
        let e = err(with("version", json!("latest")));
        assert!(e.contains("latest"), "{e}");
        let e = err(with("enricher_id", json!(" ")));
        assert!(e.contains("enricher_id"), "{e}");
    }

    #[test]
    fn timeouts_are_positive_milliseconds() {
        for bad in [json!(0), json!(-1), json!("5s"), json!(1.5)] {
            let e = err(with("call_timeout_ms", bad));
            assert!(e.contains("call_timeout_ms"), "{e}");
        }
        let c = McpConfig::parse(&with("connect_timeout_ms", json!(250))).unwrap();
        assert_eq!(c.connect_timeout, Duration::from_millis(250));
    }
}
