//! The SDK's standard settings, the clients built once from them, and a warm-up that opens
//! their connections during Init.
//!
//! Everything comes from the environment the way every AWS SDK reads it (region,
//! credentials, `AWS_ENDPOINT_URL_BEDROCK_RUNTIME` / `_DYNAMODB` / `_S3`, checksum
//! settings), so tests and users point the clients elsewhere without code. Clients are
//! cheap to clone and share one connection pool per service: build them once per process.
//!
//! The warm-up exists so that the first turn does not pay a TLS handshake (design.md §11). It
//! sends one request per service that least-privilege IAM allows (or that IAM never sees),
//! all at once, under one short timeout, and never fails: a failed warm-up only means the
//! first turn opens its own connection.

use std::fmt;
use std::time::{Duration, Instant};

use aws_config::{BehaviorVersion, SdkConfig};
use aws_sdk_bedrockruntime::config::interceptors::BeforeTransmitInterceptorContextMut;
use aws_sdk_bedrockruntime::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::types::AttributeValue;

use crate::journal::keys;

/// The partition and sort key the DynamoDB warm-up reads: never written, so the read is an
/// empty answer (D-24 keys all start with `EP#` or `PR#`).
const WARM_UP_KEY: &str = "WARMUP";
/// The object the S3 warm-up asks about; never written.
const WARM_UP_OBJECT: &str = "bodies/.warm-up";

/// Loads the standard SDK settings from the environment (region, credentials, endpoint
/// overrides, retry and checksum settings).
pub async fn load_config() -> SdkConfig {
    aws_config::defaults(BehaviorVersion::latest()).load().await
}

/// The three service clients, built once from one [`SdkConfig`].
#[derive(Clone)]
pub struct Clients {
    /// The settings the clients were built from.
    pub config: SdkConfig,
    /// Bedrock Runtime (ConverseStream).
    pub bedrock: aws_sdk_bedrockruntime::Client,
    /// DynamoDB (the journal's table).
    pub dynamodb: aws_sdk_dynamodb::Client,
    /// S3 (large bodies).
    pub s3: aws_sdk_s3::Client,
    /// Amazon S3 Vectors (long-term memory's vectors, D-43); no request is sent where no
    /// memory is kept.
    pub s3vectors: aws_sdk_s3vectors::Client,
}

impl fmt::Debug for Clients {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Clients")
            .field("region", &self.config.region())
            .finish_non_exhaustive()
    }
}

impl Clients {
    /// Builds the clients from `config`: Bedrock as [`crate::bedrock::client`] builds it
    /// (the SDK's retries off, a long stall grace), S3 with the journal's settings
    /// ([`crate::journal::s3_config`]: path-style addressing for S3-compatible endpoints).
    pub fn new(config: &SdkConfig) -> Self {
        Clients {
            config: config.clone(),
            bedrock: crate::bedrock::client(config),
            dynamodb: aws_sdk_dynamodb::Client::from_conf(
                crate::journal::dynamodb_config(config).build(),
            ),
            s3: aws_sdk_s3::Client::from_conf(crate::journal::s3_config(config).build()),
            s3vectors: aws_sdk_s3vectors::Client::new(config),
        }
    }

    /// Loads the standard settings and builds the clients.
    pub async fn from_env() -> Self {
        Clients::new(&load_config().await)
    }

