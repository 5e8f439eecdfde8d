//! What runs around the `turn` binary: DynamoDB Local, an S3 server over HTTP, the
//! Bedrock-wire fake and a fake Lambda Runtime API, with the binary started against them
//! through the SDK's standard endpoint variables; and helpers to take apart what it posts.

use std::path::Path;
use std::time::Duration;

use baton_tests::fixtures;
use baton_tests::function_process::{Running, Services, shop_answers};
use baton_tests::runtime_api::{FakeRuntimeApi, PostKind, Posted};
use serde_json::Value;

/// The Bedrock id the deployment gives the registry's `claude-haiku`.
pub(crate) const HAIKU_ID: &str = "eu.anthropic.claude-haiku-deployed-v1:0";
/// How long the test waits for the binary to do anything.
pub(crate) const WAIT: Duration = Duration::from_secs(60);

/// Everything the binary needs around it.
pub(crate) struct Rig {
    pub(crate) api: FakeRuntimeApi,
    pub(crate) services: Services,
    pub(crate) running: Running,
}

impl Rig {
    /// Starts the services and the binary, and waits until it asks for its first event.
    pub(crate) async fn start() -> Rig {
        Self::start_with(&[]).await
    }

    /// [`Rig::start`] with more variables for the binary.
    pub(crate) async fn start_with(extra: &[(&str, &str)]) -> Rig {
        let services = Services::start(shop_answers).await;
        let api = FakeRuntimeApi::start().await.unwrap();
        let mut env = services.env();
        env.extend(
            extra
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
        );
        // As the template passes them: the ids its IAM policy allows.
        env.push(("BATON_MODEL_IDS".into(), format!("claude-haiku={HAIKU_ID}")));
        let binary = Path::new(env!("CARGO_BIN_EXE_turn"));
        let running = Running::spawn(binary, &env, &api.address());
        let rig = Rig {
            api,
            services,
            running,
        };
        assert!(
            rig.api.wait_for_next_calls(1, WAIT).await,
            "the binary never asked for an event; stdout: {:#?}",
            rig.running.lines()
        );
        rig
    }

    /// Hands the binary one event and returns what it posts back.
    pub(crate) async fn invoke(&self, request_id: &str, event: Vec<u8>) -> Posted {
        self.api.push(request_id, event);
        let posted = self.api.next_post(WAIT).await.unwrap_or_else(|| {
            panic!(
                "no answer from the binary; stdout: {:#?}",
                self.running.lines()
            )
        });
        assert_eq!(posted.request_id, request_id);
        posted
    }
}

/// A sample event from `events/`.
pub(crate) fn event(name: &str) -> Value {
    serde_json::from_slice(&fixtures::event(name)).unwrap()
}

/// `event` with its body replaced by `body` as a JSON string, as the front doors send it.
pub(crate) fn with_body(mut event: Value, body: Value) -> Vec<u8> {
    event["body"] = body.to_string().into();
    serde_json::to_vec(&event).unwrap()
}

/// Splits a streamed HTTP integration response: the prelude, the delimiter, the rest.
pub(crate) fn split(body: &[u8]) -> (&str, &[u8], &str) {
    let at = body
        .windows(8)
        .position(|w| w == [0u8; 8])
        .expect("8 NUL bytes after the prelude");
    (
        std::str::from_utf8(&body[..at]).unwrap(),
        &body[at..at + 8],
        std::str::from_utf8(&body[at + 8..]).unwrap(),
    )
}

/// Replaces every `"duration_ms":<n>` with `"duration_ms":0` (wall times vary).
pub(crate) fn without_durations(text: &str) -> String {
    let key = "\"duration_ms\":";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(key) {
        out.push_str(&rest[..i + key.len()]);
        rest = rest[i + key.len()..].trim_start_matches(|c: char| c.is_ascii_digit());
        out.push('0');
    }
    out.push_str(rest);
    out
}

/// The headers of a streamed response that ended well.
pub(crate) fn assert_streaming_headers(posted: &Posted) {
    assert_eq!(posted.kind, PostKind::Response);
    assert_eq!(
        posted
            .header("lambda-runtime-function-response-mode")
            .as_deref(),
        Some("streaming")
    );
    assert_eq!(
        posted.header("content-type").as_deref(),
        Some("application/vnd.awslambda.http-integration-response")
    );
    assert_eq!(
        posted.header("transfer-encoding").as_deref(),
        Some("chunked")
    );
    let trailer = posted.header_all("trailer").join(", ").to_ascii_lowercase();
    assert!(
        trailer.contains("lambda-runtime-function-error-type")
            && trailer.contains("lambda-runtime-function-error-body"),
        "{trailer}"
    );
    // A stream that ended well carries no error trailers.
    assert!(
        posted
            .trailers
            .as_ref()
            .is_none_or(|t| t.get("lambda-runtime-function-error-type").is_none())
    );
}
