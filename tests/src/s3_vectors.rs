//! An Amazon S3 Vectors fake: an in-process HTTP server on `127.0.0.1:0` speaking the
//! service's REST-JSON wire as `aws-sdk-s3vectors` sends it (`POST /PutVectors`,
//! `/QueryVectors`, `/GetVectors`, `/DeleteVectors`, `/ListVectors`, each with a JSON body
//! naming the index by `vectorBucketName` + `indexName` or `indexArn`), so the real client
//! and the store over it run unchanged.
//!
//! What it keeps of the service: cosine distance (`1 - cos`), exact (the service's is
//! approximate; exact is what a test can assert on); the metadata filter language
//! (`$eq`, `$ne`, `$gt`, `$gte`, `$lt`, `$lte`, `$in`, `$nin`, `$exists`, `$and`, `$or`,
//! a bare value meaning `$eq`, several keys meaning all of them), evaluated before the
//! top K is taken, as an index in ENHANCED mode does; its documented limits as
//! `ValidationException`s (400, `x-amzn-errortype`, `{"message", "fieldList"}`): top K
//! 1 to 100, 1 to 500 vectors a PutVectors and keys a DeleteVectors, 1 to 100 keys a
//! GetVectors, 1 to 1,000 a ListVectors page, keys of 1 to 1,024 characters, a vector's
//! length equal to the index's dimension, finite values, at most 50 metadata keys and 2 KB
//! of filterable metadata a vector; an unknown index is a `NotFoundException` (404).
//! Faults are scripted with [`FakeS3Vectors::fail_next`]; every request is logged by
//! operation.

// Test support: a broken fixture is a test failure with a plain message.
#![allow(clippy::panic, clippy::expect_used)]

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use aws_config::SdkConfig;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::post;
use serde_json::{Map, Value, json};

/// Top K per QueryVectors at most.
pub const MAX_TOP_K: u64 = 100;
/// Vectors per PutVectors (and keys per DeleteVectors) at most.
pub const MAX_WRITE_BATCH: usize = 500;
/// Keys per GetVectors at most.
pub const MAX_GET_BATCH: usize = 100;
/// Vectors per ListVectors page at most.
pub const MAX_LIST_PAGE: u64 = 1_000;
/// Metadata keys per vector at most.
pub const MAX_METADATA_KEYS: usize = 50;
/// Bytes of filterable metadata per vector at most.
pub const MAX_FILTERABLE_BYTES: usize = 2_048;
/// Characters of a vector key at most.
pub const MAX_KEY_CHARS: usize = 1_024;

/// One stored vector.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredVector {
    /// Its key.
    pub key: String,
    /// Its values.
    pub data: Vec<f32>,
    /// Its metadata (a JSON object).
    pub metadata: Value,
}

#[derive(Debug)]
struct Index {
    dimension: usize,
    non_filterable: Vec<String>,
    vectors: BTreeMap<String, StoredVector>,
}

/// A scripted failure: the next request gets it instead of an answer.
#[derive(Debug, Clone)]
struct Fault {
    status: u16,
    kind: String,
    message: String,
}

