//! Header secrets by ARN against a real AWS emulator: moto's server (Secrets Manager and
//! SSM), started per test from the template tools' venv (`infra/python-tools.sh`, which
//! installs `moto[server]` from `infra/python-tools.txt` on first use) and stopped when the
//! test ends. The secret and the SecureString parameter are created through the real SDK
//! clients; `baton_aws::secrets::prefetch` reads them back, and the turn function's own
//! Init (`baton_turn::init_with`) reads them for an `http` tool whose calls then carry
//! them as headers to a local axum server.
//!
//! `BATON_TEST_MOTO=http://host:port` uses a running moto server instead.

use std::collections::HashMap;
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use aws_config::retry::RetryConfig;
use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_sdk_bedrockruntime::config::StalledStreamProtectionConfig;
use aws_sdk_secretsmanager::config::Credentials;
use aws_sdk_secretsmanager::primitives::Blob;
use aws_sdk_ssm::types::ParameterType;
use axum::Router;
use axum::extract::Request;
use axum::http::HeaderMap;
use baton_aws::sdk::Clients;
use baton_aws::secrets::{SecretsError, prefetch};
use baton_tests::dynamodb_local::DynamoDbLocal;
use baton_tests::fake_bedrock::{FakeBedrock, FakeRequest, Reply, ToolCall};
use baton_tests::fixtures::{copy_dir, event, registry_dir, repo_root};
use baton_tests::s3::InProcessS3;
use baton_turn::{Config, LambdaPrincipal};
use futures::StreamExt;
use lambda_http::request::LambdaRequest;
use lambda_http::tower::Service;
use lambda_http::{Context, LambdaEvent, StreamAdapter};
use serde_json::{Value, json};

/// The variable naming an already running moto server, e.g. `http://127.0.0.1:5000`.
const ENDPOINT_VAR: &str = "BATON_TEST_MOTO";
/// How long a started moto server gets to answer.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// The connector settings of `search_offers` in the shipped `tools.yaml`.
const FIXTURE_CONNECTOR: &str =
    "    connector:\n      kind: fixture\n      file: fixtures/shop/offers.yaml\n";
const BUCKET: &str = "baton-bodies";

// ---- moto ---------------------------------------------------------------------------

/// The venv's bin folder, found (and the venv installed or updated) once per process.
fn tools_bin() -> &'static Result<PathBuf, String> {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BIN.get_or_init(|| {
        let script = repo_root().join("infra/python-tools.sh");
        let out = Command::new(&script)
            .current_dir(repo_root())
            .stderr(Stdio::inherit())
            .output()
            .map_err(|e| format!("could not run {}: {e}", script.display()))?;
        if !out.status.success() {
            return Err(format!(
                "{} failed ({}): the Python tools (moto[server]) could not be installed",
                script.display(),
                out.status
            ));
        }
        let bin = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if !bin.join("moto_server").is_file() {
            return Err(format!(
                "no moto_server in {}: is moto[server] in infra/python-tools.txt?",
                bin.display()
            ));
        }
        Ok(bin)
    })
}

/// moto's server on a free port, for one test. Dropping it stops the server; so does the
/// test process ending in any way (the server runs under a watchdog reading a pipe from
/// this process, as DynamoDB Local does in `baton_tests::dynamodb_local`).
pub(crate) struct Moto {
    pub(crate) sdk: SdkConfig,
    process: Option<(Child, ChildStdin)>,
}

