//! MCP sessions, one per server and process (per server and principal for a server that
//! acts with the user's own authorization, D-37): started on first use, shared by every
//! call and every tool naming that server, and dropped (to be started again on the next
//! use) once the server is gone.
//!
//! No lock is held while a call waits for its answer: a call holds only its session, so a
//! call that hangs, or whose future is dropped, cannot hold up the others. Starting a
//! session holds its server's start gate, bounded by the connect timeout.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::service::ClientInitializeError;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::common::client_side_sse::SseRetryPolicy;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{Peer, ServiceExt};
use tokio::io::{AsyncBufReadExt, AsyncReadExt};

use super::authorized::Authorized;
use super::config::{EnvValue, HttpServer, Server};
use super::fault::{Fault, chain, clip};
use super::handler::Handler;
use super::progress::ProgressRouter;
use super::questions::QuestionRouter;
use baton_core::Principal;
use baton_core::ports::connector::{AccountLinks, LinkNeeded};

use crate::oauth::{
    AuthSpec, LinkedTokenSource, TokenSource, Tokens, UserAuthorizer, UserTokenSource,
};
use crate::secrets::Secrets;

/// What a stdio server inherits of Baton's environment (as the official MCP SDKs do):
/// enough to run, and none of Baton's credentials. `server.env` adds the rest.
const INHERITED_ENV: [&str; 6] = ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];
/// How many of a stdio server's last stderr lines a start error quotes.
const STDERR_TAIL_LINES: usize = 3;
/// Longest stderr line read at once.
const STDERR_LINE_BYTES: u64 = 4096;
/// How long a failed start waits for the server's stderr to end.
const STDERR_GRACE: Duration = Duration::from_millis(300);

/// One live MCP session.
pub(crate) struct Session {
    service: RunningService<RoleClient, Arc<Handler>>,
    handler: Arc<Handler>,
}

impl Session {
    /// The handle requests are sent through.
    pub(crate) fn peer(&self) -> &Peer<RoleClient> {
        self.service.peer()
    }

    /// Where this session's progress notifications are routed.
    pub(crate) fn router(&self) -> &Arc<ProgressRouter> {
        &self.handler.progress
    }

    /// Where this session's questions for the user are routed.
    pub(crate) fn questions(&self) -> &Arc<QuestionRouter> {
        &self.handler.questions
    }

    /// False once the transport has closed (the process exited, the stream ended).
    fn is_alive(&self) -> bool {
        !self.service.is_closed() && !self.service.is_transport_closed()
    }
}

/// A server's session, the gate that lets one task at a time start it, and (for a
/// server requiring OAuth) its tokens, which outlive sessions.
#[derive(Default)]
struct Slot {
    current: Mutex<Option<Arc<Session>>>,
    starting: tokio::sync::Mutex<()>,
    tokens: std::sync::OnceLock<Arc<dyn Tokens>>,
}

impl Slot {
    fn live(&self) -> Option<Arc<Session>> {
        let current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        current.as_ref().filter(|s| s.is_alive()).cloned()
    }
}

/// A session's key: its server, and the principal for a server that acts for the user.
type SlotKey = (Server, Option<Principal>);

/// Whose session: the principal, for a server that acts with their own authorization, and
/// where their links are kept.
#[derive(Clone)]
pub(crate) struct User {
    pub(crate) principal: Principal,
    pub(crate) links: Arc<dyn AccountLinks>,
}

/// The sessions of one connector, keyed by server settings (and principal, for a server
/// that acts for the user).
pub(crate) struct Pool {
    root: PathBuf,
    http: Result<reqwest::Client, String>,
    secrets: Arc<Secrets>,
    slots: Mutex<HashMap<SlotKey, Arc<Slot>>>,
    /// Who has the user sign in, for servers that need the user's own authorization.
    authorizer: Option<Arc<dyn UserAuthorizer>>,
}

impl Pool {
    /// An empty pool; commands start in `root` (the registry root).
    pub(crate) fn new(root: &Path, secrets: Arc<Secrets>) -> Self {
        crate::install_tls_provider();
        Pool {
            root: root.to_path_buf(),
            // Kept as an error (not a panic) when no client can be built: only HTTP
            // servers need one, and their calls then report why.
            http: crate::tls::client_builder().build().map_err(|e| chain(&e)),
            secrets,
            slots: Mutex::new(HashMap::new()),
            authorizer: None,
        }
    }

    /// Has users sign in through `authorizer` (servers with `grant: authorization_code`).
    pub(crate) fn set_authorizer(&mut self, authorizer: Arc<dyn UserAuthorizer>) {
        self.authorizer = Some(authorizer);
    }

