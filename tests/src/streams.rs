//! The real stream of a DynamoDB Local table, read with `aws-sdk-dynamodbstreams` and
//! turned into the event Lambda would deliver to a stream consumer.
//!
//! `DescribeTable` gives the table's latest stream ARN, `DescribeStream` its shards, and
//! each shard is read from `TRIM_HORIZON` with `GetRecords` until it has nothing more.
//! The records are then rendered as Lambda's JSON (`Records[]` with `eventID`,
//! `eventName`, `dynamodb{Keys, NewImage, OldImage, SequenceNumber, ...}`,
//! `eventSourceARN`) and parsed as [`aws_lambda_events::event::dynamodb::Event`], so a
//! handler under test sees exactly the shape it gets in production.
//!
//! ```no_run
//! # async fn demo(ddb: aws_sdk_dynamodb::Client, streams: aws_sdk_dynamodbstreams::Client)
//! # -> Result<(), baton_tests::streams::StreamError> {
//! let event = baton_tests::streams::table_event(&ddb, &streams, "journal-1").await?;
//! for record in &event.records {
//!     println!("{} {:?}", record.event_name, record.change.sequence_number);
//! }
//! # Ok(()) }
//! ```
//!
//! "Nothing more" means one `GetRecords` answered with no records. DynamoDB Local appends
//! to the stream as part of each write, so after the writes have returned, the stream is
//! complete; real DynamoDB may answer empty in the middle of an open shard, so this reader
//! is for emulator tests only.

use std::collections::{HashMap, HashSet};

use aws_lambda_events::event::dynamodb::Event;
use aws_sdk_dynamodbstreams::error::DisplayErrorContext;
use aws_sdk_dynamodbstreams::types::{AttributeValue, Record, Shard, ShardIteratorType};
use serde_json::{Map, Value, json};

/// Records asked for per `GetRecords` call (the API's maximum).
const PAGE: i32 = 1_000;

/// Why the stream could not be read.
#[derive(Debug)]
pub struct StreamError {
    doing: String,
    detail: String,
}

impl StreamError {
    fn new(doing: impl Into<String>, detail: impl std::fmt::Display) -> Self {
        StreamError {
            doing: doing.into(),
            detail: detail.to_string(),
        }
    }
}

impl std::fmt::Display for StreamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.doing, self.detail)
    }
}

impl std::error::Error for StreamError {}

/// The ARN of `table`'s current stream.
///
/// # Errors
///
/// When the table cannot be described or has no stream.
pub async fn stream_arn(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
) -> Result<String, StreamError> {
    let doing = || format!("describing table {table}");
    let output = ddb
        .describe_table()
        .table_name(table)
        .send()
        .await
        .map_err(|e| StreamError::new(doing(), DisplayErrorContext(&e)))?;
    output
        .table()
        .and_then(|t| t.latest_stream_arn())
        .map(str::to_owned)
        .ok_or_else(|| StreamError::new(doing(), "the table has no stream"))
}

/// Every record in the stream, shard by shard (parents before children), each shard
/// in its own order: the order Lambda delivers them in.
///
/// # Errors
///
/// When a stream call fails.
pub async fn read_records(
    streams: &aws_sdk_dynamodbstreams::Client,
    stream_arn: &str,
) -> Result<Vec<Record>, StreamError> {
    let mut records = Vec::new();
    for shard in shards_in_lineage_order(streams, stream_arn).await? {
        let Some(shard_id) = shard.shard_id() else {
            continue;
        };
        let doing = || format!("reading shard {shard_id} of {stream_arn}");
        let mut iterator = streams
            .get_shard_iterator()
            .stream_arn(stream_arn)
            .shard_id(shard_id)
            .shard_iterator_type(ShardIteratorType::TrimHorizon)
            .send()
            .await
            .map_err(|e| StreamError::new(doing(), DisplayErrorContext(&e)))?
            .shard_iterator()
            .map(str::to_owned);
        while let Some(current) = iterator {
            let page = streams
                .get_records()
                .shard_iterator(current)
                .limit(PAGE)
                .send()
                .await
                .map_err(|e| StreamError::new(doing(), DisplayErrorContext(&e)))?;
            if page.records().is_empty() {
                break;
            }
            records.extend(page.records().iter().cloned());
            iterator = page.next_shard_iterator().map(str::to_owned);
        }
    }
    Ok(records)
}

/// Every record of `table`'s stream as one Lambda batch.
///
/// # Errors
///
/// As [`stream_arn`] and [`read_records`].
pub async fn table_event(
    ddb: &aws_sdk_dynamodb::Client,
    streams: &aws_sdk_dynamodbstreams::Client,
    table: &str,
) -> Result<Event, StreamError> {
    let arn = stream_arn(ddb, table).await?;
    let records = read_records(streams, &arn).await?;
    lambda_event(&records, &arn)
}

/// The Lambda event for `records` of the stream `stream_arn`.
///
/// # Errors
///
/// When the rendered JSON is not a Lambda DynamoDB event (a record the conversion does
/// not cover).
pub fn lambda_event(records: &[Record], stream_arn: &str) -> Result<Event, StreamError> {
    let json = json!({
        "Records": records
            .iter()
            .map(|r| lambda_record_json(r, stream_arn))
            .collect::<Vec<_>>()
    });
    serde_json::from_value(json)
        .map_err(|e| StreamError::new("reading the stream records as a Lambda event", e))
}

