//! Figures for the `turn` binary under a local Lambda Runtime API: cold start and peak
//! memory. Not a test: it prints measurements.
//!
//! ```text
//! cargo build --release -p baton-turn --bin turn
//! cargo run --release -p baton-tests --example turn_figures [-- <path to turn> [starts] [turns]]
//! ```
//!
//! - cold start: `init_us` as the binary logs it (from `main` to registry validated and
//!   clients built, before the connection warm-up), and from process spawn to the binary's
//!   first request for an event (everything, warm-up against the local emulators included);
//! - memory: `VmHWM` (peak RSS) and `VmRSS` from `/proc/<pid>/status` after each batch of
//!   turns, each turn a new episode through DynamoDB Local and the Bedrock-wire fake.
//!
//! Needs DynamoDB Local (`BATON_TEST_DYNAMODB`, or `./infra/emulators.sh install`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::error_handling::HandleError;
use axum::http::{Response, StatusCode};
use baton_tests::dynamodb_local::DynamoDbLocal;
use baton_tests::fake_bedrock::{FakeBedrock, FakeRequest, Reply, ToolCall};
use baton_tests::runtime_api::{FakeRuntimeApi, PostKind};
use s3s::auth::SimpleAuth;
use s3s::service::S3ServiceBuilder;
use serde_json::{Value, json};

const BUCKET: &str = "baton-bodies";
const WAIT: Duration = Duration::from_secs(60);

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

async fn serve_s3(dir: &Path) -> String {
    std::fs::create_dir_all(dir.join(BUCKET)).unwrap();
    let mut builder = S3ServiceBuilder::new(s3s_fs::FileSystem::new(dir).unwrap());
    builder.set_auth(SimpleAuth::from_single("local", "local"));
    let service = HandleError::new(builder.build(), |_: s3s::HttpError| async move {
        Response::builder()
            .status(StatusCode::INTERNAL_SERVER_ERROR)
            .body(s3s::Body::from("s3 server error".to_owned()))
            .unwrap()
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, Router::new().fallback_service(service)).await;
    });
    format!("http://{addr}")
}

fn answers(r: &FakeRequest) -> Reply {
    if r.offers_tool("ask_shop") && !r.last_has_tool_results() {
        let call = ToolCall::new(
            "tu-shop",
            "ask_shop",
            json!({"query": "coffee deals", "intent_count": 1}),
        );
        return Reply::text_then_tools("Let me check. ", [call]);
    }
    Reply::text("Bean Street coffee earns 1,000 points.")
}

struct Env {
    api: FakeRuntimeApi,
    vars: Vec<(String, String)>,
}

fn spawn(binary: &Path, env: &Env, lines: Arc<Mutex<Vec<String>>>) -> Child {
    let mut command = Command::new(binary);
    command.env_clear();
    for (k, v) in &env.vars {
        command.env(k, v);
    }
    command
        .env("AWS_LAMBDA_RUNTIME_API", env.api.address())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut child = command.spawn().unwrap();
    let pipe = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(pipe).lines().map_while(Result::ok) {
            lines.lock().unwrap().push(line);
        }
    });
    child
}

