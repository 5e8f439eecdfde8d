//! Bedrock's ConverseStream answer over any bytes, in pieces cut anywhere: the SDK's
//! event-stream framing and unmarshalling, then the adapter's events (tool-use blocks by
//! index, stop and usage). Events or a plain error, never a panic, and the same result
//! however the bytes arrive. The bytes come back from an in-process HTTP connector, so
//! the whole client path runs as it does against Bedrock, without a socket.

// `expect` only on what the harness builds from fixed values (runtimes, servers, requests)
// and on its own locks: a failure there is a broken harness, not a finding.
#![allow(clippy::expect_used)]

use std::sync::{Arc, Mutex, OnceLock};

use aws_sdk_bedrockruntime::config::{BehaviorVersion, Credentials, Region};
use aws_smithy_runtime_api::client::http::{
    HttpConnector, HttpConnectorFuture, SharedHttpConnector, http_client_fn,
};
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::http::StatusCode;
use aws_smithy_types::body::SdkBody;
use aws_smithy_types::retry::RetryConfig;
use baton_aws::bedrock::BedrockModel;
use baton_core::message::Message;
use baton_core::model::{CallPurpose, Inference, ModelRequest, ToolChoice};
use baton_core::ports::model::Model;
use bytes::Bytes;
use futures::StreamExt as _;
use http_body_util::StreamBody;

use crate::common;

/// Answers every request with the pieces it holds, as a streamed 200.
#[derive(Debug, Clone, Default)]
struct Answer(Arc<Mutex<Vec<Bytes>>>);

impl HttpConnector for Answer {
    fn call(&self, _request: HttpRequest) -> HttpConnectorFuture {
        let pieces = std::mem::take(&mut *self.0.lock().expect("not poisoned"));
        let frames = futures::stream::iter(
            pieces
                .into_iter()
                .map(|b| Ok::<_, std::io::Error>(http_body::Frame::data(b))),
        );
        let mut response = HttpResponse::new(
            StatusCode::try_from(200).expect("a status"),
            SdkBody::from_body_1_x(StreamBody::new(frames)),
        );
        response
            .headers_mut()
            .insert("content-type", "application/vnd.amazon.eventstream");
        HttpConnectorFuture::ready(Ok(response))
    }
}

struct Fixed {
    runtime: tokio::runtime::Runtime,
    answer: Answer,
    model: BedrockModel,
}

fn fixed() -> &'static Fixed {
    static FIXED: OnceLock<Fixed> = OnceLock::new();
    FIXED.get_or_init(|| {
        let answer = Answer::default();
        let connector = SharedHttpConnector::new(answer.clone());
        let config = aws_sdk_bedrockruntime::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("AKID", "SECRET", None, None, "fuzz"))
            .retry_config(RetryConfig::disabled())
            .http_client(http_client_fn(move |_, _| connector.clone()))
            .build();
        let client = aws_sdk_bedrockruntime::Client::from_conf(config);
        Fixed {
            runtime: common::runtime(),
            answer,
            model: BedrockModel::new(client, Vec::<Arc<baton_core::registry::ModelSpec>>::new()),
        }
    })
}

fn request() -> ModelRequest {
    ModelRequest {
        agent_id: Arc::from("orchestrator"),
        model_id: Arc::from("m"),
        purpose: CallPurpose::Route,
        system: Vec::new(),
        messages: vec![Message::user("hi")],
        tools: Arc::from(Vec::new()),
        tool_choice: ToolChoice::Auto,
        inference: Inference::default(),
    }
}

/// Every event, or where the stream failed (the error's kind: its text may name bytes).
fn events(fixed: &Fixed, pieces: Vec<Bytes>) -> Vec<String> {
    *fixed.answer.0.lock().expect("not poisoned") = pieces;
    fixed.runtime.block_on(async {
        let mut stream = fixed.model.stream(&request());
        let mut seen = Vec::new();
        while let Some(item) = stream.next().await {
            match item {
                Ok(event) => seen.push(format!("{event:?}")),
                Err(e) => {
                    seen.push(format!("error {:?}", std::mem::discriminant(&e)));
                    break;
                }
            }
        }
        seen
    })
}

/// One input: where to cut, then Bedrock's answer.
pub fn run(data: &[u8]) {
    let Some((cuts, body)) = common::input::<(Vec<u16>, &[u8])>(data) else {
        return;
    };
    let fixed = fixed();
    common::same_however_cut(&cuts, body, |pieces| events(fixed, pieces));
}
