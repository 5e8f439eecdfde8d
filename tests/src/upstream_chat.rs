//! A real local chat service that keeps its own conversations, speaking the `upstream_chat`
//! protocol (docs/upstream.md) over HTTP on a loopback port: `POST /chat` starts a
//! conversation, `PUT /chat/{id}` continues one (404 when it does not know the id), and the
//! answer streams as JSON lines. Each answer says what the service remembers, so a test can
//! tell a continued conversation from a new one. Faults are switched on per test: forget a
//! conversation, be down, be slow, answer for another conversation, stream garbage.

// Test support: a broken fixture is a test failure with a plain message.
#![allow(clippy::expect_used)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{post, put};
use serde_json::{Value, json};

/// What the service does on the next messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Behaviour {
    /// Answers.
    #[default]
    Normal,
    /// 503 to everything.
    Down,
    /// Waits this long before answering.
    Slow(Duration),
    /// Continues a conversation under another conversation's id.
    WrongId,
    /// Sends its id, a piece of text, then a line that is not JSON.
    Garbage,
}

/// One message the service received.
#[derive(Debug, Clone, PartialEq)]
pub struct Received {
    /// `None` for a start, the id for a continuation.
    pub conversation_id: Option<String>,
    /// The `x-baton-principal` header.
    pub principal_header: Option<String>,
    /// The JSON body.
    pub body: Value,
}

#[derive(Debug, Default)]
struct Inner {
    /// Conversation id → the messages it holds, oldest first (replayed context included).
    conversations: HashMap<String, Vec<String>>,
    next_id: u64,
    behaviour: Behaviour,
    received: Vec<Received>,
}

/// The running service.
#[derive(Debug, Clone)]
pub struct FakeUpstream {
    inner: Arc<Mutex<Inner>>,
    url: String,
}

impl FakeUpstream {
    /// Starts it on a loopback port.
    ///
    /// # Panics
    /// When no port can be bound.
    pub async fn start() -> FakeUpstream {
        let inner = Arc::new(Mutex::new(Inner::default()));
        let app = Router::new()
            .route("/chat", post(start))
            .route("/chat/{id}", put(continue_))
            .with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let addr = listener.local_addr().expect("the bound address");
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeUpstream {
            inner,
            url: format!("http://{addr}/chat"),
        }
    }

    /// The conversation endpoint, for `tools.yaml`.
    pub fn url(&self) -> &str {
        &self.url
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sets what it does from now on.
    pub fn set(&self, behaviour: Behaviour) {
        self.lock().behaviour = behaviour;
    }

    /// Forgets every conversation, as a service does when its sessions end.
    pub fn forget_all(&self) {
        self.lock().conversations.clear();
    }

    /// Every message received so far.
    pub fn received(&self) -> Vec<Received> {
        self.lock().received.clone()
    }

    /// The messages a conversation holds.
    pub fn conversation(&self, id: &str) -> Option<Vec<String>> {
        self.lock().conversations.get(id).cloned()
    }
}

type Shared = Arc<Mutex<Inner>>;

fn lock(inner: &Shared) -> MutexGuard<'_, Inner> {
    inner.lock().unwrap_or_else(|p| p.into_inner())
}

async fn start(State(inner): State<Shared>, headers: HeaderMap, body: String) -> Response {
    let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let (behaviour, id, lines) = {
        let mut s = lock(&inner);
        s.received.push(received(None, &headers, &body));
        s.next_id += 1;
        let id = format!("conv-{}", s.next_id);
        let mut held: Vec<String> = body["context"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|e| {
                [
                    e["user"].as_str().unwrap_or_default().to_owned(),
                    e["assistant"].as_str().unwrap_or_default().to_owned(),
                ]
            })
            .collect();
        let replayed = held.len() / 2;
        held.push(body["message"].as_str().unwrap_or_default().to_owned());
        let answer = format!(
            "New conversation {id} (replayed {replayed} exchange(s)): you asked {:?}.",
            body["message"].as_str().unwrap_or_default()
        );
        s.conversations.insert(id.clone(), held);
        (s.behaviour, id.clone(), answer_lines(&id, &answer))
    };
    answer(behaviour, &id, lines).await
}

async fn continue_(
    State(inner): State<Shared>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: String,
) -> Response {
    let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let (behaviour, lines) = {
        let mut s = lock(&inner);
        s.received.push(received(Some(id.clone()), &headers, &body));
        let behaviour = s.behaviour;
        let Some(held) = s.conversations.get_mut(&id) else {
            return (StatusCode::NOT_FOUND, "no such conversation").into_response();
        };
        held.push(body["message"].as_str().unwrap_or_default().to_owned());
        let answer = format!(
            "Continuing {id} ({} message(s) so far): you asked {:?}.",
            held.len(),
            body["message"].as_str().unwrap_or_default()
        );
        let shown_id = if behaviour == Behaviour::WrongId {
            "conv-someone-else".to_owned()
        } else {
            id.clone()
        };
        (behaviour, answer_lines(&shown_id, &answer))
    };
    answer(behaviour, &id, lines).await
}

fn received(id: Option<String>, headers: &HeaderMap, body: &Value) -> Received {
    Received {
        conversation_id: id,
        principal_header: headers
            .get("x-baton-principal")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
        body: body.clone(),
    }
}

/// The id line, then the answer in three pieces.
fn answer_lines(id: &str, text: &str) -> Vec<String> {
    let mut lines = vec![json!({"conversation_id": id}).to_string()];
    let cut = [text.len() / 3, 2 * text.len() / 3];
    let mut from = 0;
    for to in cut.into_iter().chain([text.len()]) {
        let to = (to..=text.len())
            .find(|i| text.is_char_boundary(*i))
            .unwrap_or(text.len());
        lines.push(json!({"text": &text[from..to]}).to_string());
        from = to;
    }
    lines
}

async fn answer(behaviour: Behaviour, id: &str, lines: Vec<String>) -> Response {
    match behaviour {
        Behaviour::Down => {
            return (StatusCode::SERVICE_UNAVAILABLE, "down for maintenance").into_response();
        }
        Behaviour::Slow(wait) => tokio::time::sleep(wait).await,
        Behaviour::Garbage => {
            let body = format!(
                "{}\n{}\n<html>oops</html>\n",
                json!({"conversation_id": id}),
                json!({"text": "Partial "})
            );
            return ndjson(body);
        }
        Behaviour::Normal | Behaviour::WrongId => {}
    }
    ndjson(lines.join("\n") + "\n")
}

fn ndjson(body: String) -> Response {
    Response::builder()
        .header("content-type", "application/x-ndjson")
        .body(Body::from(body))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}