fn status_kb(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let binary = args.get(1).map(PathBuf::from).unwrap_or_else(|| {
        let exe = std::env::current_exe().unwrap();
        // <target>/<profile>/examples/turn_figures
        exe.parent().and_then(Path::parent).unwrap().join("turn")
    });
    let starts: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(10);
    let turns: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(50);
    println!("binary: {}", binary.display());

    let db = DynamoDbLocal::connect().await;
    let table = db.fresh_table().await;
    let s3_dir = tempfile::tempdir().unwrap();
    let s3 = serve_s3(s3_dir.path()).await;
    let bedrock = FakeBedrock::with_handler(answers).await.unwrap();
    let home = s3_dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let vars: Vec<(String, String)> = [
        ("HOME", home.display().to_string()),
        ("AWS_LAMBDA_FUNCTION_NAME", "turn".into()),
        ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "1024".into()),
        ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST".into()),
        ("AWS_REGION", "us-east-1".into()),
        ("AWS_ACCESS_KEY_ID", "local".into()),
        ("AWS_SECRET_ACCESS_KEY", "local".into()),
        ("AWS_EC2_METADATA_DISABLED", "true".into()),
        ("AWS_ENDPOINT_URL_DYNAMODB", db.endpoint().to_owned()),
        ("AWS_ENDPOINT_URL_S3", s3),
        ("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", bedrock.endpoint_url()),
        ("BATON_TABLE", table),
        ("BATON_BUCKET", BUCKET.into()),
        // As the template sets it.
        (
            "BATON_MODEL_IDS",
            "claude-haiku=us.anthropic.claude-haiku-4-5-20251001-v1:0,\
             claude-sonnet=us.anthropic.claude-sonnet-4-5-20250929-v1:0,\
             nova-micro=us.amazon.nova-micro-v1:0"
                .into(),
        ),
        (
            "BATON_REGISTRY",
            root().join("shared/registry").display().to_string(),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();

    // Cold starts: a fresh process each time.
    let mut init_ms = Vec::new();
    let mut ready_ms = Vec::new();
    for _ in 0..starts {
        let env = Env {
            api: FakeRuntimeApi::start().await.unwrap(),
            vars: vars.clone(),
        };
        let lines = Arc::new(Mutex::new(Vec::new()));
        let started = Instant::now();
        let mut child = spawn(&binary, &env, lines.clone());
        assert!(env.api.wait_for_next_calls(1, WAIT).await, "never ready");
        ready_ms.push(started.elapsed().as_secs_f64() * 1000.0);
        // The init line is written before the warm-up, so it is there by now.
        let init = lines
            .lock()
            .unwrap()
            .iter()
            .find_map(|l| serde_json::from_str::<Value>(l).ok()?["init_us"].as_u64())
            .expect("an init_us line");
        init_ms.push(init as f64 / 1000.0);
        let _ = child.kill();
        let _ = child.wait();
    }
    println!(
        "cold start over {starts} starts: init (main -> registry validated, clients built) median {:.2} ms, min {:.2} ms; spawn -> first /next (incl. warm-up) median {:.1} ms",
        median(init_ms.clone()),
        init_ms.iter().copied().fold(f64::MAX, f64::min),
        median(ready_ms),
    );

    // Memory over turns in one process.
    let env = Env {
        api: FakeRuntimeApi::start().await.unwrap(),
        vars,
    };
    let lines = Arc::new(Mutex::new(Vec::new()));
    let mut child = spawn(&binary, &env, lines);
    assert!(env.api.wait_for_next_calls(1, WAIT).await);
    let pid = child.id();
    println!(
        "after init: VmRSS {} kB, VmHWM {} kB",
        status_kb(pid, "VmRSS:"),
        status_kb(pid, "VmHWM:")
    );
    let mut event: Value = serde_json::from_slice(
        &std::fs::read(root().join("events/function-url-turn.json")).unwrap(),
    )
    .unwrap();
    for i in 1..=turns {
        event["body"] = json!({"message": "find me coffee deals", "turn_id": format!("t-{i}")})
            .to_string()
            .into();
        env.api
            .push(&format!("req-{i}"), serde_json::to_vec(&event).unwrap());
        let posted = env.api.next_post(WAIT).await.expect("an answer");
        assert_eq!(posted.kind, PostKind::Response);
        assert!(String::from_utf8_lossy(&posted.body()).contains("event: completed"));
        if i == 1 || i % 10 == 0 || i == turns {
            // The invocation is over once the binary asks for the next event.
            assert!(env.api.wait_for_next_calls(i + 1, WAIT).await);
            println!(
                "after {i} turns: VmRSS {} kB, VmHWM {} kB",
                status_kb(pid, "VmRSS:"),
                status_kb(pid, "VmHWM:")
            );
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}
