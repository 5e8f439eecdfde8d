//! `a2a`: a specialist that is a remote agent, spoken to over A2A 1.0 (the JSON-RPC
//! binding, answers streamed over server-sent events). Like `upstream_chat` it serves the
//! specialist whose one tool it is, as a conversation: the agent's context is the
//! conversation the runtime keeps (with its lifetime and replay), its task updates are
//! progress, its text artifacts and messages the answer, and a task waiting for the user
//! (`INPUT_REQUIRED`) is continued by the user's next message to that specialist. When the
//! turn stops listening (its deadline, the user gone), the agent's task is canceled
//! (`CancelTask`).
//!
//! ```yaml
//! connector:
//!   kind: a2a
//!   url: http://127.0.0.1:8941        # the agent's base URL (its card: /.well-known/agent-card.json)
//!   headers: {Authorization: {env: STORES_TOKEN, prefix: "Bearer "}}   # optional
//!   timeout_ms: 30000                 # connecting, and each wait for the next event
//!   max_answer_bytes: 262144          # a longer answer is cut as a failure
//!   lifetime_s: 3300                  # how long the agent's context is reused
//!   replay_turns: 6                   # earlier exchanges replayed to a new context
//! ```
//!
//! The principal travels as the `x-baton-principal` header and in the message's metadata
//! (D-29); nothing in an answer is trusted to say whose it is. See `docs/connectors-a2a.md`.

mod card;
mod config;
mod events;

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use ::a2a::{Message, Part, Role, SendMessageRequest, StreamResponse};
use async_trait::async_trait;
use baton_core::ports::connector::{
    Connector, ConnectorError, ConnectorRequest, DiscoveredTool, Envelope,
};
use baton_core::ports::upstream::{
    UpstreamChat, UpstreamError, UpstreamEvent, UpstreamRequest, UpstreamStream,
};
use eventsource_stream::Eventsource;
use futures::StreamExt;
use reqwest::Url;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Value, json};
use tokio_util::task::TaskTracker;

use crate::error::{chain, clip};
use crate::secrets::{EnvSecretSource, SecretSource, Secrets};
use card::{CardError, Endpoint};
use config::A2aConfig;
use events::Reader;

/// The header that carries the principal to the agent.
const PRINCIPAL_HEADER: &str = "x-baton-principal";
/// A2A's error code for a task the agent does not know.
const TASK_NOT_FOUND: i64 = -32001;
/// How long a cancellation may take; nobody waits for it.
const CANCEL_TIMEOUT: Duration = Duration::from_secs(5);
/// The stream's bytes beyond the answer's own (event framing, ids, statuses) that are
/// allowed before a stream counts as runaway.
const STREAM_OVERHEAD_BYTES: usize = 1024 * 1024;
/// How long the rest of a stream is read after the task's final state, so that its
/// connection goes back to the pool (an agent ends the stream right after it): a stream
/// dropped unread costs a new connection next time.
const DRAIN: Duration = Duration::from_millis(100);

/// The `a2a` connector kind.
pub struct A2aConnector {
    http: reqwest::Client,
    secrets: Secrets,
    /// Each agent's checked card, by card URL, fetched once (again after a failure).
    cards: Mutex<HashMap<Url, Endpoint>>,
    /// The `CancelTask` requests of dropped streams still on their way: what `settle`
    /// waits for.
    cancels: TaskTracker,
}

impl std::fmt::Debug for A2aConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("A2aConnector")
            .field("secrets", &self.secrets)
            .finish_non_exhaustive()
    }
}

impl Default for A2aConnector {
    fn default() -> Self {
        Self::new()
    }
}

impl A2aConnector {
    /// The kind name used in `tools.yaml`.
    pub const KIND: &'static str = "a2a";

    /// A connector whose header secrets come from environment variables.
    pub fn new() -> Self {
        Self::with_secret_source(Arc::new(EnvSecretSource))
    }

    /// A connector whose header secrets come from `source`.
    pub fn with_secret_source(source: Arc<dyn SecretSource>) -> Self {
        A2aConnector {
            http: crate::tls::client(),
            secrets: Secrets::new(source),
            cards: Mutex::new(HashMap::new()),
            cancels: TaskTracker::new(),
        }
    }

    /// The configured headers, with their secrets.
    fn headers(&self, config: &A2aConfig) -> Result<HeaderMap, String> {
        self.secrets.header_map(&config.headers)
    }

    /// The agent's checked card: remembered, or fetched now.
    async fn endpoint(&self, config: &A2aConfig) -> Result<Endpoint, CardError> {
        let url = config.card_url();
        if let Some(found) = self.lock().get(&url) {
            return Ok(found.clone());
        }
        let headers = self.headers(config).map_err(CardError::Unusable)?;
        let endpoint = card::fetch(&self.http, &url, headers, config.timeout).await?;
        self.lock().insert(url, endpoint.clone());
        Ok(endpoint)
    }

