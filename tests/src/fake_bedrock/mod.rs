//! A Bedrock Runtime fake: an in-process HTTP server on `127.0.0.1:0` that answers
//! `POST /model/{model_id}/converse-stream` in the real event-stream framing, so the real
//! `aws-sdk-bedrockruntime` client (and `BedrockModel` over it) decodes what it sends.
//!
//! Each request is answered by the next queued [`Reply`] if any, else by the handler
//! closure, else by a 500 naming the gap. Every request is logged as a [`FakeRequest`].
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use baton_tests::fake_bedrock::{FakeBedrock, Reply, ToolCall};
//! use serde_json::json;
//! let fake = FakeBedrock::with_handler(|req| {
//!     if req.last_has_tool_results() {
//!         Reply::text("Here is what I found.")
//!     } else {
//!         Reply::tool_use("t1", "ask_shop", json!({"query": "coffee", "intent_count": 1}))
//!     }
//! })
//! .await?;
//! fake.push(Reply::throttled()); // the first call is throttled, later ones use the handler
//! let sdk = fake.sdk_config().await;
//! # Ok(()) }
//! ```
//!
//! It also answers `POST /model/{model_id}/invoke` for Titan Text Embeddings V2 with a
//! deterministic vector (the model-free hashed words in the asked dimensions, so texts that
//! share words are near), unless an [`InvokeReply`] is queued with
//! [`FakeBedrock::push_invoke`]; those requests are logged apart ([`FakeBedrock::invocations`]).
//!
//! Concurrent calls (a fan-out) take queued replies in arrival order, which is racy: use
//! the handler, keyed on the request (system text, tools offered), for those.

mod invoke;
mod reply;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use aws_config::SdkConfig;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::post;
use baton_aws::bedrock::BedrockModel;
use baton_core::registry::ModelSpec;
use serde_json::Value;

pub use invoke::InvokeReply;
pub use reply::{DEFAULT_INPUT_TOKENS, DEFAULT_OUTPUT_TOKENS, Reply, ToolCall};

type Handler = dyn Fn(&FakeRequest) -> Reply + Send + Sync;

struct Shared {
    queue: Mutex<VecDeque<Reply>>,
    handler: Option<Box<Handler>>,
    log: Mutex<Vec<FakeRequest>>,
    invoke_queue: Mutex<VecDeque<InvokeReply>>,
    invocations: Mutex<Vec<FakeRequest>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A handler that panicked (a failed assertion) must not hide the log from the test.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The fake server; it stops when dropped.
pub struct FakeBedrock {
    addr: SocketAddr,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

impl FakeBedrock {
    /// A fake that answers only with replies pushed with [`FakeBedrock::push`].
    ///
    /// # Errors
    /// The loopback port cannot be bound.
    pub async fn start() -> std::io::Result<Self> {
        Self::serve(None, Vec::new()).await
    }

    /// A fake that answers every request with `handler` (after any pushed replies).
    ///
    /// # Errors
    /// The loopback port cannot be bound.
    pub async fn with_handler(
        handler: impl Fn(&FakeRequest) -> Reply + Send + Sync + 'static,
    ) -> std::io::Result<Self> {
        Self::serve(Some(Box::new(handler)), Vec::new()).await
    }

    /// A fake that answers with `replies`, in order, one per request.
    ///
    /// # Errors
    /// The loopback port cannot be bound.
    pub async fn with_replies(replies: impl IntoIterator<Item = Reply>) -> std::io::Result<Self> {
        Self::serve(None, replies.into_iter().collect()).await
    }

