//! The function built over the shipped registry with a scripted model and the in-memory
//! store, and events driven through lambda_http's streaming adapter exactly as the Lambda
//! runtime drives them (minus the Runtime API itself).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use baton_core::Principal;
use baton_http::sse::{SseFrame, decode};
use baton_inproc::HeapStore;
use baton_inproc::scripted::ScriptedModel;
use baton_turn::{Adapters, Config, Function, LambdaPrincipal, MetricsSink, ModelServing};
use futures::StreamExt;
use futures::stream::BoxStream;
use lambda_http::http::{HeaderMap, StatusCode};
use lambda_http::lambda_runtime::MetadataPrelude;
use lambda_http::request::LambdaRequest;
use lambda_http::tower::Service;
use lambda_http::{Context, LambdaEvent, StreamAdapter};
use serde_json::Value;

pub(crate) use baton_tests::fixtures::{SHOP_SCRIPT, event, registry_dir};

/// A sample event as JSON, to change before sending.
pub(crate) fn event_json(name: &str) -> Value {
    serde_json::from_slice(&event(name)).unwrap()
}

/// The IAM caller of `events/function-url-turn.json`.
pub(crate) const ALICE: &str = "arn:aws:iam::123456789012:user/alice";
/// The IAM caller of `events/api-gateway-rest-turn.json`.
pub(crate) const BOB: &str = "arn:aws:iam::123456789012:user/bob";

/// Settings over the shipped registry; `extra` overrides.
pub(crate) fn config(extra: &[(&str, &str)]) -> Config {
    let mut vars: HashMap<String, String> = HashMap::new();
    vars.insert("BATON_TABLE".into(), "unused".into());
    vars.insert("BATON_BUCKET".into(), "unused".into());
    vars.insert(
        "BATON_REGISTRY".into(),
        registry_dir().display().to_string(),
    );
    for (k, v) in extra {
        vars.insert((*k).to_owned(), (*v).to_owned());
    }
    Config::from_lookup(|name| vars.get(name).cloned()).unwrap()
}

/// The function over a scripted model and a fresh in-memory store.
pub(crate) async fn function(script: &str) -> Function {
    function_with(script, &[]).await
}

/// Like [`function`], with settings overridden.
pub(crate) async fn function_with(script: &str, extra: &[(&str, &str)]) -> Function {
    let model = Arc::new(ScriptedModel::from_yaml(script).unwrap());
    baton_turn::assemble(
        &config(extra),
        Adapters {
            model: ModelServing::Override(model),
            store: Arc::new(HeapStore::new()),
            principals: Arc::new(LambdaPrincipal),
            memory: None,
        },
    )
    .await
    .unwrap()
}

/// What the function streamed for one invocation.
pub(crate) struct Streamed {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: String,
}

impl Streamed {
    pub(crate) fn frames(&self) -> Vec<SseFrame> {
        decode(&self.body)
    }

    /// Event names in order.
    pub(crate) fn names(&self) -> Vec<String> {
        self.frames()
            .iter()
            .filter_map(|f| f.event.clone())
            .collect()
    }

    /// The data of every frame named `name`.
    pub(crate) fn data_of(&self, name: &str) -> Vec<Value> {
        self.frames()
            .iter()
            .filter(|f| f.event.as_deref() == Some(name))
            .map(|f| serde_json::from_str(&f.data).unwrap())
            .collect()
    }

    /// All `text` events joined.
    pub(crate) fn text(&self) -> String {
        self.data_of("text")
            .iter()
            .map(|d| d["text"].as_str().unwrap().to_owned())
            .collect()
    }

    /// The episode the stream announced.
    pub(crate) fn episode_id(&self) -> String {
        self.data_of("response_id")[0]["episode_id"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// The JSON error body of a refusal.
    pub(crate) fn error(&self) -> (String, String) {
        let v: Value = serde_json::from_str(&self.body).unwrap();
        (
            v["error"]["code"].as_str().unwrap().to_owned(),
            v["error"]["message"].as_str().unwrap().to_owned(),
        )
    }
}

/// A Lambda context as the runtime builds it for `request_id`.
pub(crate) fn context(request_id: &str) -> Context {
    let mut context = Context::default();
    context.request_id = request_id.to_owned();
    context.invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:turn".into();
    context
}

/// A streamed response: the prelude's status and headers, and the body's frames.
pub(crate) type Started = (
    MetadataPrelude,
    BoxStream<'static, Result<Bytes, axum::Error>>,
);

/// Starts one invocation: the event's JSON as the runtime parses it, through lambda_http's
/// streaming adapter; returns the prelude and the body stream.
pub(crate) async fn start(function: &Function, event: &[u8]) -> Started {
    let payload: LambdaRequest = serde_json::from_slice(event).unwrap();
    let mut adapter = StreamAdapter::from(function.router.clone());
    let response = adapter
        .call(LambdaEvent::new(payload, context("req-1")))
        .await
        .unwrap();
    (response.metadata_prelude, response.stream.boxed())
}

/// One whole invocation: the stream read to its end, then the invocation's end (wait for
/// turns, flush metrics into the returned lines).
pub(crate) async fn invoke(function: &Function, event: &[u8]) -> (Streamed, Vec<Value>) {
    let (prelude, mut stream) = start(function, event).await;
    let mut body = Vec::new();
    while let Some(frame) = stream.next().await {
        body.extend_from_slice(&frame.expect("the body never yields an error"));
    }
    let streamed = Streamed {
        status: prelude.status_code,
        headers: prelude.headers,
        body: String::from_utf8(body).unwrap(),
    };
    let metrics = end_invocation(function).await;
    (streamed, metrics)
}

/// The invocation's end; the EMF lines it wrote.
pub(crate) async fn end_invocation(function: &Function) -> Vec<Value> {
    let sink = Arc::new(Mutex::new(Vec::<u8>::new()));
    let as_sink: MetricsSink = sink.clone();
    function.invocation_layer(as_sink).after("req-1", 0).await;
    let bytes = sink.lock().unwrap().clone();
    String::from_utf8(bytes)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The turns `principal` has committed on `episode_id`.
pub(crate) async fn committed(function: &Function, principal: &str, episode_id: &str) -> usize {
    function
        .runtime
        .history(&Principal::new(principal).unwrap(), episode_id)
        .await
        .map(|h| h.turns.len())
        .unwrap_or(0)
}

/// Replaces an event's body (and keeps it a string, as the front doors send it).
pub(crate) fn with_body(mut event: Value, body: &str) -> Vec<u8> {
    event["body"] = Value::String(body.to_owned());
    serde_json::to_vec(&event).unwrap()
}