    fn forget(&self, config: &A2aConfig) {
        self.lock().remove(&config.card_url());
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Url, Endpoint>> {
        self.cards.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl Connector for A2aConnector {
    async fn settle(&self) {
        // Closed only while waiting: a turn still running may drop a stream after this.
        self.cancels.close();
        self.cancels.wait().await;
        self.cancels.reopen();
    }

    async fn call(&self, request: ConnectorRequest) -> Result<Envelope, ConnectorError> {
        Err(ConnectorError::Config(format!(
            "tool {} is a remote agent: the card whose one tool it is talks to it; it is not called as a tool",
            request.tool_id
        )))
    }

    fn check_config(&self, _tool_id: &str, config: &Value) -> Result<(), String> {
        let config = A2aConfig::parse(config)?;
        self.headers(&config)?;
        Ok(())
    }

    /// The agent's own description, from its card. An agent that cannot be reached now is
    /// not a registry problem (`baton validate` warns of it): its specialist says plainly
    /// that it is unavailable until it is back. A card Baton cannot use is one.
    async fn discover(
        &self,
        tool_id: &str,
        config: &Value,
    ) -> Result<Option<DiscoveredTool>, String> {
        let parsed = A2aConfig::parse(config)?;
        match self.endpoint(&parsed).await {
            Ok(endpoint) => Ok(Some(DiscoveredTool {
                description: Some(endpoint.description),
                schema: json!({"type": "object", "properties": {}}),
            })),
            Err(CardError::Unreachable(why)) => {
                // Not a warning on every start of `baton`: `baton validate` says it, and a
                // call says it when it fails.
                tracing::info!(tool = tool_id, agent = %parsed.url, "the remote agent cannot be reached now; its specialist is unavailable until it is: {why}");
                Ok(None)
            }
            Err(CardError::Unusable(why)) => Err(format!("A2A agent {}: {why}", parsed.url)),
        }
    }

    async fn probe(&self, _tool_id: &str, config: &Value) -> Result<(), String> {
        // The card read when the registry loaded, if it could be; else read now.
        let parsed = A2aConfig::parse(config)?;
        match self.endpoint(&parsed).await {
            Ok(_) => Ok(()),
            Err(CardError::Unreachable(why) | CardError::Unusable(why)) => {
                Err(format!("A2A agent {}: {why}", parsed.url))
            }
        }
    }

    fn upstream_chat(&self) -> Option<&dyn UpstreamChat> {
        Some(self)
    }
}

#[async_trait]
impl UpstreamChat for A2aConnector {
    async fn converse(&self, request: UpstreamRequest) -> Result<UpstreamStream, UpstreamError> {
        let config = A2aConfig::parse(&request.config).map_err(UpstreamError::Invalid)?;
        let endpoint = self.endpoint(&config).await.map_err(|e| match e {
            CardError::Unreachable(why) => UpstreamError::Unavailable(why),
            CardError::Unusable(why) => UpstreamError::Invalid(why),
        })?;
        let mut headers = self.headers(&config).map_err(UpstreamError::Invalid)?;
        let principal = HeaderValue::from_str(request.principal.as_str()).map_err(|_| {
            UpstreamError::Invalid("the principal cannot travel as a header".into())
        })?;
        headers.insert(PRINCIPAL_HEADER, principal);
        if let Ok(version) = HeaderValue::from_str(&endpoint.version) {
            headers.insert("a2a-version", version);
        }
        let mut post_headers = headers.clone();
        post_headers.insert(
            reqwest::header::ACCEPT,
            HeaderValue::from_static("text/event-stream"),
        );
        if let Some(traceparent) = request
            .traceparent
            .as_deref()
            .and_then(|t| HeaderValue::from_str(t).ok())
        {
            post_headers.insert("traceparent", traceparent);
        }
        if let Some(locale) = request
            .locale
            .as_deref()
            .and_then(|l| HeaderValue::from_str(l).ok())
        {
            post_headers.insert(reqwest::header::ACCEPT_LANGUAGE, locale);
        }
        let id = random_id().map_err(UpstreamError::Unavailable)?;
        let body = json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": "SendStreamingMessage",
            "params": send_request(&request, &id),
        });
        // Bounded up to the answer's headers; the stream after them by the wait for each
        // event (a request timeout would cut a long answer that keeps coming).
        let send = self
            .http
            .post(endpoint.rpc.clone())
            .headers(post_headers)
            .json(&body)
            .send();
        let response = match tokio::time::timeout(config.timeout, send).await {
            Ok(Ok(response)) => response,
            Ok(Err(e)) => {
                // The agent may have moved: its card is read again next time.
                self.forget(&config);
                return Err(UpstreamError::Unavailable(clip(chain(&e))));
            }
            Err(_) => {
                return Err(UpstreamError::Unavailable(format!(
                    "no answer within {} ms",
                    config.timeout.as_millis()
                )));
            }
        };
        let status = response.status();
        if !status.is_success() {
            return Err(UpstreamError::Unavailable(format!(
                "it answered HTTP {}",
                status.as_u16()
            )));
        }
        let streams = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !streams {
            // A JSON-RPC error comes as plain JSON; anything else is not the protocol.
            let text = response.text().await.unwrap_or_default();
            return Err(
                match serde_json::from_str::<Value>(&text)
                    .ok()
                    .and_then(|v| v.get("error").cloned())
                {
                    Some(error) => rpc_error(&error, request.pending.is_some()),
                    None => UpstreamError::Invalid("it did not answer with an event stream".into()),
                },
            );
        }
        let max_stream_bytes = config
            .max_answer_bytes
            .saturating_mul(4)
            .saturating_add(STREAM_OVERHEAD_BYTES);
        let mut read = 0usize;
        let bytes = response.bytes_stream().map(move |chunk| {
            let chunk = chunk.map_err(|e| std::io::Error::other(chain(&e)))?;
            read += chunk.len();
            if read > max_stream_bytes {
                return Err(std::io::Error::other(format!(
                    "the stream ran past {max_stream_bytes} bytes"
                )));
            }
            Ok(chunk)
        });
        let state = Streaming {
            events: Box::pin(bytes.eventsource()),
            reader: Reader::new(
                request.conversation_id.clone(),
                request.pending.clone(),
                config.max_answer_bytes,
            ),
            ready: VecDeque::new(),
            done: false,
            draining: false,
            id,
            continuing_task: request.pending.is_some(),
            idle: config.timeout,
            cancel: CancelOnDrop {
                tracker: self.cancels.clone(),
                http: self.http.clone(),
                rpc: endpoint.rpc,
                headers,
                task: None,
                armed: true,
            },
        };
        Ok(futures::stream::unfold(state, next).boxed())
    }
}

/// The `SendStreamingMessage` parameters: the message (a new context's replay before it),
/// continuing the context and the task waiting for the user, with Baton's metadata.
fn send_request(request: &UpstreamRequest, message_id: &str) -> SendMessageRequest {
    let mut text = String::new();
    if request.conversation_id.is_none() && !request.replay.is_empty() {
        text.push_str("Earlier in this conversation:\n");
        for exchange in &request.replay {
            text.push_str(&format!(
                "User: {}\nYou: {}\n",
                exchange.user, exchange.assistant
            ));
        }
        text.push_str("\nNow: ");
    }
    text.push_str(&request.message);
    let mut metadata = HashMap::from([
        (
            "baton/principal".to_owned(),
            json!(request.principal.as_str()),
        ),
        ("baton/episode".to_owned(), json!(&*request.episode_id)),
        ("baton/agent".to_owned(), json!(&*request.agent_id)),
    ]);
    if let Some(locale) = &request.locale {
        metadata.insert("baton/locale".to_owned(), json!(locale));
    }
    if !request.details.is_empty() {
        metadata.insert(
            "baton/details".to_owned(),
            Value::Object(request.details.clone()),
        );
    }
    let mut message = Message::new(Role::User, vec![Part::text(text)]);
    message.message_id = message_id.to_owned();
    message.context_id = request.conversation_id.clone();
    message.task_id = request.pending.clone();
    message.metadata = Some(metadata);
    SendMessageRequest {
        message,
        configuration: None,
        metadata: None,
        tenant: None,
    }
}

/// A JSON-RPC error as the port's error: the agent not knowing the task it was asked to
/// continue means the exchange is gone; anything else is the agent being unavailable.
fn rpc_error(error: &Value, continuing_task: bool) -> UpstreamError {
    let code = error.get("code").and_then(Value::as_i64).unwrap_or(0);
    if code == TASK_NOT_FOUND && continuing_task {
        return UpstreamError::UnknownConversation;
    }
    let message = error.get("message").and_then(Value::as_str).unwrap_or("");
    UpstreamError::Unavailable(clip(format!("it answered error {code}: {message}")))
}

/// A random id (128 bits, hex): JSON-RPC request and message ids.
fn random_id() -> Result<String, String> {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 16];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| "no randomness for a message id".to_owned())?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