    async fn serve(handler: Option<Box<Handler>>, queue: Vec<Reply>) -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            queue: Mutex::new(queue.into()),
            handler,
            log: Mutex::new(Vec::new()),
            invoke_queue: Mutex::new(VecDeque::new()),
            invocations: Mutex::new(Vec::new()),
        });
        let app = Router::new()
            .route("/model/{model_id}/converse-stream", post(converse_stream))
            .route("/model/{model_id}/invoke", post(invoke_model))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let server = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::error!(error = %e, "fake bedrock stopped");
            }
        });
        Ok(FakeBedrock {
            addr,
            shared,
            server,
        })
    }

    /// Queues a reply: queued replies answer before the handler, first in first out.
    pub fn push(&self, reply: Reply) {
        lock(&self.shared.queue).push_back(reply);
    }

    /// Queues an InvokeModel answer: queued ones answer before the deterministic
    /// embedding, first in first out.
    pub fn push_invoke(&self, reply: InvokeReply) {
        lock(&self.shared.invoke_queue).push_back(reply);
    }

    /// Every InvokeModel request received so far (the body as JSON, `null` when it is
    /// not), in arrival order.
    pub fn invocations(&self) -> Vec<FakeRequest> {
        lock(&self.shared.invocations).clone()
    }

    /// `http://127.0.0.1:<port>`.
    pub fn endpoint_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// An SDK config for this fake: dummy credentials, `us-east-1`, SDK retries disabled,
    /// and this fake as the endpoint of every service (build other services' clients
    /// from another config).
    pub async fn sdk_config(&self) -> SdkConfig {
        crate::local_sdk::config(&self.endpoint_url(), "fake-bedrock").await
    }

    /// A [`BedrockModel`] talking to this fake, with the capabilities of `specs`.
    pub async fn bedrock_model<S: AsRef<ModelSpec>>(
        &self,
        specs: impl IntoIterator<Item = S>,
    ) -> BedrockModel {
        BedrockModel::from_sdk_config(&self.sdk_config().await, specs)
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<FakeRequest> {
        lock(&self.shared.log).clone()
    }

    /// The JSON body of every request received so far, in arrival order.
    pub fn request_bodies(&self) -> Vec<Value> {
        lock(&self.shared.log)
            .iter()
            .map(|r| r.body.clone())
            .collect()
    }

    /// How many requests arrived.
    pub fn request_count(&self) -> usize {
        lock(&self.shared.log).len()
    }
}

impl Drop for FakeBedrock {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn converse_stream(
    State(shared): State<Arc<Shared>>,
    Path(model_id): Path<String>,
    body: Bytes,
) -> Response {
    let body: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return reply::error_response(
                400,
                "SerializationException",
                &format!("fake bedrock: the body is not JSON: {e}"),
            );
        }
    };
    let request = FakeRequest { model_id, body };
    lock(&shared.log).push(request.clone());
    let queued = lock(&shared.queue).pop_front();
    let reply = match (queued, &shared.handler) {
        (Some(reply), _) => reply,
        (None, Some(handler)) => handler(&request),
        (None, None) => {
            return reply::error_response(
                500,
                "InternalServerException",
                "fake bedrock: no reply scripted for this request",
            );
        }
    };
    reply.into_response()
}

async fn invoke_model(
    State(shared): State<Arc<Shared>>,
    Path(model_id): Path<String>,
    body: Bytes,
) -> Response {
    let request = FakeRequest {
        model_id: model_id.clone(),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    };
    lock(&shared.invocations).push(request);
    match lock(&shared.invoke_queue).pop_front() {
        Some(reply) => reply.into_response(),
        None => invoke::titan(&model_id, &body),
    }
}

/// A received ConverseStream request: the model id from the path and the JSON body, with
/// readers for what scripts usually key on.
#[derive(Debug, Clone, PartialEq)]
pub struct FakeRequest {
    /// The model id (percent-decoded).
    pub model_id: String,
    /// The request body.
    pub body: Value,
}

/// A part of the system prompt on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SystemPart {
    /// A text block.
    Text(String),
    /// A `cachePoint` block.
    CachePoint,
}

/// The tool choice on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireToolChoice {
    /// `{"auto": {}}`.
    Auto,
    /// `{"any": {}}`.
    Any,
    /// `{"tool": {"name": ...}}`.
    Tool(String),
}

/// A tool result in a request's last message.
#[derive(Debug, Clone, PartialEq)]
pub struct WireToolResult {
    /// The tool-use id it answers.
    pub id: String,
    /// Whether its status is `error`.
    pub is_error: bool,
    /// Its content blocks (`{"text": ...}` or `{"json": ...}`).
    pub content: Vec<Value>,
}