impl Moto {
    pub(crate) async fn start() -> Moto {
        if let Ok(endpoint) = std::env::var(ENDPOINT_VAR)
            && !endpoint.trim().is_empty()
        {
            return Moto::at(endpoint.trim().to_owned(), None).await;
        }
        let bin = match tools_bin() {
            Ok(bin) => bin,
            Err(message) => panic!("{message}"),
        };
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free local port")
            .port();
        // $1: moto_server, $2: port. `read` returns when this process's end of stdin closes.
        let watchdog = r#"
            "$1" -H 127.0.0.1 -p "$2" </dev/null >/dev/null 2>&1 &
            child=$!
            while read -r _; do :; done
            kill "$child" 2>/dev/null
            wait "$child" 2>/dev/null
        "#;
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(watchdog)
            .arg("moto-watchdog")
            .arg(bin.join("moto_server"))
            .arg(port.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("sh starts moto_server");
        let lifeline = child.stdin.take().expect("a pipe to the watchdog");
        let address = format!("127.0.0.1:{port}");
        let started = Instant::now();
        while TcpStream::connect(&address).is_err() {
            if let Ok(Some(status)) = child.try_wait() {
                panic!("moto_server stopped while starting ({status})");
            }
            assert!(
                started.elapsed() < START_TIMEOUT,
                "moto_server did not answer on port {port} within {} s",
                START_TIMEOUT.as_secs()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Moto::at(format!("http://{address}"), Some((child, lifeline))).await
    }

    async fn at(endpoint: String, process: Option<(Child, ChildStdin)>) -> Moto {
        let sdk = aws_config::defaults(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("local", "local", None, None, "static"))
            .endpoint_url(&endpoint)
            .retry_config(RetryConfig::disabled())
            .load()
            .await;
        Moto { sdk, process }
    }

    fn secrets_manager(&self) -> aws_sdk_secretsmanager::Client {
        aws_sdk_secretsmanager::Client::new(&self.sdk)
    }

    fn ssm(&self) -> aws_sdk_ssm::Client {
        aws_sdk_ssm::Client::new(&self.sdk)
    }

    /// A new text secret; its ARN.
    async fn secret(&self, value: &str) -> String {
        let name = format!("baton-test/partner-token-{}", uuid::Uuid::new_v4().simple());
        let created = self
            .secrets_manager()
            .create_secret()
            .name(name)
            .secret_string(value)
            .send()
            .await
            .unwrap();
        created.arn().unwrap().to_owned()
    }

    /// A new SecureString parameter; its ARN.
    async fn secure_parameter(&self, value: &str) -> String {
        let name = format!("/baton-test/{}/partner-key", uuid::Uuid::new_v4().simple());
        self.ssm()
            .put_parameter()
            .name(&name)
            .value(value)
            .r#type(ParameterType::SecureString)
            .send()
            .await
            .unwrap();
        let got = self.ssm().get_parameter().name(&name).send().await.unwrap();
        got.parameter().unwrap().arn().unwrap().to_owned()
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let Some((mut watchdog, lifeline)) = self.process.take() else {
            return;
        };
        // Closing the pipe makes the watchdog stop the server and wait for it.
        drop(lifeline);
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(_)) = watchdog.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = watchdog.kill();
        let _ = watchdog.wait();
    }
}

// ---- the partner's service and the registry -------------------------------------------

/// An axum server answering every request with `body`, keeping each request's headers.
async fn partner(body: Value) -> (String, Arc<Mutex<Vec<HeaderMap>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let app = Router::new().fallback(move |req: Request| {
        let log = log.clone();
        let body = body.clone();
        async move {
            log.lock().unwrap().push(req.headers().clone());
            axum::Json(body)
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), seen)
}

/// A copy of the shipped registry whose `search_offers` is an `http` tool at `url`, with an
/// `Authorization` header from `token_arn` and an `X-Api-Key` header from `key_arn`.
fn registry_with_http_offers(url: &str, token_arn: &str, key_arn: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&registry_dir(), dir.path());
    let path = dir.path().join("tools.yaml");
    let tools = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        tools.matches(FIXTURE_CONNECTOR).count(),
        1,
        "tools.yaml changed"
    );
    let http = format!(
        "    connector:\n      kind: http\n      url: {url}/offers\n      headers:\n        \
         Authorization: {{arn: \"{token_arn}\", prefix: \"Bearer \"}}\n        \
         X-Api-Key: {{arn: \"{key_arn}\"}}\n      response:\n        json:\n          \
         result_path: /offers\n          domain_type: offers\n          \
         enricher_id: partner-offers\n          version: 1.0.0\n"
    );
    std::fs::write(&path, tools.replace(FIXTURE_CONNECTOR, &http)).unwrap();
    dir
}

fn config(registry: &std::path::Path, table: &str) -> Config {
    let vars: HashMap<&str, String> = HashMap::from([
        ("BATON_TABLE", table.to_owned()),
        ("BATON_BUCKET", BUCKET.to_owned()),
        ("BATON_REGISTRY", registry.display().to_string()),
    ]);
    Config::from_lookup(|name| vars.get(name).cloned()).unwrap()
}

// ---- tests ----------------------------------------------------------------------------

#[tokio::test]
async fn a_secret_and_a_secure_string_are_read_once_by_arn() {
    let moto = Moto::start().await;
    let token_arn = moto.secret("tok-3f9a").await;
    let key_arn = moto.secure_parameter("key-81c2").await;

    let secrets = prefetch(
        &moto.sdk,
        [token_arn.clone(), key_arn.clone(), token_arn.clone()],
    )
    .await
    .unwrap();
    assert_eq!(secrets.len(), 2);
    assert_eq!(secrets.get(&token_arn), Some("tok-3f9a"));
    assert_eq!(secrets.get(&key_arn), Some("key-81c2"));
    let shown = format!("{secrets:?}");
    assert!(shown.contains(&token_arn), "{shown}");
    assert!(
        !shown.contains("tok-3f9a") && !shown.contains("key-81c2"),
        "{shown}"
    );
}

#[tokio::test]
async fn what_cannot_be_read_is_named() {
    let moto = Moto::start().await;
    let present = moto.secure_parameter("fine").await;

    let missing_parameter = present.replace("/partner-key", "/no-such-key");
    let e = prefetch(&moto.sdk, [present.clone(), missing_parameter.clone()])
        .await
        .unwrap_err();
    assert!(matches!(e, SecretsError::NotFound { .. }), "{e}");
    assert!(e.to_string().contains(&missing_parameter), "{e}");

    let missing_secret = "arn:aws:secretsmanager:us-east-1:123456789012:secret:nope-AbCdEf";
    let e = prefetch(&moto.sdk, [missing_secret.to_owned()])
        .await
        .unwrap_err();
    assert!(matches!(e, SecretsError::NotFound { .. }), "{e}");
    assert!(e.to_string().contains(missing_secret), "{e}");

    let binary = moto
        .secrets_manager()
        .create_secret()
        .name(format!(
            "baton-test/binary-{}",
            uuid::Uuid::new_v4().simple()
        ))
        .secret_binary(Blob::new(b"\x00\x01".to_vec()))
        .send()
        .await
        .unwrap();
    let binary = binary.arn().unwrap().to_owned();
    let e = prefetch(&moto.sdk, [binary.clone()]).await.unwrap_err();
    assert!(matches!(e, SecretsError::Binary { .. }), "{e}");
    assert!(e.to_string().contains(&binary), "{e}");
}

#[tokio::test]
async fn a_missing_arn_fails_init_naming_it() {
    let moto = Moto::start().await;
    let token_arn = moto.secret("tok").await;
    let missing = token_arn.replace("partner-token", "partner-gone");
    let registry = registry_with_http_offers("http://127.0.0.1:9", &token_arn, &missing);
    let clients = Clients::new(&moto.sdk);
    let Err(e) = baton_turn::init_with(
        &config(registry.path(), "unused"),
        &clients,
        Arc::new(LambdaPrincipal),
    )
    .await
    else {
        panic!("Init must fail on a secret that does not exist");
    };
    let text = e.to_string();
    assert!(
        text.contains(&missing) && text.contains("does not exist"),
        "{text}"
    );
    assert!(!text.contains(&token_arn), "only the failing ARN: {text}");
}

/// The fake model: the orchestrator asks `shop`, which searches the offers once, then
/// answers; the orchestrator composes.
fn answers(r: &FakeRequest) -> Reply {
    if r.offers_tool("ask_shop") && !r.last_has_tool_results() {
        let call = ToolCall::new(
            "tu-shop",
            "ask_shop",
            json!({"query": "coffee deals", "intent_count": 1}),
        );
        return Reply::text_then_tools("Let me check. ", [call]);
    }
    if r.offers_tool("ask_shop") {
        return Reply::text("Bean Street coffee earns 1,000 points.");
    }
    if r.offers_tool("search_offers") && !r.last_has_tool_results() {
        return Reply::tool_use("tu-offers", "search_offers", json!({"query": "coffee"}));
    }
    if r.offers_tool("search_offers") {
        return Reply::text("Bean Street coffee earns 1,000 points.");
    }
    Reply::validation_error("unknown caller")
}

#[tokio::test]
async fn the_turn_functions_http_tool_sends_the_secrets_read_at_init() {
    let moto = Moto::start().await;
    let token_arn = moto.secret("tok-3f9a").await;
    let key_arn = moto.secure_parameter("key-81c2").await;
    let (url, seen) = partner(json!({"offers": [
        {"title": "Bean Street coffee", "reward": "1,000 points", "ends": "Sunday"}
    ]}))
    .await;
    let registry = registry_with_http_offers(&url, &token_arn, &key_arn);

    let db = DynamoDbLocal::connect().await;
    let table = db.fresh_table().await;
    let s3 = InProcessS3::start();
    s3.create_bucket(BUCKET).await;
    let bedrock = FakeBedrock::with_handler(answers).await.unwrap();
    let fake_sdk = bedrock.sdk_config().await;
    // The function's SDK settings are moto's: Init reads the secrets through them.
    let clients = Clients {
        config: moto.sdk.clone(),
        bedrock: aws_sdk_bedrockruntime::Client::from_conf(
            aws_sdk_bedrockruntime::config::Builder::from(&fake_sdk)
                .stalled_stream_protection(StalledStreamProtectionConfig::disabled())
                .build(),
        ),
        dynamodb: db.client(),
        s3: s3.client(),
        s3vectors: aws_sdk_s3vectors::Client::new(&moto.sdk),
    };
    let function = baton_turn::init_with(
        &config(registry.path(), &table),
        &clients,
        Arc::new(LambdaPrincipal),
    )
    .await
    .expect("Init reads the secrets from moto");
    // The moto server is no longer needed: the values were read once, at Init.
    drop(moto);

    let mut payload: Value = serde_json::from_slice(&event("function-url-turn.json")).unwrap();
    payload["body"] = json!({"message": "find me coffee deals"})
        .to_string()
        .into();
    let payload: LambdaRequest = serde_json::from_value(payload).unwrap();
    let mut context = Context::default();
    context.request_id = "req-secrets".into();
    let response = StreamAdapter::from(function.router.clone())
        .call(LambdaEvent::new(payload, context))
        .await
        .unwrap();
    assert_eq!(response.metadata_prelude.status_code.as_u16(), 200);
    let mut stream = response.stream.boxed();
    let mut body = Vec::new();
    while let Some(chunk) = stream.next().await {
        body.extend_from_slice(&chunk.unwrap());
    }
    let body = String::from_utf8(body).unwrap();
    assert!(body.contains("event: completed"), "{body}");

    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1, "one call to the partner: {seen:?}");
    let header = |name: &str| seen[0].get(name).and_then(|v| v.to_str().ok());
    assert_eq!(header("authorization"), Some("Bearer tok-3f9a"));
    assert_eq!(header("x-api-key"), Some("key-81c2"));
    // The tool's answer reached the specialist.
    let searched = bedrock
        .requests()
        .into_iter()
        .find(|r| r.offers_tool("search_offers") && r.last_has_tool_results())
        .expect("the specialist saw the search's result");
    let result = serde_json::to_string(&searched.last_tool_results()[0].content).unwrap();
    assert!(result.contains("Bean Street coffee"), "{result}");
    // No secret value in the stream sent to the caller.
    assert!(!body.contains("tok-3f9a") && !body.contains("key-81c2"));
}