type SseEvents = std::pin::Pin<
    Box<
        dyn futures::Stream<
                Item = Result<
                    eventsource_stream::Event,
                    eventsource_stream::EventStreamError<std::io::Error>,
                >,
            > + Send,
    >,
>;

/// One exchange's stream as it is read.
struct Streaming {
    events: SseEvents,
    reader: Reader,
    ready: VecDeque<Result<UpstreamEvent, UpstreamError>>,
    done: bool,
    /// The task ended: what follows is read and dropped, briefly.
    draining: bool,
    id: String,
    continuing_task: bool,
    idle: Duration,
    cancel: CancelOnDrop,
}

/// The next port event: from what is ready, else from the next server-sent events. An
/// error ends the stream; so does the task's final state (nothing after it is read).
async fn next(mut s: Streaming) -> Option<(Result<UpstreamEvent, UpstreamError>, Streaming)> {
    loop {
        if let Some(item) = s.ready.pop_front() {
            if item.is_err() {
                s.ready.clear();
                s.done = true;
            }
            return Some((item, s));
        }
        if s.done {
            return None;
        }
        if s.draining {
            // Nothing after the final state is read; the end of the stream is awaited
            // briefly, for the connection's sake.
            let until = tokio::time::Instant::now() + DRAIN;
            while let Ok(Some(Ok(_))) = tokio::time::timeout_at(until, s.events.next()).await {}
            return None;
        }
        let event = match tokio::time::timeout(s.idle, s.events.next()).await {
            Err(_) => {
                s.done = true;
                return Some((
                    Err(UpstreamError::Unavailable(format!(
                        "no event within {} ms",
                        s.idle.as_millis()
                    ))),
                    s,
                ));
            }
            Ok(None) => {
                s.done = true;
                if s.reader.finished {
                    return None;
                }
                return Some((
                    Err(UpstreamError::Unavailable(
                        "the stream ended before the task did".into(),
                    )),
                    s,
                ));
            }
            Ok(Some(Err(e))) => {
                s.done = true;
                return Some((Err(UpstreamError::Unavailable(clip(e.to_string()))), s));
            }
            Ok(Some(Ok(event))) => event,
        };
        if event.data.trim().is_empty() {
            continue;
        }
        match decode(&event.data, &s.id, s.continuing_task) {
            Ok(response) => match s.reader.read(response) {
                Ok(events) => s.ready.extend(events.into_iter().map(Ok)),
                Err(e) => {
                    // The agent ended its task itself: nothing to cancel.
                    if matches!(e, UpstreamError::Ended(_)) {
                        s.cancel.armed = false;
                    }
                    s.ready.push_back(Err(e));
                }
            },
            Err(e) => s.ready.push_back(Err(e)),
        }
        s.cancel.task.clone_from(&s.reader.task);
        if s.reader.finished {
            s.cancel.armed = false;
            s.draining = true;
        }
    }
}

