//! A proxy in front of DynamoDB Local that does two things DynamoDB does and the emulator
//! does not: it reports the capacity each request consumes, and it throttles.
//!
//! - **Capacity.** Every request that can ask for it is sent on with
//!   `ReturnConsumedCapacity: INDEXES`; the emulator's answer says how many read or write
//!   units the request used (as DynamoDB bills an on-demand table: one write unit per KB
//!   written, one read unit per 4 KB read strongly, transactions twice), and how many of
//!   them went to global secondary indexes. The units are kept per attempt.
//! - **Throttling.** A [`Throttle`] plan answers chosen attempts with DynamoDB's own
//!   `ProvisionedThroughputExceededException` (HTTP 400), what a hot partition returns, so
//!   that the SDK's retries and the journal's handling of them meet the real error.
//!
//! Every attempt is logged with its operation, the SDK's attempt number (from the
//! `amz-sdk-request` header) and whether it was throttled. The body is changed after the
//! SDK signed it; DynamoDB Local does not check signatures.

// Test support: a broken fixture is a test failure with a plain message.
#![allow(clippy::expect_used)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

/// Operations that take `ReturnConsumedCapacity`.
const MEASURED: &[&str] = &[
    "GetItem",
    "PutItem",
    "UpdateItem",
    "DeleteItem",
    "Query",
    "Scan",
    "BatchGetItem",
    "BatchWriteItem",
    "TransactGetItems",
    "TransactWriteItems",
];

/// Which attempts the proxy throttles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Throttle {
    /// None.
    Never,
    /// Every attempt whose SDK attempt number is at most this (1 = each call's first).
    FirstAttempts(u32),
    /// Every attempt.
    Always,
    /// Each attempt with this chance in a thousand, decided from `seed` and the attempt's
    /// place in the log, so that a seed replays.
    Random {
        /// Chance in a thousand.
        per_mille: u64,
        /// The seed.
        seed: u64,
    },
}

/// One request that reached the proxy.
#[derive(Debug, Clone, PartialEq)]
pub struct Attempt {
    /// The operation, e.g. `TransactWriteItems`.
    pub operation: String,
    /// The SDK's attempt number of this call (1 for the first; 0 when not sent).
    pub attempt: u32,
    /// Whether the proxy answered with a throttling error.
    pub throttled: bool,
    /// Capacity units the emulator reported, table and indexes (0 when throttled or not
    /// reported).
    pub units: f64,
    /// Of those, the units written to or read from global secondary indexes.
    pub index_units: f64,
}

impl Attempt {
    /// Whether the operation writes (its units are write units).
    pub fn writes(&self) -> bool {
        matches!(
            self.operation.as_str(),
            "PutItem" | "UpdateItem" | "DeleteItem" | "BatchWriteItem" | "TransactWriteItems"
        )
    }
}

struct Shared {
    upstream: String,
    client: reqwest::Client,
    throttle: Mutex<Throttle>,
    log: Mutex<Vec<Attempt>>,
    seen: AtomicU64,
}

/// The proxy; it stops when dropped.
pub struct DynamoProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for DynamoProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DynamoProxy")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Drop for DynamoProxy {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl DynamoProxy {
    /// A proxy on a loopback port in front of `upstream` (DynamoDB Local's endpoint).
    ///
    /// # Panics
    /// When no loopback port can be bound.
    pub async fn start(upstream: &str) -> DynamoProxy {
        // reqwest has no crypto provider of its own in this workspace.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let shared = Arc::new(Shared {
            upstream: upstream.trim_end_matches('/').to_owned(),
            client: reqwest::Client::new(),
            throttle: Mutex::new(Throttle::Never),
            log: Mutex::new(Vec::new()),
            seen: AtomicU64::new(0),
        });
        let app = axum::Router::new()
            .fallback(forward)
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port for the DynamoDB proxy");
        let addr = listener.local_addr().expect("the DynamoDB proxy's address");
        let server = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::error!(error = %e, "the DynamoDB proxy stopped");
            }
        });
        DynamoProxy {
            addr,
            shared,
            server,
        }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn endpoint_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Throttles from now on as `plan` says.
    pub fn throttle(&self, plan: Throttle) {
        *self
            .shared
            .throttle
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = plan;
    }

    /// Every attempt so far, in order.
    pub fn attempts(&self) -> Vec<Attempt> {
        self.shared
            .log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The attempts after the first `from` (a length of [`DynamoProxy::attempts`]).
    pub fn attempts_since(&self, from: usize) -> Vec<Attempt> {
        self.attempts().into_iter().skip(from).collect()
    }
}