    /// The secrets of the HTTP servers' headers and OAuth credentials.
    pub(crate) fn secrets(&self) -> &Secrets {
        &self.secrets
    }

    /// The HTTP client of the servers (and their authorization servers).
    pub(crate) fn http(&self) -> Result<reqwest::Client, String> {
        self.http.clone()
    }

    fn slot(&self, server: &Server, user: Option<&User>) -> Arc<Slot> {
        let key = (server.clone(), user.map(|u| u.principal.clone()));
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        slots.entry(key).or_default().clone()
    }

    /// The sign-in a session of `server` for `user` started because the user must
    /// connect their account, once.
    pub(crate) fn take_needed(&self, server: &Server, user: Option<&User>) -> Option<LinkNeeded> {
        self.slot(server, user).tokens.get()?.take_needed()
    }

    /// The server's live session, started if there is none (within `timeout`); for a
    /// server that acts for the user, `user`'s own.
    pub(crate) async fn session(
        &self,
        server: &Server,
        user: Option<&User>,
        timeout: Duration,
    ) -> Result<Arc<Session>, Fault> {
        let slot = self.slot(server, user);
        if let Some(session) = slot.live() {
            return Ok(session);
        }
        let start = async {
            let _gate = slot.starting.lock().await;
            // Another task may have started it while this one waited at the gate.
            if let Some(session) = slot.live() {
                return Ok(session);
            }
            let session = Arc::new(self.start(server, user, &slot).await?);
            let old = slot
                .current
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .replace(session.clone());
            drop(old);
            Ok(session)
        };
        tokio::time::timeout(timeout, start)
            .await
            .unwrap_or(Err(Fault::Timeout { after: timeout }))
    }

    /// Drops `session` if it is still the server's current one: the next use starts anew.
    pub(crate) fn forget(&self, server: &Server, user: Option<&User>, session: &Arc<Session>) {
        let slot = self.slot(server, user);
        let old = {
            let mut current = slot.current.lock().unwrap_or_else(PoisonError::into_inner);
            match current.as_ref() {
                Some(s) if Arc::ptr_eq(s, session) => current.take(),
                _ => None,
            }
        };
        // Dropped outside the lock: this cancels the session's task.
        drop(old);
    }