/// One server-sent event's JSON-RPC response: its result as an A2A event.
fn decode(data: &str, id: &str, continuing_task: bool) -> Result<StreamResponse, UpstreamError> {
    let value: Value = serde_json::from_str(data)
        .map_err(|_| UpstreamError::Invalid("an event is not JSON".into()))?;
    if let Some(said) = value.get("id")
        && !said.is_null()
        && said.as_str() != Some(id)
    {
        return Err(UpstreamError::Invalid(
            "an event answers another request".into(),
        ));
    }
    if let Some(error) = value.get("error") {
        return Err(rpc_error(error, continuing_task));
    }
    let result = value
        .get("result")
        .ok_or_else(|| UpstreamError::Invalid("an event has no result".into()))?;
    serde_json::from_value(result.clone())
        .map_err(|e| UpstreamError::Invalid(clip(format!("an event is not an A2A 1.0 event: {e}"))))
}

/// Cancels the agent's task when the stream is dropped before the task ended (the turn's
/// deadline, the user gone): nobody is left to read its answer.
struct CancelOnDrop {
    tracker: TaskTracker,
    http: reqwest::Client,
    rpc: Url,
    headers: HeaderMap,
    task: Option<String>,
    armed: bool,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let (true, Some(task)) = (self.armed, self.task.take()) else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let call = self
            .http
            .post(self.rpc.clone())
            .headers(std::mem::take(&mut self.headers))
            .timeout(CANCEL_TIMEOUT)
            .json(&json!({
                "jsonrpc": "2.0",
                "id": format!("cancel-{task}"),
                "method": "CancelTask",
                "params": {"id": task},
            }));
        self.tracker.spawn_on(async move {
            match call.send().await {
                Ok(response) => {
                    tracing::info!(%task, status = response.status().as_u16(), "canceled the remote agent's task");
                }
                Err(e) => {
                    tracing::warn!(%task, error = %chain(&e), "could not cancel the remote agent's task");
                }
            }
        }, &runtime);
    }
}
