//! The batch handler: classifies each stream record, projects it, and reports the records
//! that failed so that Lambda retries them (and only from them on).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_lambda_events::event::dynamodb::{Event, EventRecord};
use aws_lambda_events::event::streams::{DynamoDbBatchItemFailure, DynamoDbEventResponse};
use aws_sdk_dynamodb::error::DisplayErrorContext;
use futures::StreamExt;
use lambda_runtime::LambdaEvent;
use serde_dynamo::AttributeValue;

use crate::aggregate::{apply_turn, record_last_seq};
use crate::archive::archive_body;
use crate::audit::write_audit;
use crate::change::{Change, TurnChange, classify};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::remember::{EXTRACTIONS_IN_FLIGHT, Remember};

/// Episodes projected at the same time within one batch. Records of one episode stay in
/// stream order (a body written twice must end as its last version); across episodes
/// every projection commutes.
const EPISODES_IN_FLIGHT: usize = 8;

/// The DynamoDB Streams consumer of the journal (D-27).
#[derive(Clone)]
pub struct HistoryWriter {
    ddb: aws_sdk_dynamodb::Client,
    s3: aws_sdk_s3::Client,
    config: Config,
    /// Extraction into long-term memory, when the deployment keeps it (D-43).
    memory: Option<Arc<dyn Remember>>,
}

impl std::fmt::Debug for HistoryWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HistoryWriter")
            .field("config", &self.config)
            .field("memory", &self.memory.is_some())
            .finish_non_exhaustive()
    }
}

/// What one batch did, for its log line (and tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BatchSummary {
    /// Records in the batch.
    pub records: usize,
    /// TURN records folded into the aggregates for the first time.
    pub turns: usize,
    /// TURN records an earlier delivery had already folded in.
    pub turns_already_applied: usize,
    /// Audit items written.
    pub audit_items: usize,
    /// Bodies archived.
    pub bodies: usize,
    /// Records with nothing to project.
    pub ignored: usize,
    /// Records reported for retry.
    pub failed: usize,
    /// Turns long-term memory's extraction went through (before the deadline).
    pub remembered: usize,
}

/// One record's result, with where it was in the batch.
struct Projected {
    position: usize,
    sequence_number: Option<String>,
    result: Result<Outcome>,
}

/// What projecting one record did.
enum Outcome {
    Turn {
        newly: bool,
        audit_items: usize,
        /// The turn, when it is new and memory is kept: extracted after the batch.
        remember: Option<Box<TurnChange>>,
    },
    Body,
    Ignored(&'static str),
}

impl HistoryWriter {
    /// A writer over the journal table and bucket named in `config`.
    pub fn new(ddb: aws_sdk_dynamodb::Client, s3: aws_sdk_s3::Client, config: Config) -> Self {
        HistoryWriter {
            ddb,
            s3,
            config,
            memory: None,
        }
    }

    /// Hands every turn it folds in for the first time to `memory` (D-43).
    pub fn with_memory(mut self, memory: Arc<dyn Remember>) -> Self {
        self.memory = Some(memory);
        self
    }

    /// The settings it runs with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Lambda's entry point: [`HistoryWriter::process`] on the invocation's payload.
    ///
    /// # Errors
    ///
    /// As [`HistoryWriter::process`].
    pub async fn handle(&self, event: LambdaEvent<Event>) -> Result<DynamoDbEventResponse> {
        // Extraction stops this long before the invocation's deadline, so that the batch's
        // answer is always sent.
        const RESERVE: Duration = Duration::from_secs(10);
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let left = Duration::from_millis(event.context.deadline.saturating_sub(now_ms));
        let until = tokio::time::Instant::now() + left.saturating_sub(RESERVE);
        let (response, _) = self.process_until(event.payload, Some(until)).await?;
        Ok(response)
    }

    /// [`HistoryWriter::process`] with no deadline for extraction.
    ///
    /// # Errors
    ///
    /// As [`HistoryWriter::process_until`].
    pub async fn process(&self, event: Event) -> Result<(DynamoDbEventResponse, BatchSummary)> {
        self.process_until(event, None).await
    }