impl FakeRequest {
    fn array(&self, key: &str) -> &[Value] {
        self.body
            .get(key)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// The system blocks, in order.
    pub fn system(&self) -> Vec<SystemPart> {
        self.array("system")
            .iter()
            .filter_map(|b| {
                if let Some(t) = b.get("text").and_then(Value::as_str) {
                    Some(SystemPart::Text(t.to_owned()))
                } else if b.get("cachePoint").is_some() {
                    Some(SystemPart::CachePoint)
                } else {
                    None
                }
            })
            .collect()
    }

    /// The system text blocks joined with newlines.
    pub fn system_text(&self) -> String {
        self.system()
            .into_iter()
            .filter_map(|p| match p {
                SystemPart::Text(t) => Some(t),
                SystemPart::CachePoint => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The messages as sent.
    pub fn messages(&self) -> &[Value] {
        self.array("messages")
    }

    fn tool_config(&self) -> Option<&Value> {
        self.body.get("toolConfig")
    }

    /// Names of the tools offered, in order.
    pub fn tool_names(&self) -> Vec<String> {
        self.tool_config()
            .and_then(|c| c.get("tools"))
            .and_then(Value::as_array)
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| t.pointer("/toolSpec/name").and_then(Value::as_str))
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Whether a tool of this name is offered.
    pub fn offers_tool(&self, name: &str) -> bool {
        self.tool_names().iter().any(|n| n == name)
    }

    /// The JSON schema of an offered tool.
    pub fn tool_schema(&self, name: &str) -> Option<&Value> {
        self.tool_config()?
            .get("tools")?
            .as_array()?
            .iter()
            .find(|t| t.pointer("/toolSpec/name").and_then(Value::as_str) == Some(name))?
            .pointer("/toolSpec/inputSchema/json")
    }

    /// The tool choice, when a toolConfig is present.
    pub fn tool_choice(&self) -> Option<WireToolChoice> {
        let choice = self.tool_config()?.get("toolChoice")?;
        if choice.get("auto").is_some() {
            Some(WireToolChoice::Auto)
        } else if choice.get("any").is_some() {
            Some(WireToolChoice::Any)
        } else {
            choice
                .pointer("/tool/name")
                .and_then(Value::as_str)
                .map(|n| WireToolChoice::Tool(n.to_owned()))
        }
    }

    /// The text of the latest user message that holds text (messages of tool results
    /// only are skipped), its text blocks joined.
    pub fn last_user_text(&self) -> Option<String> {
        self.messages()
            .iter()
            .rev()
            .filter(|m| m.get("role").and_then(Value::as_str) == Some("user"))
            .find_map(|m| {
                let texts: Vec<&str> = m
                    .get("content")?
                    .as_array()?
                    .iter()
                    .filter_map(|c| c.get("text").and_then(Value::as_str))
                    .collect();
                (!texts.is_empty()).then(|| texts.concat())
            })
    }

    /// The images the request sends, as `(format, bytes)`, in order (an image whose bytes
    /// are not base64 is left out).
    pub fn images(&self) -> Vec<(String, Vec<u8>)> {
        use base64::Engine as _;
        self.messages()
            .iter()
            .filter_map(|m| m.get("content")?.as_array())
            .flatten()
            .filter_map(|c| c.get("image"))
            .filter_map(|image| {
                let format = image["format"].as_str().unwrap_or_default().to_owned();
                let encoded = image.pointer("/source/bytes").and_then(Value::as_str)?;
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(encoded)
                    .ok()?;
                Some((format, bytes))
            })
            .collect()
    }

    /// Whether the last message holds tool results.
    pub fn last_has_tool_results(&self) -> bool {
        !self.last_tool_results().is_empty()
    }

    /// The tool results of the last message.
    pub fn last_tool_results(&self) -> Vec<WireToolResult> {
        let Some(content) = self
            .messages()
            .last()
            .and_then(|m| m.get("content"))
            .and_then(Value::as_array)
        else {
            return Vec::new();
        };
        content
            .iter()
            .filter_map(|c| c.get("toolResult"))
            .map(|r| WireToolResult {
                id: r
                    .get("toolUseId")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                is_error: r.get("status").and_then(Value::as_str) == Some("error"),
                content: r
                    .get("content")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default(),
            })
            .collect()
    }

    /// `inferenceConfig.maxTokens`.
    pub fn max_tokens(&self) -> Option<u64> {
        self.body
            .pointer("/inferenceConfig/maxTokens")
            .and_then(Value::as_u64)
    }

    /// `inferenceConfig.temperature`.
    pub fn temperature(&self) -> Option<f64> {
        self.body
            .pointer("/inferenceConfig/temperature")
            .and_then(Value::as_f64)
    }
}