    /// Opens a connection to each service at once, within `timeout`. Never fails.
    ///
    /// - DynamoDB: `GetItem` of a key that is never written (allowed wherever the journal
    ///   may read; costs half a read unit).
    /// - S3: `HeadObject` of an object that is never written (allowed wherever bodies may
    ///   be read; a 404 or 403 answer still leaves the connection open).
    /// - Bedrock: connection only. The request is turned into an unsigned `GET /` just
    ///   before it is sent, so no model is invoked and IAM never evaluates it; the
    ///   endpoint's refusal is discarded and the connection stays in the client's pool.
    pub async fn warm_up(&self, targets: &WarmUpTargets, timeout: Duration) -> WarmUpReport {
        let started = Instant::now();
        let dynamodb = async {
            let Some(table) = &targets.table else {
                return Outcome::Skipped;
            };
            timed(timeout, async {
                match self
                    .dynamodb
                    .get_item()
                    .table_name(table)
                    .key(keys::PK, AttributeValue::S(WARM_UP_KEY.to_owned()))
                    .key(keys::SK, AttributeValue::S(WARM_UP_KEY.to_owned()))
                    .send()
                    .await
                {
                    Ok(_) => Ok(()),
                    Err(e) if e.raw_response().is_some() => {
                        // Connected, but the table refused the read: worth a line in the
                        // Init log (a wrong table name or missing permission).
                        tracing::warn!(table = %table, error = %aws_sdk_dynamodb::error::DisplayErrorContext(&e), "the table refused the warm-up read");
                        Ok(())
                    }
                    Err(e) => Err(format!("{}", aws_sdk_dynamodb::error::DisplayErrorContext(e))),
                }
            })
            .await
        };
        let s3 = async {
            let Some(bucket) = &targets.bucket else {
                return Outcome::Skipped;
            };
            timed(timeout, async {
                match self
                    .s3
                    .head_object()
                    .bucket(bucket)
                    .key(WARM_UP_OBJECT)
                    .send()
                    .await
                {
                    Ok(_) => Ok(()),
                    // The object never exists: "not found" (or "forbidden" without list
                    // rights) is the expected answer, and the connection is open.
                    Err(e) if e.raw_response().is_some() => Ok(()),
                    Err(e) => Err(format!("{}", aws_sdk_s3::error::DisplayErrorContext(e))),
                }
            })
            .await
        };
        let bedrock = async {
            if !targets.bedrock {
                return Outcome::Skipped;
            }
            timed(timeout, async {
                let result = self
                    .bedrock
                    .converse_stream()
                    .model_id("baton-warm-up")
                    .customize()
                    .interceptor(ConnectionOnly)
                    .send()
                    .await;
                match result {
                    Ok(_) => Ok(()),
                    // Any HTTP answer means the connection was made.
                    Err(e) if e.raw_response().is_some() => Ok(()),
                    Err(e) => Err(format!(
                        "{}",
                        aws_sdk_bedrockruntime::error::DisplayErrorContext(e)
                    )),
                }
            })
            .await
        };
        let (dynamodb, s3, bedrock) = tokio::join!(dynamodb, s3, bedrock);
        WarmUpReport {
            dynamodb,
            s3,
            bedrock,
            elapsed: started.elapsed(),
        }
    }
}

/// What [`Clients::warm_up`] reaches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WarmUpTargets {
    /// The journal's table (`None`: skip DynamoDB).
    pub table: Option<String>,
    /// The bodies bucket (`None`: skip S3).
    pub bucket: Option<String>,
    /// Whether to open a connection to Bedrock Runtime.
    pub bedrock: bool,
}

/// How one service's warm-up went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Not asked for.
    Skipped,
    /// Connected (whatever the service answered), in this time.
    Connected(Duration),
    /// No connection: the first turn will open one. The detail is for the log.
    Failed(String),
    /// No answer within the timeout.
    TimedOut,
}

impl Outcome {
    /// Whether a connection was made.
    pub fn connected(&self) -> bool {
        matches!(self, Outcome::Connected(_))
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Skipped => f.write_str("skipped"),
            Outcome::Connected(d) => write!(f, "connected in {} ms", d.as_millis()),
            Outcome::Failed(detail) => write!(f, "failed: {detail}"),
            Outcome::TimedOut => f.write_str("timed out"),
        }
    }
}

/// The result of [`Clients::warm_up`], for the Init log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WarmUpReport {
    /// DynamoDB.
    pub dynamodb: Outcome,
    /// S3.
    pub s3: Outcome,
    /// Bedrock Runtime.
    pub bedrock: Outcome,
    /// Wall time of the whole warm-up.
    pub elapsed: Duration,
}

