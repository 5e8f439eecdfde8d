//! The real `turn` binary under a local Lambda Runtime API
//! ([`baton_tests::runtime_api::FakeRuntimeApi`]), talking to DynamoDB Local, an S3 server
//! (s3s over HTTP on a loopback port) and the Bedrock-wire fake, all through the SDK's
//! standard endpoint variables. What the binary posts back is checked byte for byte: the
//! response-mode headers, the JSON prelude, 8 NUL bytes, then the SSE frames.
//!
//! The binary is built by this test with `cargo build -p baton-turn --bin turn` (a no-op
//! when it is up to date), into the target directory this test runs from: Cargo offers no
//! `CARGO_BIN_EXE_*` for another package's binary, and a stale prebuilt binary would test
//! old code.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

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
const HAIKU_ID: &str = "eu.anthropic.claude-haiku-deployed-v1:0";
const WAIT: Duration = Duration::from_secs(60);

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Builds the binary into this test's target directory and returns its path.
fn turn_binary() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    // <target>/<profile>/deps/turn_binary-<hash>
    let profile_dir = exe.parent().and_then(Path::parent).unwrap().to_path_buf();
    let target_dir = profile_dir.parent().unwrap();
    let mut build = Command::new(env!("CARGO"));
    build
        .args(["build", "--quiet", "-p", "baton-turn", "--bin", "turn"])
        .env("CARGO_TARGET_DIR", target_dir)
        .current_dir(root());
    if profile_dir.file_name().is_some_and(|n| n == "release") {
        build.arg("--release");
    }
    let status = build
        .status()
        .expect("running cargo to build the turn binary");
    assert!(status.success(), "cargo build -p baton-turn failed");
    profile_dir.join("turn")
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
struct Running {
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
    fn lines(&self) -> Vec<String> {
        self.stdout.lock().unwrap().clone()
    }

