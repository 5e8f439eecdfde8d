//! What runs around the `turn` binary: DynamoDB Local, an S3 server over HTTP, the
//! Bedrock-wire fake and a fake Lambda Runtime API, with the binary started against them
//! through the SDK's standard endpoint variables; and helpers to take apart what it posts.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::error_handling::HandleError;
use axum::http::{Response, StatusCode};
use baton_tests::dynamodb_local::DynamoDbLocal;
use baton_tests::fake_bedrock::{FakeBedrock, FakeRequest, Reply, ToolCall};
use baton_tests::runtime_api::{FakeRuntimeApi, PostKind, Posted};
use s3s::auth::SimpleAuth;
use s3s::service::S3ServiceBuilder;
use serde_json::{Value, json};

const BUCKET: &str = "baton-bodies";
/// The Bedrock id the deployment gives the registry's `claude-haiku`.
pub(crate) const HAIKU_ID: &str = "eu.anthropic.claude-haiku-deployed-v1:0";
/// How long the test waits for the binary to do anything.
pub(crate) const WAIT: Duration = Duration::from_secs(60);

/// The repository root.
pub(crate) fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The S3 API of `s3s-fs` over HTTP on a loopback port: the binary only reaches services by
/// URL.
async fn serve_s3(dir: &Path) -> String {
    std::fs::create_dir_all(dir.join(BUCKET)).unwrap();
    let fs = s3s_fs::FileSystem::new(dir).unwrap();
    let mut builder = S3ServiceBuilder::new(fs);
    builder.set_auth(SimpleAuth::from_single("local", "local"));
    let service = HandleError::new(builder.build(), |e: s3s::HttpError| async move {
        tracing::error!(?e, "s3 server error");
        Response::builder()
            .status(StatusCode::INTERNAL_SERVER_ERROR)
            .body(s3s::Body::from("s3 server error".to_owned()))
            .unwrap()
    });
    let app = Router::new().fallback_service(service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{addr}")
}

/// The fake's answers: the orchestrator routes "coffee deals" to `shop`, which answers
/// from text; the orchestrator then composes.
fn answers(r: &FakeRequest) -> Reply {
    if r.offers_tool("ask_shop") && !r.last_has_tool_results() {
        return Reply::text_then_tools(
            "Let me check. ",
            [ToolCall::new(
                "tu-shop",
                "ask_shop",
                json!({"query": "coffee deals", "intent_count": 1}),
            )],
        );
    }
    if r.offers_tool("ask_shop") {
        return Reply::text("Bean Street coffee earns 1,000 points.");
    }
    if r.offers_tool("search_offers") {
        return Reply::text("Bean Street coffee earns 1,000 points.");
    }
    Reply::validation_error("unknown caller")
}

/// The binary, running; killed (by its pid) when dropped.
pub(crate) struct Running {
    child: Child,
    stdout: Arc<Mutex<Vec<String>>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Running {
    pub(crate) fn lines(&self) -> Vec<String> {
        self.stdout.lock().unwrap().clone()
    }

    /// Waits until a stdout line satisfies `pred`.
    pub(crate) async fn wait_line(&self, pred: impl Fn(&str) -> bool) -> String {
        let found = tokio::time::timeout(WAIT, async {
            loop {
                if let Some(l) = self.lines().into_iter().find(|l| pred(l)) {
                    return l;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await;
        found.unwrap_or_else(|_| panic!("no such line; stdout: {:#?}", self.lines()))
    }
}

/// Everything the binary needs around it.
pub(crate) struct Rig {
    pub(crate) api: FakeRuntimeApi,
    pub(crate) bedrock: FakeBedrock,
    _s3_dir: tempfile::TempDir,
    pub(crate) running: Running,
}

impl Rig {
    /// Starts the services and the binary, and waits until it asks for its first event.
    pub(crate) async fn start() -> Rig {
        let db = DynamoDbLocal::connect().await;
        let table = db.fresh_table().await;
        let s3_dir = tempfile::tempdir().unwrap();
        let s3 = serve_s3(s3_dir.path()).await;
        let bedrock = FakeBedrock::with_handler(answers).await.unwrap();
        let api = FakeRuntimeApi::start().await.unwrap();
        let home = s3_dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_turn"));
        command
            .env_clear()
            .env("HOME", &home) // no ~/.aws of the machine running the tests
            .env("AWS_LAMBDA_RUNTIME_API", api.address())
            .env("AWS_LAMBDA_FUNCTION_NAME", "turn")
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "1024")
            .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ACCESS_KEY_ID", "local")
            .env("AWS_SECRET_ACCESS_KEY", "local")
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env("AWS_ENDPOINT_URL_DYNAMODB", db.endpoint())
            .env("AWS_ENDPOINT_URL_S3", &s3)
            .env("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", bedrock.endpoint_url())
            .env("BATON_TABLE", &table)
            .env("BATON_BUCKET", BUCKET)
            .env("BATON_REGISTRY", root().join("shared/registry"))
            // As the template passes them: the ids its IAM policy allows.
            .env("BATON_MODEL_IDS", format!("claude-haiku={HAIKU_ID}"))
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = command.spawn().expect("starting the turn binary");
        let stdout = Arc::new(Mutex::new(Vec::new()));
        let pipe = child.stdout.take().unwrap();
        let lines = stdout.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(pipe).lines() {
                let Ok(line) = line else { return };
                lines.lock().unwrap().push(line);
            }
        });
        let rig = Rig {
            api,
            bedrock,
            _s3_dir: s3_dir,
            running: Running { child, stdout },
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
    serde_json::from_slice(&std::fs::read(root().join("events").join(name)).unwrap()).unwrap()
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