impl WarmUpReport {
    /// Logs the report: one line, warnings only if something did not connect.
    pub fn log(&self) {
        let failed = [&self.dynamodb, &self.s3, &self.bedrock]
            .iter()
            .any(|o| matches!(o, Outcome::Failed(_) | Outcome::TimedOut));
        let (d, s, b, ms) = (
            self.dynamodb.to_string(),
            self.s3.to_string(),
            self.bedrock.to_string(),
            self.elapsed.as_millis() as u64,
        );
        if failed {
            tracing::warn!(dynamodb = %d, s3 = %s, bedrock = %b, elapsed_ms = ms, "warm-up incomplete; the first turn will open its own connections");
        } else {
            tracing::info!(dynamodb = %d, s3 = %s, bedrock = %b, elapsed_ms = ms, "connections warmed");
        }
    }
}

async fn timed(
    timeout: Duration,
    request: impl std::future::Future<Output = Result<(), String>>,
) -> Outcome {
    let started = Instant::now();
    match tokio::time::timeout(timeout, request).await {
        Ok(Ok(())) => Outcome::Connected(started.elapsed()),
        Ok(Err(detail)) => Outcome::Failed(detail),
        Err(_) => Outcome::TimedOut,
    }
}

/// Rewrites a signed request into an unsigned `GET /` to the same host just before it is
/// sent: the connection is opened (and pooled) without invoking anything.
#[derive(Debug)]
struct ConnectionOnly;

