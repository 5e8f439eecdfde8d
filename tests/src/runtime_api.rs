//! A fake Lambda Runtime API: an in-process HTTP server on `127.0.0.1:0` that hands queued
//! events to a function process and captures what the function posts back, byte for byte.
//!
//! Run the real binary with `AWS_LAMBDA_RUNTIME_API` set to [`FakeRuntimeApi::address`]
//! (plus `AWS_LAMBDA_FUNCTION_NAME`, `_MEMORY_SIZE` and `_VERSION`, which lambda_runtime
//! requires), [`push`](FakeRuntimeApi::push) events, and read the function's answers with
//! [`next_post`](FakeRuntimeApi::next_post).
//!
//! Routes (the Runtime API's 2018-06-01 version):
//! - `GET  /2018-06-01/runtime/invocation/next`: the next queued event, with the headers
//!   Lambda sends (`Lambda-Runtime-Aws-Request-Id`, `-Deadline-Ms`, `-Invoked-Function-Arn`,
//!   `-Trace-Id`); with nothing queued it waits, as Lambda does;
//! - `POST /2018-06-01/runtime/invocation/{id}/response` and `.../{id}/error`: captured
//!   with their headers, each body chunk as it arrived, and any trailers;
//! - `POST /2018-06-01/runtime/init/error`: captured the same way.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use tokio::sync::Notify;

/// The function ARN the fake hands out.
pub const FUNCTION_ARN: &str = "arn:aws:lambda:us-east-1:123456789012:function:turn";
/// The X-Ray trace header the fake hands out.
pub const TRACE_ID: &str =
    "Root=1-673f3c20-5b6a1e2f7c9d4e0a1b2c3d4e;Parent=53995c3f42cd8ad8;Sampled=1";
/// How long each invocation may run, as its deadline tells the function.
pub const INVOCATION_TIMEOUT: Duration = Duration::from_secs(60);

/// What the function posted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PostKind {
    /// `/invocation/{id}/response`.
    Response,
    /// `/invocation/{id}/error`.
    Error,
    /// `/init/error`.
    InitError,
}

/// One post from the function, as it arrived.
#[derive(Debug, Clone)]
pub struct Posted {
    /// Which endpoint.
    pub kind: PostKind,
    /// The invocation's request id (empty for an init error).
    pub request_id: String,
    /// The request's headers.
    pub headers: HeaderMap,
    /// The body, one entry per data frame as the server received it.
    pub chunks: Vec<Bytes>,
    /// Trailers, if the function sent any.
    pub trailers: Option<HeaderMap>,
}

impl Posted {
    /// The whole body.
    pub fn body(&self) -> Vec<u8> {
        self.chunks.iter().flat_map(|c| c.iter().copied()).collect()
    }

    /// A header's value as text, if present.
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    }

    /// Every value of a header (e.g. `Trailer`, sent once per name).
    pub fn header_all(&self, name: &str) -> Vec<String> {
        self.headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .map(str::to_owned)
            .collect()
    }
}