async fn forward(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let operation = headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .and_then(|t| t.rsplit('.').next())
        .unwrap_or("")
        .to_owned();
    let attempt = headers
        .get("amz-sdk-request")
        .and_then(|v| v.to_str().ok())
        .and_then(sdk_attempt)
        .unwrap_or(0);
    let place = shared.seen.fetch_add(1, Ordering::Relaxed);
    let plan = *shared
        .throttle
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let throttled = match plan {
        Throttle::Never => false,
        Throttle::Always => true,
        Throttle::FirstAttempts(n) => attempt <= n,
        Throttle::Random { per_mille, seed } => mix(seed ^ place) % 1000 < per_mille,
    };
    let record = |(units, index_units): (f64, f64)| {
        shared
            .log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Attempt {
                operation: operation.clone(),
                attempt,
                throttled,
                units,
                index_units,
            });
    };
    if throttled {
        record((0.0, 0.0));
        let body = serde_json::json!({
            "__type": "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
            "message": "The level of configured provisioned throughput for the table was exceeded.",
        });
        return (
            StatusCode::BAD_REQUEST,
            [(header::CONTENT_TYPE, "application/x-amz-json-1.0")],
            body.to_string(),
        )
            .into_response();
    }

    let body = if MEASURED.contains(&operation.as_str()) {
        with_capacity_asked(&body)
    } else {
        body.to_vec()
    };
    let mut request = shared.client.post(format!("{}/", shared.upstream));
    for (name, value) in &headers {
        if name != header::HOST && name != header::CONTENT_LENGTH {
            request = request.header(name, value);
        }
    }
    let answer = match request.body(body).send().await {
        Ok(answer) => answer,
        Err(e) => {
            record((0.0, 0.0));
            return (StatusCode::BAD_GATEWAY, e.to_string()).into_response();
        }
    };
    let status = answer.status();
    let content_type = answer.headers().get(header::CONTENT_TYPE).cloned();
    let crc = answer.headers().get("x-amz-crc32").cloned();
    let bytes = answer.bytes().await.unwrap_or_default();
    record(consumed_units(&bytes));
    let mut response = (status, bytes).into_response();
    if let Some(v) = content_type {
        response.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    if let Some(v) = crc {
        response.headers_mut().insert("x-amz-crc32", v);
    }
    response
}

/// The attempt number of an `amz-sdk-request: attempt=2; max=3` header.
fn sdk_attempt(value: &str) -> Option<u32> {
    value
        .split(';')
        .find_map(|part| part.trim().strip_prefix("attempt="))
        .and_then(|n| n.parse().ok())
}

/// The request's JSON with `ReturnConsumedCapacity: INDEXES` (unchanged if not an object).
fn with_capacity_asked(body: &[u8]) -> Vec<u8> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(mut map)) => {
            map.insert("ReturnConsumedCapacity".into(), "INDEXES".into());
            serde_json::to_vec(&Value::Object(map)).unwrap_or_else(|_| body.to_vec())
        }
        _ => body.to_vec(),
    }
}

/// The capacity units an answer reports (`ConsumedCapacity` as one object or a list):
/// in all, and of those on global secondary indexes.
fn consumed_units(body: &[u8]) -> (f64, f64) {
    let Ok(answer) = serde_json::from_slice::<Value>(body) else {
        return (0.0, 0.0);
    };
    let units = |c: &Value| {
        c.get("CapacityUnits")
            .and_then(Value::as_f64)
            .unwrap_or(0.0)
    };
    let on_indexes = |c: &Value| {
        c.get("GlobalSecondaryIndexes")
            .and_then(Value::as_object)
            .map_or(0.0, |indexes| indexes.values().map(units).sum())
    };
    match answer.get("ConsumedCapacity") {
        Some(Value::Array(list)) => (
            list.iter().map(units).sum(),
            list.iter().map(on_indexes).sum(),
        ),
        Some(one) => (units(one), on_indexes(one)),
        None => (0.0, 0.0),
    }
}

/// SplitMix64's finaliser: a well-spread number from a seed and a position.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_sdk_attempt_header() {
        assert_eq!(sdk_attempt("attempt=2; max=4"), Some(2));
        assert_eq!(sdk_attempt("max=4"), None);
    }

    #[test]
    fn sums_capacity_of_one_table_or_many() {
        assert_eq!(
            consumed_units(br#"{"ConsumedCapacity":{"TableName":"t","CapacityUnits":1.5}}"#),
            (1.5, 0.0)
        );
        assert_eq!(
            consumed_units(
                br#"{"ConsumedCapacity":[{"CapacityUnits":2.0},
                    {"CapacityUnits":4.0,"GlobalSecondaryIndexes":{"i":{"CapacityUnits":1.0}}}]}"#
            ),
            (6.0, 1.0)
        );
        assert_eq!(consumed_units(b"{}"), (0.0, 0.0));
    }
}