    /// Waits until a stdout line satisfies `pred`.
    async fn wait_line(&self, pred: impl Fn(&str) -> bool) -> String {
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
struct Rig {
    api: FakeRuntimeApi,
    bedrock: FakeBedrock,
    _s3_dir: tempfile::TempDir,
    running: Running,
}

impl Rig {
    async fn start() -> Rig {
        let binary = turn_binary();
        let db = DynamoDbLocal::connect().await;
        let table = db.fresh_table().await;
        let s3_dir = tempfile::tempdir().unwrap();
        let s3 = serve_s3(s3_dir.path()).await;
        let bedrock = FakeBedrock::with_handler(answers).await.unwrap();
        let api = FakeRuntimeApi::start().await.unwrap();
        let home = s3_dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let mut command = Command::new(binary);
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

    async fn invoke(&self, request_id: &str, event: Vec<u8>) -> Posted {
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

fn event(name: &str) -> Value {
    serde_json::from_slice(&std::fs::read(root().join("events").join(name)).unwrap()).unwrap()
}

fn with_body(mut event: Value, body: Value) -> Vec<u8> {
    event["body"] = body.to_string().into();
    serde_json::to_vec(&event).unwrap()
}

/// Splits a streamed HTTP integration response: the prelude, the delimiter, the rest.
fn split(body: &[u8]) -> (&str, &[u8], &str) {
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
fn without_durations(text: &str) -> String {
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

fn assert_streaming_headers(posted: &Posted) {
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

#[tokio::test]
async fn the_binary_streams_a_turn_in_the_lambda_wire_format() {
    let rig = Rig::start().await;
    let init = rig.running.wait_line(|l| l.contains("\"init_us\"")).await;
    let init: Value = serde_json::from_str(&init).unwrap();
    assert!(init["init_us"].as_u64().is_some(), "{init}");

    let body = json!({"message": "find me coffee deals", "turn_id": "t-binary-1"});
    let posted = rig
        .invoke("req-1", with_body(event("function-url-turn.json"), body))
        .await;
    assert_streaming_headers(&posted);
    let bytes = posted.body();
    let (prelude, nuls, sse) = split(&bytes);
    assert_eq!(nuls, [0u8; 8]);
    let episode = serde_json::from_str::<Value>(prelude).unwrap()["headers"]["x-baton-episode-id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        prelude,
        format!(
            "{{\"statusCode\":200,\"headers\":{{\"content-type\":\"text/event-stream\",\
             \"cache-control\":\"no-cache\",\"x-baton-protocol\":\"1\",\"x-accel-buffering\":\"no\",\
             \"x-baton-turn-id\":\"t-binary-1\",\"x-baton-episode-id\":\"{episode}\"}},\
             \"cookies\":[]}}"
        )
    );
    let expected = EXPECTED_FRAMES.replace("{episode}", &episode);
    assert_eq!(without_durations(sse), expected);
    // The prelude went out as its own chunk, before any frame.
    assert_eq!(posted.chunks[0], prelude.as_bytes());
    // Every model call used the id the deployment gave (BATON_MODEL_IDS).
    let models: Vec<String> = rig
        .bedrock
        .requests()
        .into_iter()
        .map(|r| r.model_id)
        .collect();
    assert_eq!(models, vec![HAIKU_ID; 3], "{models:?}");

    // After the stream: metrics for this invocation, then a request for the next event.
    let emf = rig
        .running
        .wait_line(|l| l.contains("\"_aws\"") && l.contains("\"turns_total\""))
        .await;
    let emf: Value = serde_json::from_str(&emf).unwrap();
    assert_eq!(emf["RequestId"], "req-1");
    assert_eq!(emf["outcome"], "answered");
    assert!(rig.api.wait_for_next_calls(2, WAIT).await);
}

/// Every frame of the turn, durations zeroed: routing preamble, the composed answer word
/// by word (the fake streams word by word), the consulted record, usage at the registry's
/// prices (3 calls x 10 in / 5 out tokens of claude-haiku), completion.
const EXPECTED_FRAMES: &str = concat!(
    "id: 1\nevent: thinking\ndata: {\"v\":1,\"turn_id\":\"t-binary-1\",\"seq\":1,\"type\":\"thinking\"}\n\n",
    "id: 2\nevent: response_id\ndata: {\"v\":1,\"turn_id\":\"t-binary-1\",\"seq\":2,\"type\":\"response_id\",\"response_id\":\"t-binary-1\",\"episode_id\":\"{episode}\"}\n\n",
    "id: 3\nevent: text\ndata: {\"v\":1,\"turn_id\":\"t-binary-1\",\"seq\":3,\"type\":\"text\",\"source\":\"orchestrator\",\"text\":\"Let me check. \"}\n\n",
    "id: 4\nevent: text\ndata: {\"v\":1,\"turn_id\":\"t-binary-1\",\"seq\":4,\"type\":\"text\",\"source\":\"orchestrator\",\"text\":\"\\n\\nBean \"}\n\n",
    "id: 5\nevent: text\ndata: {\"v\":1,\"turn_id\":\"t-binary-1\",\"seq\":5,\"type\":\"text\",\"source\":\"orchestrator\",\"text\":\"Street \"}\n\n",
    "id: 6\nevent: text\ndata: {\"v\":1,\"turn_id\":\"t-binary-1\",\"seq\":6,\"type\":\"text\",\"source\":\"orchestrator\",\"text\":\"coffee \"}\n\n",
    "id: 7\nevent: text\ndata: {\"v\":1,\"turn_id\":\"t-binary-1\",\"seq\":7,\"type\":\"text\",\"source\":\"orchestrator\",\"text\":\"earns \"}\n\n",
    "id: 8\nevent: text\ndata: {\"v\":1,\"turn_id\":\"t-binary-1\",\"seq\":8,\"type\":\"text\",\"source\":\"orchestrator\",\"text\":\"1,000 \"}\n\n",
    "id: 9\nevent: text\ndata: {\"v\":1,\"turn_id\":\"t-binary-1\",\"seq\":9,\"type\":\"text\",\"source\":\"orchestrator\",\"text\":\"points.\"}\n\n",
    "id: 10\nevent: agents_consulted\ndata: {\"v\":1,\"turn_id\":\"t-binary-1\",\"seq\":10,\"type\":\"agents_consulted\",\"agents\":[{\"agent_id\":\"shop\",\"label\":\"Shopping\",\"status\":\"ok\",\"duration_ms\":0,\"tool_calls\":0}],\"footer\":\"Consulted: Shopping\"}\n\n",
    "id: 11\nevent: usage\ndata: {\"v\":1,\"turn_id\":\"t-binary-1\",\"seq\":11,\"type\":\"usage\",\"models\":[{\"model\":\"claude-haiku\",\"calls\":3,\"input\":30,\"output\":15,\"cache_read\":0,\"cache_write\":0,\"cost_usd\":0.000105}],\"cost_usd\":0.000105}\n\n",
    "id: 12\nevent: completed\ndata: {\"v\":1,\"turn_id\":\"t-binary-1\",\"seq\":12,\"type\":\"completed\",\"outcome\":\"answered\"}\n\n",
);

#[tokio::test]
async fn the_binary_refuses_no_identity_survives_a_malformed_event_and_goes_on() {
    let rig = Rig::start().await;

    let posted = rig
        .invoke(
            "req-anon",
            serde_json::to_vec(&event("function-url-turn-no-identity.json")).unwrap(),
        )
        .await;
    assert_streaming_headers(&posted);
    let bytes = posted.body();
    let (prelude, _, body) = split(&bytes);
    assert_eq!(
        prelude,
        "{\"statusCode\":403,\"headers\":{\"content-type\":\"application/json\",\"content-length\":\"113\"},\"cookies\":[]}"
    );
    assert_eq!(
        body,
        "{\"error\":{\"code\":\"forbidden\",\"message\":\"this request carries no authenticated identity, so it cannot be served\"}}"
    );

    let posted = rig
        .invoke(
            "req-bad",
            serde_json::to_vec(&event("malformed-turn.json")).unwrap(),
        )
        .await;
    assert_eq!(posted.kind, PostKind::Error);
    let error: Value = serde_json::from_slice(&posted.body()).unwrap();
    let message = error["errorMessage"].as_str().unwrap();
    assert!(
        message.contains("expects a JSON payload from Amazon API Gateway"),
        "{error}"
    );

    // Still serving.
    let posted = rig
        .invoke(
            "req-ok",
            serde_json::to_vec(&event("api-gateway-rest-turn.json")).unwrap(),
        )
        .await;
    assert_streaming_headers(&posted);
    let bytes = posted.body();
    let (prelude, _, sse) = split(&bytes);
    assert!(prelude.starts_with("{\"statusCode\":200,"), "{prelude}");
    assert!(sse.contains("event: completed"), "{sse}");
}