#[derive(Default)]
struct Shared {
    events: Mutex<VecDeque<(String, Vec<u8>)>>,
    event_pushed: Notify,
    posts: Mutex<VecDeque<Posted>>,
    posted: Notify,
    next_calls: Mutex<usize>,
    /// When the function first asked for an event: the end of its Init.
    first_next: Mutex<Option<std::time::Instant>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The fake server; it stops when dropped.
pub struct FakeRuntimeApi {
    addr: SocketAddr,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

impl FakeRuntimeApi {
    /// Starts the server with no events queued.
    ///
    /// # Errors
    /// The loopback port cannot be bound.
    pub async fn start() -> std::io::Result<Self> {
        let shared = Arc::new(Shared::default());
        let app = Router::new()
            .route("/2018-06-01/runtime/invocation/next", get(next))
            .route(
                "/2018-06-01/runtime/invocation/{id}/response",
                post(invocation_post(PostKind::Response)),
            )
            .route(
                "/2018-06-01/runtime/invocation/{id}/error",
                post(invocation_post(PostKind::Error)),
            )
            .route(
                "/2018-06-01/runtime/init/error",
                post(|State(s): State<Arc<Shared>>, h: HeaderMap, b: Body| {
                    capture(s, PostKind::InitError, String::new(), h, b)
                }),
            )
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let server = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::error!(error = %e, "fake runtime API stopped");
            }
        });
        Ok(FakeRuntimeApi {
            addr,
            shared,
            server,
        })
    }

    /// `127.0.0.1:<port>`: the value of `AWS_LAMBDA_RUNTIME_API` (no scheme).
    pub fn address(&self) -> String {
        self.addr.to_string()
    }

    /// Queues an event for the function under `request_id`.
    pub fn push(&self, request_id: &str, event: impl Into<Vec<u8>>) {
        lock(&self.shared.events).push_back((request_id.to_owned(), event.into()));
        self.shared.event_pushed.notify_one();
    }

    /// When the function first asked for its next event (the end of its Init), if it did.
    pub fn first_next_at(&self) -> Option<std::time::Instant> {
        *lock(&self.shared.first_next)
    }

    /// How many times the function asked for its next event so far.
    pub fn next_calls(&self) -> usize {
        *lock(&self.shared.next_calls)
    }

    /// Waits up to `limit` for the function's next post (oldest first).
    pub async fn next_post(&self, limit: Duration) -> Option<Posted> {
        let wait = async {
            loop {
                let posted = self.shared.posted.notified();
                if let Some(p) = lock(&self.shared.posts).pop_front() {
                    return p;
                }
                posted.await;
            }
        };
        tokio::time::timeout(limit, wait).await.ok()
    }

    /// Waits up to `limit` until the function has asked for its next event `n` times (it
    /// asks once it is ready, and again after each invocation).
    pub async fn wait_for_next_calls(&self, n: usize, limit: Duration) -> bool {
        let wait = async {
            while self.next_calls() < n {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        };
        tokio::time::timeout(limit, wait).await.is_ok()
    }
}

impl Drop for FakeRuntimeApi {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn next(State(shared): State<Arc<Shared>>) -> Response {
    lock(&shared.first_next).get_or_insert_with(std::time::Instant::now);
    *lock(&shared.next_calls) += 1;
    let (request_id, event) = loop {
        let pushed = shared.event_pushed.notified();
        if let Some(e) = lock(&shared.events).pop_front() {
            break e;
        }
        pushed.await;
    };
    let deadline = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        + INVOCATION_TIMEOUT;
    let mut headers = HeaderMap::new();
    let mut put = |name: &'static str, value: String| {
        if let Ok(v) = HeaderValue::from_str(&value) {
            headers.insert(name, v);
        }
    };
    put("lambda-runtime-aws-request-id", request_id);
    put(
        "lambda-runtime-deadline-ms",
        deadline.as_millis().to_string(),
    );
    put("lambda-runtime-invoked-function-arn", FUNCTION_ARN.into());
    put("lambda-runtime-trace-id", TRACE_ID.into());
    put("content-type", "application/json".into());
    (StatusCode::OK, headers, event).into_response()
}

type BoxedPost = std::pin::Pin<Box<dyn Future<Output = StatusCode> + Send>>;

/// The handler of a post about one invocation (its response or its error).
fn invocation_post(
    kind: PostKind,
) -> impl Fn(State<Arc<Shared>>, Path<String>, HeaderMap, Body) -> BoxedPost + Clone {
    move |State(s), Path(id), h, b| Box::pin(capture(s, kind, id, h, b))
}

async fn capture(
    shared: Arc<Shared>,
    kind: PostKind,
    request_id: String,
    headers: HeaderMap,
    mut body: Body,
) -> StatusCode {
    let mut chunks = Vec::new();
    let mut trailers = None;
    while let Some(frame) =
        std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await
    {
        let Ok(frame) = frame else {
            break;
        };
        match frame.into_data() {
            Ok(data) => chunks.push(data),
            Err(frame) => {
                if let Ok(t) = frame.into_trailers() {
                    trailers = Some(t);
                }
            }
        }
    }
    lock(&shared.posts).push_back(Posted {
        kind,
        request_id,
        headers,
        chunks,
        trailers,
    });
    shared.posted.notify_one();
    StatusCode::ACCEPTED
}