#[derive(Debug, Default)]
struct Shared {
    indexes: Mutex<HashMap<(String, String), Index>>,
    faults: Mutex<VecDeque<Fault>>,
    log: Mutex<Vec<String>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The fake server; it stops when dropped.
pub struct FakeS3Vectors {
    addr: SocketAddr,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

impl FakeS3Vectors {
    /// A fake with no index yet.
    ///
    /// # Errors
    /// The loopback port cannot be bound.
    pub async fn start() -> std::io::Result<Self> {
        let shared = Arc::new(Shared::default());
        let app = Router::new()
            .route("/{operation}", post(operation))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let server = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::error!(error = %e, "fake s3 vectors stopped");
            }
        });
        Ok(FakeS3Vectors {
            addr,
            shared,
            server,
        })
    }

    /// Creates an index of `dimension` (cosine distance) whose metadata keys
    /// `non_filterable` cannot be filtered on.
    pub fn create_index(
        &self,
        bucket: &str,
        index: &str,
        dimension: usize,
        non_filterable: &[&str],
    ) {
        lock(&self.shared.indexes).insert(
            (bucket.to_owned(), index.to_owned()),
            Index {
                dimension,
                non_filterable: non_filterable.iter().map(|k| (*k).to_owned()).collect(),
                vectors: BTreeMap::new(),
            },
        );
    }

    /// `http://127.0.0.1:<port>`.
    pub fn endpoint_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// SDK settings for this fake: dummy credentials, `us-east-1`, retries off, this fake
    /// as every service's endpoint (build other services' clients from another config).
    pub async fn sdk_config(&self) -> SdkConfig {
        crate::local_sdk::config(&self.endpoint_url(), "fake-s3vectors").await
    }

    /// A client config builder for this fake, to add interceptors before building.
    pub async fn config_builder(&self) -> aws_sdk_s3vectors::config::Builder {
        aws_sdk_s3vectors::config::Builder::from(&self.sdk_config().await)
    }

    /// Every vector of an index, by key.
    ///
    /// # Panics
    /// When there is no such index.
    pub fn vectors(&self, bucket: &str, index: &str) -> Vec<StoredVector> {
        lock(&self.shared.indexes)
            .get(&(bucket.to_owned(), index.to_owned()))
            .unwrap_or_else(|| panic!("no index {bucket}/{index}"))
            .vectors
            .values()
            .cloned()
            .collect()
    }

    /// Makes the next request fail with this status and error type (e.g. 429,
    /// `TooManyRequestsException`).
    pub fn fail_next(&self, status: u16, kind: &str, message: &str) {
        lock(&self.shared.faults).push_back(Fault {
            status,
            kind: kind.to_owned(),
            message: message.to_owned(),
        });
    }

    /// The operations received so far, in order (`PutVectors`, `QueryVectors` …).
    pub fn requests(&self) -> Vec<String> {
        lock(&self.shared.log).clone()
    }
}

