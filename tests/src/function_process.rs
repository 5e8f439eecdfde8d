//! A function binary run as Lambda runs it, against local services: DynamoDB Local (a
//! fresh table), S3 (s3s over HTTP on a loopback port: a separate process reaches services
//! only by URL) and the Bedrock fake, with the fake Lambda Runtime API handing it events.

// Test support: a broken fixture is a test failure with a plain message.
#![allow(clippy::panic, clippy::expect_used)]

use std::io::BufRead as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::error_handling::HandleError;
use axum::http::{Response, StatusCode};
use s3s::auth::SimpleAuth;
use s3s::service::S3ServiceBuilder;
use serde_json::json;
use tempfile::TempDir;

use crate::dynamodb_local::DynamoDbLocal;
use crate::fake_bedrock::{FakeBedrock, FakeRequest, Reply, ToolCall};
use crate::fixtures::registry_dir;

/// The bucket the services hold.
pub const BUCKET: &str = "baton-bodies";

/// The fake's answers for the shipped registry: the orchestrator routes "coffee deals" to
/// `shop`, which answers from text; the orchestrator then composes.
pub fn shop_answers(r: &FakeRequest) -> Reply {
    if r.offers_tool("ask_shop") && !r.last_has_tool_results() {
        let call = ToolCall::new(
            "tu-shop",
            "ask_shop",
            json!({"query": "coffee deals", "intent_count": 1}),
        );
        return Reply::text_then_tools("Let me check. ", [call]);
    }
    if r.offers_tool("ask_shop") || r.offers_tool("search_offers") {
        return Reply::text("Bean Street coffee earns 1,000 points.");
    }
    Reply::validation_error("unknown caller")
}

/// The services around a function binary.
pub struct Services {
    /// DynamoDB Local.
    pub dynamodb: DynamoDbLocal,
    /// The journal's fresh table.
    pub table: String,
    /// The S3 endpoint.
    pub s3: String,
    /// The Bedrock fake.
    pub bedrock: FakeBedrock,
    dir: TempDir,
}

impl Services {
    /// Starts them, the fake answering with `answers`.
    ///
    /// # Panics
    /// When a service cannot be started.
    pub async fn start(
        answers: impl Fn(&FakeRequest) -> Reply + Send + Sync + 'static,
    ) -> Services {
        let dynamodb = DynamoDbLocal::connect().await;
        let table = dynamodb.fresh_table().await;
        let dir = tempfile::tempdir().expect("a temporary folder");
        let s3 = serve_s3(&dir.path().join("s3")).await;
        let bedrock = FakeBedrock::with_handler(answers)
            .await
            .expect("starting the Bedrock fake");
        Services {
            dynamodb,
            table,
            s3,
            bedrock,
            dir,
        }
    }

    /// The environment of a function reaching these services (all but the Runtime API's
    /// address), over the shipped registry.
    pub fn env(&self) -> Vec<(String, String)> {
        let home = self.dir.path().join("home");
        let _ = std::fs::create_dir_all(&home);
        [
            // No ~/.aws of the machine running the tests.
            ("HOME", home.display().to_string()),
            ("AWS_LAMBDA_FUNCTION_NAME", "turn".into()),
            ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "1024".into()),
            ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST".into()),
            ("AWS_REGION", "us-east-1".into()),
            ("AWS_ACCESS_KEY_ID", "local".into()),
            ("AWS_SECRET_ACCESS_KEY", "local".into()),
            ("AWS_EC2_METADATA_DISABLED", "true".into()),
            (
                "AWS_ENDPOINT_URL_DYNAMODB",
                self.dynamodb.endpoint().to_owned(),
            ),
            ("AWS_ENDPOINT_URL_S3", self.s3.clone()),
            (
                "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
                self.bedrock.endpoint_url(),
            ),
            ("BATON_TABLE", self.table.clone()),
            ("BATON_BUCKET", BUCKET.into()),
            ("BATON_REGISTRY", registry_dir().display().to_string()),
            ("RUST_LOG", "info".into()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
    }
}

/// S3 (`s3s-fs` over `dir`) served over HTTP on a loopback port, with the bucket created.
async fn serve_s3(dir: &Path) -> String {
    std::fs::create_dir_all(dir.join(BUCKET)).expect("the S3 folder");
    let fs = s3s_fs::FileSystem::new(dir).expect("an S3 file system");
    let mut builder = S3ServiceBuilder::new(fs);
    builder.set_auth(SimpleAuth::from_single("local", "local"));
    let service = HandleError::new(builder.build(), |e: s3s::HttpError| async move {
        tracing::error!(?e, "s3 server error");
        Response::builder()
            .status(StatusCode::INTERNAL_SERVER_ERROR)
            .body(s3s::Body::from("s3 server error".to_owned()))
            .unwrap_or_default()
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let addr = listener.local_addr().expect("the bound address");
    tokio::spawn(async move {
        let _ = axum::serve(listener, Router::new().fallback_service(service)).await;
    });
    format!("http://{addr}")
}

/// A running function binary; killed when dropped. Its stdout is kept line by line.
pub struct Running {
    child: Child,
    stdout: Arc<Mutex<Vec<String>>>,
}

impl Running {
    /// Starts `binary` with exactly `env` plus the Runtime API at `runtime_api`.
    ///
    /// # Panics
    /// When it cannot be started.
    pub fn spawn(binary: &Path, env: &[(String, String)], runtime_api: &str) -> Running {
        let mut command = Command::new(binary);
        command
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .env("AWS_LAMBDA_RUNTIME_API", runtime_api)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = command.spawn().expect("starting the function binary");
        let stdout = Arc::new(Mutex::new(Vec::new()));
        if let Some(pipe) = child.stdout.take() {
            let lines = stdout.clone();
            std::thread::spawn(move || {
                for line in std::io::BufReader::new(pipe).lines().map_while(Result::ok) {
                    if let Ok(mut lines) = lines.lock() {
                        lines.push(line);
                    }
                }
            });
        }
        Running { child, stdout }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its stdout so far.
    pub fn lines(&self) -> Vec<String> {
        self.stdout.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Waits up to `limit` for a stdout line satisfying `pred`.
    ///
    /// # Panics
    /// When none comes, with the stdout so far.
    pub async fn wait_line(&self, limit: Duration, pred: impl Fn(&str) -> bool) -> String {
        let found = tokio::time::timeout(limit, async {
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

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