    /// Projects a batch of stream records; the response lists the sequence numbers of the
    /// records that failed (Lambda's `ReportBatchItemFailures`).
    ///
    /// Every record is attempted even after a failure: Lambda redelivers from the lowest
    /// reported sequence number, and every projection is idempotent, so the records after
    /// it are harmlessly projected again.
    ///
    /// # Errors
    ///
    /// [`Error::NoSequenceNumber`] when a failed record has no sequence number to report:
    /// failing the invocation makes Lambda retry the whole batch instead.
    ///
    /// The batch's new turns are then handed to memory's extraction, if it is kept, until
    /// `until`: what is left then is not extracted (at most once, see [`Remember`]).
    pub async fn process_until(
        &self,
        event: Event,
        until: Option<tokio::time::Instant>,
    ) -> Result<(DynamoDbEventResponse, BatchSummary)> {
        let mut summary = BatchSummary {
            records: event.records.len(),
            ..BatchSummary::default()
        };
        let groups = group_by_partition(event.records);
        let mut results: Vec<Projected> = futures::stream::iter(groups)
            .map(|group| self.process_group(group))
            .buffer_unordered(EPISODES_IN_FLIGHT)
            .collect::<Vec<_>>()
            .await
            .into_iter()
            .flatten()
            .collect();
        // Back to batch order, so failures are listed as Lambda delivered them.
        results.sort_unstable_by_key(|projected| projected.position);

        let mut failed: Vec<Option<String>> = Vec::new();
        let mut ignored: BTreeMap<&'static str, usize> = BTreeMap::new();
        let mut to_remember: Vec<Box<TurnChange>> = Vec::new();
        for Projected {
            sequence_number,
            result,
            ..
        } in results
        {
            match result {
                Ok(Outcome::Turn {
                    newly,
                    audit_items,
                    remember,
                }) => {
                    to_remember.extend(remember);
                    if newly {
                        summary.turns += 1;
                    } else {
                        summary.turns_already_applied += 1;
                    }
                    summary.audit_items += audit_items;
                }
                Ok(Outcome::Body) => summary.bodies += 1,
                Ok(Outcome::Ignored(reason)) => {
                    summary.ignored += 1;
                    *ignored.entry(reason).or_default() += 1;
                }
                Err(error) => {
                    tracing::error!(
                        sequence_number = sequence_number.as_deref().unwrap_or(""),
                        error_kind = error.kind(),
                        error = %DisplayErrorContext(&error),
                        "stream record not projected; reported for retry"
                    );
                    summary.failed += 1;
                    failed.push(sequence_number);
                }
            }
        }
        if let Some(memory) = &self.memory {
            let handed = to_remember.len();
            let done = std::sync::atomic::AtomicUsize::new(0);
            let extracting = futures::stream::iter(to_remember).for_each_concurrent(
                EXTRACTIONS_IN_FLIGHT,
                |turn| {
                    let done = &done;
                    async move {
                        memory.after_turn(&turn.owner, &turn.record).await;
                        done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                },
            );
            match until {
                Some(until) => {
                    if tokio::time::timeout_at(until, extracting).await.is_err() {
                        tracing::warn!(
                            left = handed - done.load(std::sync::atomic::Ordering::Relaxed),
                            "the invocation's deadline came before every extraction"
                        );
                    }
                }
                None => extracting.await,
            }
            summary.remembered = done.into_inner();
        }
        tracing::info!(
            records = summary.records,
            remembered = summary.remembered,
            turns = summary.turns,
            turns_already_applied = summary.turns_already_applied,
            audit_items = summary.audit_items,
            bodies = summary.bodies,
            ignored = summary.ignored,
            ignored_by_reason = ?ignored,
            failed = summary.failed,
            "stream batch projected"
        );

        let mut response = DynamoDbEventResponse::default();
        for sequence_number in failed {
            let Some(sequence_number) = sequence_number else {
                return Err(Error::NoSequenceNumber);
            };
            let mut failure = DynamoDbBatchItemFailure::default();
            failure.item_identifier = Some(sequence_number);
            response.batch_item_failures.push(failure);
        }
        Ok((response, summary))
    }

    /// Projects the records of one partition in stream order.
    async fn process_group(&self, group: Vec<(usize, EventRecord)>) -> Vec<Projected> {
        let mut results = Vec::with_capacity(group.len());
        for (position, record) in group {
            let sequence_number = record.change.sequence_number.clone();
            let result = self.process_record(record).await;
            results.push(Projected {
                position,
                sequence_number,
                result,
            });
        }
        results
    }

    async fn process_record(&self, record: EventRecord) -> Result<Outcome> {
        match classify(&record.event_name, record.change)? {
            Change::Turn(turn) => {
                let mut outcome = self.project_turn(&turn).await?;
                if let Outcome::Turn {
                    newly: true,
                    remember,
                    ..
                } = &mut outcome
                    && self.memory.is_some()
                {
                    *remember = Some(turn);
                }
                Ok(outcome)
            }
            Change::Body(body) => {
                archive_body(&self.s3, &self.config.bucket, &body).await?;
                Ok(Outcome::Body)
            }
            Change::Ignored(reason) => {
                tracing::debug!(event_id = %record.event_id, reason, "stream record ignored");
                Ok(Outcome::Ignored(reason))
            }
        }
    }

    /// Audit first, then the aggregates, then the last turn: each step is idempotent, so a
    /// failure anywhere is repaired by redelivery. META is the journal's alone: the commit
    /// that leaves an episode due for compaction marks it itself.
    async fn project_turn(&self, turn: &TurnChange) -> Result<Outcome> {
        let table = &self.config.table;
        let audit_items = write_audit(&self.ddb, table, turn).await?;
        let newly = apply_turn(&self.ddb, table, turn).await?;
        record_last_seq(&self.ddb, table, turn).await?;
        Ok(Outcome::Turn {
            newly,
            audit_items,
            remember: None,
        })
    }
}

/// Splits the batch by `pk` (the episode), each record with its position in the batch,
/// keeping stream order within each group.
fn group_by_partition(records: Vec<EventRecord>) -> Vec<Vec<(usize, EventRecord)>> {
    let mut groups: Vec<Vec<(usize, EventRecord)>> = Vec::new();
    let mut by_pk: HashMap<String, usize> = HashMap::new();
    for (position, record) in records.into_iter().enumerate() {
        let pk = match record.change.keys.inner().get("pk") {
            Some(AttributeValue::S(pk)) => Some(pk.clone()),
            _ => None,
        };
        let known = pk.as_ref().and_then(|pk| by_pk.get(pk).copied());
        match known.and_then(|index| groups.get_mut(index)) {
            Some(group) => group.push((position, record)),
            None => {
                // Without a readable pk the record fails on its own; it joins no group.
                if let Some(pk) = pk {
                    by_pk.insert(pk, groups.len());
                }
                groups.push(vec![(position, record)]);
            }
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A writer whose clients are never reached: every record below fails or is ignored
    /// before any request.
    fn offline_writer() -> HistoryWriter {
        let ddb = aws_sdk_dynamodb::Client::from_conf(
            aws_sdk_dynamodb::Config::builder()
                .behavior_version(aws_sdk_dynamodb::config::BehaviorVersion::latest())
                .region(aws_sdk_dynamodb::config::Region::new("us-east-1"))
                .build(),
        );
        let s3 = aws_sdk_s3::Client::from_conf(
            aws_sdk_s3::Config::builder()
                .behavior_version(aws_sdk_s3::config::BehaviorVersion::latest())
                .region(aws_sdk_s3::config::Region::new("us-east-1"))
                .build(),
        );
        HistoryWriter::new(
            ddb,
            s3,
            Config {
                table: "t".into(),
                bucket: "b".into(),
            },
        )
    }

    fn record(event_name: &str, keys: serde_json::Value, seq: Option<&str>) -> serde_json::Value {
        let mut dynamodb = json!({
            "Keys": keys,
            "NewImage": {"record": {"S": "{broken"}, "owner": {"S": "alice"}},
            "SizeBytes": 10,
            "StreamViewType": "NEW_AND_OLD_IMAGES"
        });
        if let Some(seq) = seq {
            dynamodb["SequenceNumber"] = json!(seq);
        }
        json!({"eventID": "x", "eventName": event_name, "awsRegion": "us-east-1",
               "eventSource": "aws:dynamodb", "dynamodb": dynamodb})
    }

    fn event(records: Vec<serde_json::Value>) -> Event {
        serde_json::from_value(json!({ "Records": records })).unwrap()
    }

    #[tokio::test]
    async fn failures_are_listed_in_batch_order_and_the_rest_still_counts() {
        let turn = |ep: &str, seq: &str| {
            record(
                "INSERT",
                json!({"pk": {"S": format!("EP#{ep}")}, "sk": {"S": "TURN#0000000001"}}),
                Some(seq),
            )
        };
        let batch = event(vec![
            turn("b", "300"),
            record(
                "REMOVE",
                json!({"pk": {"S": "EP#a"}, "sk": {"S": "TURN#0000000001"}}),
                Some("301"),
            ),
            turn("a", "302"),
            record("INSERT", json!({"pk": {"S": "EP#a"}}), Some("303")),
            turn("b", "304"),
        ]);
        let (response, summary) = offline_writer().process(batch).await.unwrap();
        let failed: Vec<_> = response
            .batch_item_failures
            .iter()
            .map(|f| f.item_identifier.clone().unwrap())
            .collect();
        assert_eq!(failed, ["300", "302", "303", "304"]);
        assert_eq!(
            (summary.records, summary.failed, summary.ignored),
            (5, 4, 1)
        );
    }

    #[tokio::test]
    async fn a_failed_record_without_a_sequence_number_fails_the_whole_batch() {
        let batch = event(vec![record(
            "INSERT",
            json!({"pk": {"S": "EP#a"}, "sk": {"S": "TURN#0000000001"}}),
            None,
        )]);
        let err = offline_writer().process(batch).await.unwrap_err();
        assert!(matches!(err, Error::NoSequenceNumber), "{err:?}");
        let diagnostic = lambda_runtime::Diagnostic::from(err);
        assert_eq!(diagnostic.error_type, "HistoryWriter.NoSequenceNumber");
    }

    #[tokio::test]
    async fn an_ignored_record_needs_no_sequence_number() {
        let batch = event(vec![record(
            "REMOVE",
            json!({"pk": {"S": "EP#a"}, "sk": {"S": "META"}}),
            None,
        )]);
        let (response, summary) = offline_writer().process(batch).await.unwrap();
        assert!(response.batch_item_failures.is_empty());
        assert_eq!(summary.ignored, 1);
    }
}