    async fn start(
        &self,
        server: &Server,
        user: Option<&User>,
        slot: &Slot,
    ) -> Result<Session, Fault> {
        let handler = Arc::new(Handler::default());
        let service = match server {
            Server::Command { command, env } => {
                let Some((program, args)) = command.split_first() else {
                    return Err(Fault::Start("the command is empty".to_owned()));
                };
                let mut cmd = tokio::process::Command::new(self.program(program));
                cmd.args(args).current_dir(&self.root).env_clear();
                for name in INHERITED_ENV {
                    if let Some(value) = std::env::var_os(name) {
                        cmd.env(name, value);
                    }
                }
                for (name, value) in env {
                    match value {
                        EnvValue::Literal(value) => cmd.env(name, value),
                        EnvValue::FromEnv(from) => match std::env::var_os(from) {
                            Some(value) => cmd.env(name, value),
                            None => {
                                return Err(Fault::Start(format!(
                                    "server.env.{name}: the environment variable {from} is not set"
                                )));
                            }
                        },
                    };
                }
                let (transport, stderr) = TokioChildProcess::builder(cmd)
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|e| Fault::Start(format!("cannot run it: {e}")))?;
                let tail = Arc::new(Mutex::new(VecDeque::new()));
                let reader = stderr
                    .map(|stderr| tokio::spawn(log_stderr(server.label(), stderr, tail.clone())));
                match handler.clone().serve(transport).await {
                    Ok(service) => service,
                    Err(e) => {
                        // A server that fails to start usually says why on stderr (a missing
                        // module, a bad flag): wait briefly for its last words.
                        if let Some(reader) = reader {
                            let _ = tokio::time::timeout(STDERR_GRACE, reader).await;
                        }
                        let tail = tail.lock().unwrap_or_else(PoisonError::into_inner);
                        let mut why = start_error(&e);
                        if !tail.is_empty() {
                            let said: Vec<&str> = tail.iter().map(String::as_str).collect();
                            why.push_str("; its stderr ended with: ");
                            why.push_str(&clip(said.join(" | ")));
                        }
                        return Err(Fault::Start(why));
                    }
                }
            }
            Server::Url(http) => {
                let client = self.http.clone().map_err(Fault::Start)?;
                let mut config = StreamableHttpClientTransportConfig::with_uri(http.url.as_str());
                config.retry_config = Arc::new(BoundedRetry);
                let headers = self
                    .secrets
                    .header_map(&http.headers)
                    .map_err(|e| Fault::Start(format!("server.{e}")))?;
                config.custom_headers = headers
                    .iter()
                    .map(|(name, value)| (name.clone(), value.clone()))
                    .collect();
                let started = match self.tokens(http, user, slot, &client)? {
                    None => {
                        let transport = StreamableHttpClientTransport::with_client(client, config);
                        handler.clone().serve(transport).await
                    }
                    Some(tokens) => {
                        let client = Authorized {
                            http: client,
                            tokens,
                        };
                        let transport = StreamableHttpClientTransport::with_client(client, config);
                        handler.clone().serve(transport).await
                    }
                };
                started.map_err(|e| Fault::Start(start_error(&e)))?
            }
        };
        Ok(Session { service, handler })
    }

    /// The server's token source when it requires OAuth: one per server for the life of
    /// the pool, so that a token outlives the session that fetched it.
    fn tokens(
        &self,
        http: &HttpServer,
        user: Option<&User>,
        slot: &Slot,
        client: &reqwest::Client,
    ) -> Result<Option<Arc<dyn Tokens>>, Fault> {
        let Some(spec) = &http.oauth else {
            return Ok(None);
        };
        if let Some(tokens) = slot.tokens.get() {
            return Ok(Some(tokens.clone()));
        }
        let resource = reqwest::Url::parse(&http.url)
            .map_err(|e| Fault::Start(format!("server.url is not a URL: {e}")))?;
        let tokens: Arc<dyn Tokens> = match spec {
            AuthSpec::Client(spec) => Arc::new(TokenSource::new(
                spec.clone(),
                resource,
                client.clone(),
                self.secrets.clone(),
            )),
            // The principal's own tokens, kept as their account link.
            AuthSpec::User(spec) => match (user, self.authorizer.clone()) {
                (Some(user), _) => Arc::new(LinkedTokenSource::new(
                    spec.clone(),
                    resource,
                    client.clone(),
                    self.secrets.clone(),
                    user.links.clone(),
                    user.principal.clone(),
                )),
                // A connector that serves a single user, who signs in through its authorizer.
                (None, Some(authorizer)) => Arc::new(UserTokenSource::new(
                    spec.clone(),
                    resource,
                    client.clone(),
                    self.secrets.clone(),
                    authorizer,
                )),
                (None, None) => {
                    return Err(Fault::Start(
                        "server.oauth: this server acts with the user's own sign-in, and this runtime keeps no account links"
                            .to_owned(),
                    ));
                }
            },
        };
        Ok(Some(slot.tokens.get_or_init(|| tokens).clone()))
    }

    /// The program to run: a relative path (one with a `/`) is the registry root's; a
    /// bare name is looked up on `PATH`.
    fn program(&self, program: &str) -> PathBuf {
        let path = Path::new(program);
        if path.is_relative() && program.contains('/') {
            self.root.join(path)
        } else {
            path.to_path_buf()
        }
    }
}

/// Reconnects an interrupted event stream a few times, then gives up: rmcp's default
/// retries forever, which would turn a dead server into a hung call.
#[derive(Debug)]
struct BoundedRetry;

impl SseRetryPolicy for BoundedRetry {
    fn retry(&self, current_times: usize) -> Option<Duration> {
        const DELAYS_MS: [u64; 3] = [100, 300, 900];
        DELAYS_MS
            .get(current_times)
            .copied()
            .map(Duration::from_millis)
    }
}

/// Why a session could not start, without rmcp's type names.
fn start_error(e: &ClientInitializeError) -> String {
    match e {
        ClientInitializeError::TransportError { error, context } => {
            format!("{context}: {}", chain(error.error.as_ref()))
        }
        other => chain(other),
    }
}

/// The server's stderr, line by line, as debug logs (it is the server's own log); the
/// last few lines are kept for start errors.
async fn log_stderr(
    server: String,
    stderr: tokio::process::ChildStderr,
    tail: Arc<Mutex<VecDeque<String>>>,
) {
    let mut reader = tokio::io::BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        // Bounded: a server printing without newlines cannot grow this buffer.
        match (&mut reader)
            .take(STDERR_LINE_BYTES)
            .read_until(b'\n', &mut line)
            .await
        {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&line).trim_end().to_owned();
        if text.is_empty() {
            continue;
        }
        tracing::debug!(%server, "mcp server stderr: {text}");
        let mut tail = tail.lock().unwrap_or_else(PoisonError::into_inner);
        if tail.len() == STDERR_TAIL_LINES {
            tail.pop_front();
        }
        tail.push_back(text);
    }
}