/// One stream record as Lambda's JSON renders it.
pub fn lambda_record_json(record: &Record, stream_arn: &str) -> Value {
    let mut change = Map::new();
    if let Some(stream) = record.dynamodb() {
        if let Some(at) = stream.approximate_creation_date_time() {
            // Lambda writes whole seconds as a number.
            change.insert("ApproximateCreationDateTime".into(), json!(at.secs()));
        }
        for (name, image) in [
            ("Keys", stream.keys()),
            ("NewImage", stream.new_image()),
            ("OldImage", stream.old_image()),
        ] {
            if let Some(image) = image {
                change.insert(name.into(), item_json(image));
            }
        }
        if let Some(seq) = stream.sequence_number() {
            change.insert("SequenceNumber".into(), json!(seq));
        }
        change.insert("SizeBytes".into(), json!(stream.size_bytes().unwrap_or(0)));
        if let Some(view) = stream.stream_view_type() {
            change.insert("StreamViewType".into(), json!(view.as_str()));
        }
    }
    let mut out = Map::new();
    out.insert(
        "eventID".into(),
        json!(record.event_id().unwrap_or_default()),
    );
    out.insert(
        "eventName".into(),
        json!(record.event_name().map(|n| n.as_str()).unwrap_or_default()),
    );
    out.insert(
        "eventVersion".into(),
        json!(record.event_version().unwrap_or("1.1")),
    );
    out.insert(
        "eventSource".into(),
        json!(record.event_source().unwrap_or("aws:dynamodb")),
    );
    out.insert(
        "awsRegion".into(),
        json!(record.aws_region().unwrap_or("us-east-1")),
    );
    out.insert("dynamodb".into(), Value::Object(change));
    out.insert("eventSourceARN".into(), json!(stream_arn));
    if let Some(identity) = record.user_identity() {
        out.insert(
            "userIdentity".into(),
            json!({
                "type": identity.r#type().unwrap_or_default(),
                "principalId": identity.principal_id().unwrap_or_default(),
            }),
        );
    }
    Value::Object(out)
}

/// An item in DynamoDB's JSON (`{"pk": {"S": "..."}}`).
pub fn item_json(item: &HashMap<String, AttributeValue>) -> Value {
    Value::Object(
        item.iter()
            .map(|(name, value)| (name.clone(), attribute_json(value)))
            .collect(),
    )
}

fn attribute_json(value: &AttributeValue) -> Value {
    let b64 = |b: &aws_sdk_dynamodbstreams::primitives::Blob| {
        json!(aws_smithy_types::base64::encode(b.as_ref()))
    };
    match value {
        AttributeValue::S(s) => json!({ "S": s }),
        AttributeValue::N(n) => json!({ "N": n }),
        AttributeValue::B(b) => json!({ "B": b64(b) }),
        AttributeValue::Bool(b) => json!({ "BOOL": b }),
        AttributeValue::Null(n) => json!({ "NULL": n }),
        AttributeValue::Ss(v) => json!({ "SS": v }),
        AttributeValue::Ns(v) => json!({ "NS": v }),
        AttributeValue::Bs(v) => json!({ "BS": v.iter().map(b64).collect::<Vec<_>>() }),
        AttributeValue::L(v) => json!({ "L": v.iter().map(attribute_json).collect::<Vec<_>>() }),
        AttributeValue::M(m) => json!({ "M": item_json(m) }),
        // A type newer than this SDK: NULL keeps the record readable and visibly odd.
        _ => json!({ "NULL": true }),
    }
}

/// The stream's shards with every parent before its children (a shard splits when it
/// fills; its records precede its children's).
async fn shards_in_lineage_order(
    streams: &aws_sdk_dynamodbstreams::Client,
    stream_arn: &str,
) -> Result<Vec<Shard>, StreamError> {
    let mut shards = Vec::new();
    let mut start: Option<String> = None;
    loop {
        let output = streams
            .describe_stream()
            .stream_arn(stream_arn)
            .set_exclusive_start_shard_id(start.take())
            .send()
            .await
            .map_err(|e| {
                StreamError::new(
                    format!("describing stream {stream_arn}"),
                    DisplayErrorContext(&e),
                )
            })?;
        let Some(description) = output.stream_description() else {
            break;
        };
        shards.extend(description.shards().iter().cloned());
        match description.last_evaluated_shard_id() {
            Some(last) => start = Some(last.to_owned()),
            None => break,
        }
    }
    let ids: HashSet<String> = shards
        .iter()
        .filter_map(|s| s.shard_id().map(str::to_owned))
        .collect();
    let mut placed: HashSet<String> = HashSet::new();
    let mut ordered = Vec::with_capacity(shards.len());
    // A shard goes once its parent is placed (or its parent is gone from the stream).
    while ordered.len() < shards.len() {
        let before = ordered.len();
        for shard in &shards {
            let id = shard.shard_id().unwrap_or_default();
            if placed.contains(id) {
                continue;
            }
            let ready = match shard.parent_shard_id() {
                Some(parent) => !ids.contains(parent) || placed.contains(parent),
                None => true,
            };
            if ready {
                placed.insert(id.to_owned());
                ordered.push(shard.clone());
            }
        }
        if ordered.len() == before {
            // A cycle cannot happen in DynamoDB; keep whatever is left rather than loop.
            ordered.extend(
                shards
                    .iter()
                    .filter(|s| !placed.contains(s.shard_id().unwrap_or_default()))
                    .cloned(),
            );
            break;
        }
    }
    Ok(ordered)
}

/// The sequence numbers of `event`'s records, in order.
pub fn sequence_numbers(event: &Event) -> Vec<String> {
    event
        .records
        .iter()
        .filter_map(|r| r.change.sequence_number.clone())
        .collect()
}