impl Intercept for ConnectionOnly {
    fn name(&self) -> &'static str {
        "BatonConnectionOnlyWarmUp"
    }

    fn modify_before_transmit(
        &self,
        context: &mut BeforeTransmitInterceptorContextMut<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let request = context.request_mut();
        let root = {
            let uri = request.uri();
            // scheme://authority, without path or query.
            let after_scheme = uri.find("://").map(|i| i + 3).unwrap_or(0);
            let end = uri[after_scheme..]
                .find('/')
                .map(|i| after_scheme + i)
                .unwrap_or(uri.len());
            format!("{}/", &uri[..end])
        };
        request.set_uri(root.as_str())?;
        request.set_method("GET")?;
        let headers = request.headers_mut();
        let signed: Vec<String> = headers
            .iter()
            .map(|(name, _)| name.to_owned())
            .filter(|name| {
                let n = name.to_ascii_lowercase();
                n == "authorization"
                    || n.starts_with("x-amz-")
                    || n == "content-type"
                    || n == "content-length"
                    || n == "transfer-encoding"
            })
            .collect();
        for name in signed {
            headers.remove(name);
        }
        *request.body_mut() = aws_smithy_types::body::SdkBody::empty();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    use aws_config::Region;
    use aws_sdk_dynamodb::config::Credentials;
    use recording_server::{Seen, serve};

    /// A tiny HTTP/1.1 server on a raw socket: records each request's method, path and
    /// whether it was signed, answers 404 with an empty JSON body, keeps the connection.
    mod recording_server {
        use std::sync::{Arc, Mutex};

        use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
        use tokio::net::TcpListener;

        #[derive(Debug, Clone)]
        pub(super) struct Seen {
            pub(super) method: String,
            pub(super) path: String,
            pub(super) signed: bool,
            pub(super) connection: usize,
        }

        pub(super) async fn serve(seen: Arc<Mutex<Vec<Seen>>>) -> String {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            tokio::spawn(async move {
                let mut connection = 0;
                loop {
                    let Ok((socket, _)) = listener.accept().await else {
                        return;
                    };
                    connection += 1;
                    let seen = seen.clone();
                    tokio::spawn(async move {
                        let mut reader = BufReader::new(socket);
                        loop {
                            let mut line = String::new();
                            if reader.read_line(&mut line).await.unwrap_or(0) == 0 {
                                return;
                            }
                            let mut parts = line.split_whitespace();
                            let method = parts.next().unwrap_or_default().to_owned();
                            let path = parts.next().unwrap_or_default().to_owned();
                            let mut signed = false;
                            let mut length = 0usize;
                            loop {
                                let mut header = String::new();
                                reader.read_line(&mut header).await.unwrap();
                                let h = header.trim_end();
                                if h.is_empty() {
                                    break;
                                }
                                let lower = h.to_ascii_lowercase();
                                if lower.starts_with("authorization:") {
                                    signed = true;
                                }
                                if let Some(v) = lower.strip_prefix("content-length:") {
                                    length = v.trim().parse().unwrap_or(0);
                                }
                            }
                            let mut body = vec![0; length];
                            reader.read_exact(&mut body).await.unwrap();
                            seen.lock().unwrap().push(Seen {
                                method: method.clone(),
                                path,
                                signed,
                                connection,
                            });
                            let body = if method == "HEAD" { "" } else { "{}" };
                            let answer = format!(
                                "HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{body}"
                            );
                            if reader.get_mut().write_all(answer.as_bytes()).await.is_err() {
                                return;
                            }
                        }
                    });
                }
            });
            format!("http://{addr}")
        }
    }

    async fn clients(endpoint: &str) -> Clients {
        let config = aws_config::defaults(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("local", "local", None, None, "test"))
            .endpoint_url(endpoint)
            .retry_config(aws_config::retry::RetryConfig::disabled())
            .load()
            .await;
        Clients::new(&config)
    }

    #[tokio::test]
    async fn warm_up_reaches_each_service_once_and_never_invokes_a_model() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let endpoint = serve(seen.clone()).await;
        let clients = clients(&endpoint).await;
        let report = clients
            .warm_up(
                &WarmUpTargets {
                    table: Some("journal".into()),
                    bucket: Some("bodies".into()),
                    bedrock: true,
                },
                Duration::from_secs(5),
            )
            .await;
        for outcome in [&report.dynamodb, &report.s3, &report.bedrock] {
            assert!(outcome.connected(), "{report:?}");
        }
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 3, "{seen:?}");
        let bedrock: Vec<&Seen> = seen.iter().filter(|s| s.method == "GET").collect();
        assert_eq!(bedrock.len(), 1, "{seen:?}");
        assert_eq!(bedrock[0].path, "/");
        assert!(!bedrock[0].signed, "the Bedrock warm-up must not be signed");
        assert!(
            !seen.iter().any(|s| s.path.contains("converse")),
            "no model call may be sent: {seen:?}"
        );
        let head = seen.iter().find(|s| s.method == "HEAD").unwrap();
        assert_eq!(head.path, "/bodies/bodies/.warm-up");
        assert!(head.signed);
        let get_item = seen.iter().find(|s| s.method == "POST").unwrap();
        assert!(get_item.signed);
    }

    #[tokio::test]
    async fn the_first_request_after_the_warm_up_reuses_its_connection() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let endpoint = serve(seen.clone()).await;
        let clients = clients(&endpoint).await;
        let targets = WarmUpTargets {
            table: None,
            bucket: None,
            bedrock: true,
        };
        let report = clients.warm_up(&targets, Duration::from_secs(5)).await;
        assert!(report.bedrock.connected());
        assert_eq!(report.dynamodb, Outcome::Skipped);
        let _ = clients.bedrock.converse_stream().model_id("m").send().await;
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 2, "{seen:?}");
        assert_eq!(
            seen[0].connection, seen[1].connection,
            "the model call should ride the warmed connection: {seen:?}"
        );
        assert!(seen[1].path.ends_with("/converse-stream"));
    }

    #[tokio::test]
    async fn an_unreachable_endpoint_fails_the_warm_up_without_failing_init() {
        // Port 9 (discard) on localhost is closed on test machines: connect is refused.
        let clients = clients("http://127.0.0.1:9").await;
        let report = clients
            .warm_up(
                &WarmUpTargets {
                    table: Some("t".into()),
                    bucket: Some("b".into()),
                    bedrock: true,
                },
                Duration::from_secs(5),
            )
            .await;
        for outcome in [&report.dynamodb, &report.s3, &report.bedrock] {
            assert!(
                matches!(outcome, Outcome::Failed(_) | Outcome::TimedOut),
                "{report:?}"
            );
        }
    }
}