impl Drop for FakeS3Vectors {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// An error answer as the service sends it.
fn error(status: u16, kind: &str, message: &str, fields: Vec<(&str, String)>) -> Response {
    let mut body = json!({ "message": message });
    if !fields.is_empty() {
        body["fieldList"] = Value::Array(
            fields
                .into_iter()
                .map(|(path, message)| json!({ "path": path, "message": message }))
                .collect(),
        );
    }
    Response::builder()
        .status(StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header("content-type", "application/json")
        .header("x-amzn-errortype", kind)
        .header("x-amzn-requestid", "fake-s3vectors")
        .body(Body::from(body.to_string()))
        .expect("an error response")
}

fn invalid(path: &str, message: &str) -> Response {
    error(
        400,
        "ValidationException",
        "Invalid request",
        vec![(path, message.to_owned())],
    )
}

fn ok(body: Value) -> Response {
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/json")
        .header("x-amzn-requestid", "fake-s3vectors")
        .body(Body::from(body.to_string()))
        .expect("a response")
}

async fn operation(
    State(shared): State<Arc<Shared>>,
    Path(operation): Path<String>,
    body: Bytes,
) -> Response {
    lock(&shared.log).push(operation.clone());
    if let Some(fault) = lock(&shared.faults).pop_front() {
        return error(fault.status, &fault.kind, &fault.message, Vec::new());
    }
    let Ok(Value::Object(request)) = serde_json::from_slice::<Value>(&body) else {
        return error(
            400,
            "ValidationException",
            "The request body is not a JSON object",
            Vec::new(),
        );
    };
    let Some(name) = index_name(&request) else {
        return invalid(
            "indexName",
            "Specify the index by its ARN, or its bucket and name",
        );
    };
    let mut indexes = lock(&shared.indexes);
    let Some(index) = indexes.get_mut(&name) else {
        return error(
            404,
            "NotFoundException",
            "The specified index could not be found",
            Vec::new(),
        );
    };
    match operation.as_str() {
        "PutVectors" => put_vectors(index, &request),
        "QueryVectors" => query_vectors(index, &request),
        "GetVectors" => get_vectors(index, &request),
        "DeleteVectors" => delete_vectors(index, &request),
        "ListVectors" => list_vectors(index, &request),
        other => error(
            400,
            "UnknownOperationException",
            &format!("fake s3 vectors: {other} is not served"),
            Vec::new(),
        ),
    }
}

/// (bucket, index) from `vectorBucketName` + `indexName`, or from `indexArn`
/// (`arn:aws:s3vectors:<region>:<account>:bucket/<bucket>/index/<index>`).
fn index_name(request: &Map<String, Value>) -> Option<(String, String)> {
    let text = |k: &str| request.get(k).and_then(Value::as_str).map(str::to_owned);
    if let Some(arn) = text("indexArn") {
        let resource = arn.splitn(6, ':').nth(5)?;
        let rest = resource.strip_prefix("bucket/")?;
        let (bucket, index) = rest.split_once("/index/")?;
        return Some((bucket.to_owned(), index.to_owned()));
    }
    Some((text("vectorBucketName")?, text("indexName")?))
}

/// A request's `float32` vector data, checked against the index.
fn vector_data(data: Option<&Value>, dimension: usize) -> Result<Vec<f32>, String> {
    let Some(values) = data
        .and_then(|d| d.get("float32"))
        .and_then(Value::as_array)
    else {
        return Err("Vector data must be float32".to_owned());
    };
    let vector: Vec<f32> = values
        .iter()
        .map(|v| v.as_f64().map(|x| x as f32))
        .collect::<Option<_>>()
        .ok_or_else(|| "Vector data must hold numbers".to_owned())?;
    if vector.len() != dimension {
        return Err(format!(
            "Invalid vector dimension {}: the index has dimension {dimension}",
            vector.len()
        ));
    }
    if !vector.iter().all(|x| x.is_finite()) {
        return Err("Vector data must not hold NaN or infinity".to_owned());
    }
    Ok(vector)
}

fn count_between(request: &Map<String, Value>, key: &str, max: usize) -> Result<usize, String> {
    let n = request
        .get(key)
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    if n == 0 || n > max {
        return Err(format!("Member must have length between 1 and {max}"));
    }
    Ok(n)
}

fn put_vectors(index: &mut Index, request: &Map<String, Value>) -> Response {
    if let Err(e) = count_between(request, "vectors", MAX_WRITE_BATCH) {
        return invalid("vectors", &e);
    }
    let mut checked = Vec::new();
    for (i, v) in request["vectors"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let path = format!("vectors[{i}]");
        let key = v.get("key").and_then(Value::as_str).unwrap_or_default();
        if key.is_empty() || key.chars().count() > MAX_KEY_CHARS {
            return invalid(&path, "Key must have length between 1 and 1024");
        }
        let data = match vector_data(v.get("data"), index.dimension) {
            Ok(data) => data,
            Err(e) => return invalid(&path, &e),
        };
        let metadata = v.get("metadata").cloned().unwrap_or_else(|| json!({}));
        let Some(fields) = metadata.as_object() else {
            return invalid(&path, "Metadata must be a JSON object");
        };
        if fields.len() > MAX_METADATA_KEYS {
            return invalid(&path, "Metadata must have at most 50 keys");
        }
        let filterable: Map<String, Value> = fields
            .iter()
            .filter(|(k, _)| !index.non_filterable.contains(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if Value::Object(filterable).to_string().len() > MAX_FILTERABLE_BYTES {
            return invalid(&path, "Filterable metadata must have at most 2048 bytes");
        }
        checked.push(StoredVector {
            key: key.to_owned(),
            data,
            metadata,
        });
    }
    for v in checked {
        index.vectors.insert(v.key.clone(), v);
    }
    ok(json!({}))
}

fn cosine_distance(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    if na == 0.0 || nb == 0.0 {
        return 1.0;
    }
    1.0 - dot / (na * nb)
}

fn query_vectors(index: &Index, request: &Map<String, Value>) -> Response {
    let top_k = request.get("topK").and_then(Value::as_u64).unwrap_or(0);
    if top_k == 0 || top_k > MAX_TOP_K {
        return invalid("topK", "Member must be between 1 and 100");
    }
    let query = match vector_data(request.get("queryVector"), index.dimension) {
        Ok(q) => q,
        Err(e) => return invalid("queryVector", &e),
    };
    let filter = request.get("filter");
    if let Some(filter) = filter
        && let Err(message) = check_filter(filter, &index.non_filterable)
    {
        return invalid("filter", &message);
    }
    let flag = |k: &str| request.get(k).and_then(Value::as_bool).unwrap_or(false);
    let (with_distance, with_metadata) = (flag("returnDistance"), flag("returnMetadata"));
    let mut hits: Vec<(f32, &StoredVector)> = index
        .vectors
        .values()
        .filter(|v| filter.is_none_or(|f| matches(f, &v.metadata)))
        .map(|v| (cosine_distance(&query, &v.data), v))
        .collect();
    hits.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.key.cmp(&b.1.key)));
    hits.truncate(usize::try_from(top_k).unwrap_or(usize::MAX));
    let vectors: Vec<Value> = hits
        .into_iter()
        .map(|(distance, v)| {
            let mut out = json!({ "key": v.key });
            if with_distance {
                out["distance"] = json!(distance);
            }
            if with_metadata {
                out["metadata"] = v.metadata.clone();
            }
            out
        })
        .collect();
    ok(json!({ "vectors": vectors, "distanceMetric": "cosine" }))
}

fn stored_json(v: &StoredVector, data: bool, metadata: bool) -> Value {
    let mut out = json!({ "key": v.key });
    if data {
        out["data"] = json!({ "float32": v.data });
    }
    if metadata {
        out["metadata"] = v.metadata.clone();
    }
    out
}

fn get_vectors(index: &Index, request: &Map<String, Value>) -> Response {
    if let Err(e) = count_between(request, "keys", MAX_GET_BATCH) {
        return invalid("keys", &e);
    }
    let flag = |k: &str| request.get(k).and_then(Value::as_bool).unwrap_or(false);
    let vectors: Vec<Value> = request["keys"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter_map(|k| index.vectors.get(k))
        .map(|v| stored_json(v, flag("returnData"), flag("returnMetadata")))
        .collect();
    ok(json!({ "vectors": vectors }))
}

fn delete_vectors(index: &mut Index, request: &Map<String, Value>) -> Response {
    if let Err(e) = count_between(request, "keys", MAX_WRITE_BATCH) {
        return invalid("keys", &e);
    }
    for key in request["keys"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        index.vectors.remove(key);
    }
    ok(json!({}))
}

fn list_vectors(index: &Index, request: &Map<String, Value>) -> Response {
    let page = request
        .get("maxResults")
        .and_then(Value::as_u64)
        .unwrap_or(500);
    if page == 0 || page > MAX_LIST_PAGE {
        return invalid("maxResults", "Member must be between 1 and 1000");
    }
    let after = request.get("nextToken").and_then(Value::as_str);
    let flag = |k: &str| request.get(k).and_then(Value::as_bool).unwrap_or(false);
    let mut listed: Vec<&StoredVector> = index
        .vectors
        .values()
        .filter(|v| after.is_none_or(|a| v.key.as_str() > a))
        .take(usize::try_from(page).unwrap_or(usize::MAX) + 1)
        .collect();
    let more = listed.len() > usize::try_from(page).unwrap_or(usize::MAX);
    listed.truncate(usize::try_from(page).unwrap_or(usize::MAX));
    let mut out = json!({
        "vectors": listed
            .iter()
            .map(|v| stored_json(v, flag("returnData"), flag("returnMetadata")))
            .collect::<Vec<_>>()
    });
    if more && let Some(last) = listed.last() {
        // The service's tokens are opaque; the last key listed serves here.
        out["nextToken"] = json!(last.key);
    }
    ok(out)
}

const OPERATORS: &[&str] = &[
    "$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists",
];

/// Checks a filter's shape: logical operators over arrays of filters, comparisons on
/// filterable keys.
fn check_filter(filter: &Value, non_filterable: &[String]) -> Result<(), String> {
    let Some(fields) = filter.as_object() else {
        return Err("A filter must be a JSON object".into());
    };
    if fields.is_empty() {
        return Err("A filter must not be empty".into());
    }
    for (key, value) in fields {
        match key.as_str() {
            "$and" | "$or" => {
                let Some(parts) = value.as_array().filter(|p| !p.is_empty()) else {
                    return Err(format!("{key} takes a non-empty array of filters"));
                };
                for part in parts {
                    check_filter(part, non_filterable)?;
                }
            }
            k if k.starts_with('$') => return Err(format!("Unsupported operator {k}")),
            k if non_filterable.iter().any(|n| n == k) => {
                return Err(format!("{k} is non-filterable metadata"));
            }
            _ => {
                if let Some(ops) = value.as_object() {
                    for (op, operand) in ops {
                        if !OPERATORS.contains(&op.as_str()) {
                            return Err(format!("Unsupported operator {op}"));
                        }
                        let list = matches!(op.as_str(), "$in" | "$nin");
                        if list != operand.is_array() {
                            return Err(format!("Invalid operand for {op}"));
                        }
                        if op == "$exists" && !operand.is_boolean() {
                            return Err("$exists takes true or false".into());
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// Whether a vector's metadata passes a (checked) filter.
fn matches(filter: &Value, metadata: &Value) -> bool {
    let Some(fields) = filter.as_object() else {
        return false;
    };
    fields.iter().all(|(key, value)| match key.as_str() {
        "$and" => value
            .as_array()
            .is_some_and(|parts| parts.iter().all(|p| matches(p, metadata))),
        "$or" => value
            .as_array()
            .is_some_and(|parts| parts.iter().any(|p| matches(p, metadata))),
        field => {
            let stored = metadata.get(field);
            match value.as_object() {
                Some(ops) => ops.iter().all(|(op, operand)| compare(op, operand, stored)),
                None => compare("$eq", value, stored),
            }
        }
    })
}

fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// One comparison; a list in the metadata matches when one of its elements does.
fn compare(op: &str, operand: &Value, stored: Option<&Value>) -> bool {
    let values: Vec<&Value> = match stored {
        None => Vec::new(),
        Some(Value::Array(items)) => items.iter().collect(),
        Some(v) => vec![v],
    };
    let any = |test: &dyn Fn(&Value) -> bool| values.iter().any(|v| test(v));
    let order = |v: &Value| {
        v.as_f64()
            .zip(operand.as_f64())
            .map(|(x, y)| x.total_cmp(&y))
    };
    match op {
        "$eq" => any(&|v| same(v, operand)),
        "$ne" => !any(&|v| same(v, operand)),
        "$gt" => any(&|v| order(v).is_some_and(std::cmp::Ordering::is_gt)),
        "$gte" => any(&|v| order(v).is_some_and(std::cmp::Ordering::is_ge)),
        "$lt" => any(&|v| order(v).is_some_and(std::cmp::Ordering::is_lt)),
        "$lte" => any(&|v| order(v).is_some_and(std::cmp::Ordering::is_le)),
        "$in" => operand
            .as_array()
            .is_some_and(|list| any(&|v| list.iter().any(|o| same(v, o)))),
        "$nin" => operand
            .as_array()
            .is_some_and(|list| !any(&|v| list.iter().any(|o| same(v, o)))),
        "$exists" => operand.as_bool() == Some(stored.is_some()),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_language_evaluates_as_the_service_documents() {
        let meta = json!({"genre": "mystery", "year": 2020, "tags": ["a", "b"], "on": true});
        let yes = [
            json!({"genre": "mystery"}),
            json!({"genre": {"$eq": "mystery"}, "year": {"$gte": 2020}}),
            json!({"$and": [{"year": {"$lt": 2021}}, {"on": {"$eq": true}}]}),
            json!({"$or": [{"genre": "drama"}, {"tags": {"$in": ["b"]}}]}),
            json!({"genre": {"$ne": "drama"}, "missing": {"$exists": false}}),
            json!({"year": {"$nin": [1999]}}),
        ];
        for f in yes {
            assert!(check_filter(&f, &[]).is_ok(), "{f}");
            assert!(matches(&f, &meta), "{f}");
        }
        let no = [
            json!({"genre": "drama"}),
            json!({"year": {"$gt": 2020}}),
            json!({"$or": [{"genre": "drama"}, {"year": 1}]}),
            json!({"missing": {"$eq": 1}}),
        ];
        for f in no {
            assert!(!matches(&f, &meta), "{f}");
        }
        assert!(check_filter(&json!({"$not": {}}), &[]).is_err());
        assert!(check_filter(&json!({"a": {"$in": 1}}), &[]).is_err());
        assert!(check_filter(&json!({"text": "x"}), &["text".to_owned()]).is_err());
    }

    #[test]
    fn an_arn_names_its_bucket_and_index() {
        let request =
            json!({"indexArn": "arn:aws:s3vectors:us-east-1:123456789012:bucket/b/index/i"});
        assert_eq!(
            index_name(request.as_object().unwrap()),
            Some(("b".to_owned(), "i".to_owned()))
        );
    }
}
