//! What a stream record means for the projections: a committed turn, a stored body, or
//! something the history writer leaves alone.

use aws_lambda_events::event::dynamodb::StreamRecord;
use baton_aws::journal::keys as journal;
use baton_core::Principal;
use baton_core::turn::TurnRecord;
use serde::Deserialize;

use crate::error::{Error, Result};

/// A stream record, classified.
#[derive(Debug)]
pub(crate) enum Change {
    /// A TURN item was written.
    Turn(Box<TurnChange>),
    /// A BODY item was written.
    Body(BodyChange),
    /// Nothing to project; the reason is a short label for the batch's log line.
    Ignored(&'static str),
}

/// A committed turn and who owns its episode.
#[derive(Debug)]
pub(crate) struct TurnChange {
    /// The episode's owner principal (the TURN item's `owner`), checked to be one.
    pub(crate) owner: Principal,
    /// The turn itself.
    pub(crate) record: TurnRecord,
}

/// A stored body to archive.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct BodyChange {
    /// Episode id (the `pk` without `EP#`).
    pub(crate) episode_id: String,
    /// The body key (the `sk` without `BODY#`).
    pub(crate) key: String,
    /// Where its bytes are.
    pub(crate) source: BodySource,
}

/// Where a body's bytes are.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum BodySource {
    /// Inline in the item.
    Inline(String),
    /// In the bucket under this key.
    S3(String),
}

/// The item's keys; field names are the table's attribute names (`journal::PK`, `SK`).
#[derive(Deserialize)]
struct Keys {
    pk: String,
    sk: String,
}

#[derive(Deserialize)]
struct TurnImage {
    record: String,
    owner: String,
}

#[derive(Deserialize)]
struct BodyImage {
    #[serde(default)]
    json: Option<String>,
    #[serde(default)]
    s3_key: Option<String>,
}

/// Classifies one record; `event_name` is the record's `eventName`.
///
/// Only INSERT and MODIFY of TURN and BODY items are projected; any other item, event or
/// shape is ignored, because the table is shared with other writers.
pub(crate) fn classify(event_name: &str, change: StreamRecord) -> Result<Change> {
    if !matches!(event_name, "INSERT" | "MODIFY") {
        return Ok(Change::Ignored("not_a_write"));
    }
    let keys: Keys = serde_dynamo::from_item(change.keys).map_err(Error::BadKeys)?;
    let Some(episode_id) = keys.pk.strip_prefix(journal::EPISODE_PREFIX) else {
        return Ok(Change::Ignored("not_an_episode_item"));
    };
    let key = format!("{}/{}", keys.pk, keys.sk);
    if let Some(seq) = keys.sk.strip_prefix(journal::TURN_PREFIX) {
        let image: TurnImage =
            serde_dynamo::from_item(change.new_image).map_err(|source| Error::BadImage {
                key: key.clone(),
                source,
            })?;
        let record: TurnRecord =
            serde_json::from_str(&image.record).map_err(|source| Error::BadTurnRecord {
                key: key.clone(),
                source,
            })?;
        if record.episode_id != episode_id || seq.parse::<u64>().ok() != Some(record.seq) {
            return Err(Error::MismatchedTurn { key });
        }
        // The principal is kept as the principal it is, never as whatever text was there.
        let owner = Principal::new(&image.owner).map_err(|_| Error::BadOwner { key })?;
        return Ok(Change::Turn(Box::new(TurnChange { owner, record })));
    }
    if let Some(body_key) = keys.sk.strip_prefix(journal::BODY_PREFIX) {
        let image: BodyImage =
            serde_dynamo::from_item(change.new_image).map_err(|source| Error::BadImage {
                key: key.clone(),
                source,
            })?;
        let source = match (image.json, image.s3_key) {
            (Some(json), _) => BodySource::Inline(json),
            (None, Some(s3_key)) => BodySource::S3(s3_key),
            (None, None) => return Err(Error::EmptyBody { key }),
        };
        return Ok(Change::Body(BodyChange {
            episode_id: episode_id.to_owned(),
            key: body_key.to_owned(),
            source,
        }));
    }
    Ok(Change::Ignored(match keys.sk.as_str() {
        journal::META => "meta",
        journal::AGG => "aggregates",
        sk if sk.starts_with(journal::AUDIT_PREFIX) => "audit",
        _ => "unknown_item",
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(
        event_name: &str,
        keys: serde_json::Value,
        image: serde_json::Value,
    ) -> Result<Change> {
        let change: StreamRecord = serde_json::from_value(json!({
            "Keys": keys,
            "NewImage": image,
            "SequenceNumber": "100",
            "SizeBytes": 10,
            "StreamViewType": "NEW_AND_OLD_IMAGES"
        }))
        .unwrap();
        classify(event_name, change)
    }

    fn turn_json(episode: &str, seq: u64) -> String {
        json!({
            "episode_id": episode, "seq": seq, "turn_id": "t-1", "created_ms": 1,
            "user_text": "hi", "narration": "hello", "segments": [], "consulted": [],
            "routing": {
                "invoked": [], "intent_count": 0, "cap": 3, "cap_behavior": "within",
                "dropped": [], "guards": [], "retries": 0, "fastpath": null, "outcomes": [],
                "composition": "passthrough", "limit": null, "principal_mismatches": 0
            },
            "usage": [], "cost_usd": 0.0, "body_keys": [], "outcome": "answered"
        })
        .to_string()
    }

    #[test]
    fn a_turn_insert_is_a_turn() {
        let change = record(
            "INSERT",
            json!({"pk": {"S": "EP#e1"}, "sk": {"S": "TURN#0000000003"}}),
            json!({"pk": {"S": "EP#e1"}, "sk": {"S": "TURN#0000000003"},
                   "record": {"S": turn_json("e1", 3)}, "owner": {"S": "alice"},
                   "turn_id": {"S": "t-1"}, "seq": {"N": "3"}, "created_ms": {"N": "1"}}),
        )
        .unwrap();
        let Change::Turn(turn) = change else {
            panic!("expected a turn, got {change:?}")
        };
        assert_eq!(turn.owner.as_str(), "alice");
        assert_eq!(turn.record.seq, 3);
    }

    #[test]
    fn a_turn_whose_record_names_another_seq_is_refused() {
        let err = record(
            "INSERT",
            json!({"pk": {"S": "EP#e1"}, "sk": {"S": "TURN#0000000004"}}),
            json!({"record": {"S": turn_json("e1", 3)}, "owner": {"S": "alice"}}),
        )
        .unwrap_err();
        assert!(matches!(err, Error::MismatchedTurn { .. }), "{err:?}");
    }

    #[test]
    fn unparseable_turn_json_is_an_error() {
        let err = record(
            "INSERT",
            json!({"pk": {"S": "EP#e1"}, "sk": {"S": "TURN#0000000001"}}),
            json!({"record": {"S": "{not json"}, "owner": {"S": "alice"}}),
        )
        .unwrap_err();
        assert!(matches!(err, Error::BadTurnRecord { .. }), "{err:?}");
    }

    #[test]
    fn missing_keys_are_an_error() {
        let err = record("INSERT", json!({"pk": {"S": "EP#e1"}}), json!({})).unwrap_err();
        assert!(matches!(err, Error::BadKeys(_)), "{err:?}");
    }

    #[test]
    fn bodies_inline_or_in_s3_are_bodies() {
        let inline = record(
            "INSERT",
            json!({"pk": {"S": "EP#e1"}, "sk": {"S": "BODY#t-1/0"}}),
            json!({"json": {"S": "{\"a\":1}"}, "owner": {"S": "alice"}, "turn_id": {"S": "t-1"}}),
        )
        .unwrap();
        let Change::Body(body) = inline else {
            panic!("expected a body, got {inline:?}")
        };
        assert_eq!(body.episode_id, "e1");
        assert_eq!(body.key, "t-1/0");
        assert_eq!(body.source, BodySource::Inline("{\"a\":1}".into()));

        let in_s3 = record(
            "MODIFY",
            json!({"pk": {"S": "EP#e1"}, "sk": {"S": "BODY#t-1/1"}}),
            json!({"s3_key": {"S": "bodies/e1/t-1/1.json"}}),
        )
        .unwrap();
        let Change::Body(body) = in_s3 else {
            panic!("expected a body, got {in_s3:?}")
        };
        assert_eq!(body.source, BodySource::S3("bodies/e1/t-1/1.json".into()));
    }

    #[test]
    fn other_items_events_and_shapes_are_ignored() {
        let cases = [
            (
                "REMOVE",
                json!({"pk": {"S": "EP#e1"}, "sk": {"S": "TURN#0000000001"}}),
                "not_a_write",
            ),
            (
                "INSERT",
                json!({"pk": {"S": "EP#e1"}, "sk": {"S": "META"}}),
                "meta",
            ),
            (
                "MODIFY",
                json!({"pk": {"S": "EP#e1"}, "sk": {"S": "AGG"}}),
                "aggregates",
            ),
            (
                "INSERT",
                json!({"pk": {"S": "EP#e1"}, "sk": {"S": "AUDIT#0000000001#billing"}}),
                "audit",
            ),
            (
                "INSERT",
                json!({"pk": {"S": "PR#alice"}, "sk": {"S": "TID#t-1"}}),
                "not_an_episode_item",
            ),
            (
                "INSERT",
                json!({"pk": {"S": "EP#e1"}, "sk": {"S": "SOMETHING#new"}}),
                "unknown_item",
            ),
            ("UNKNOWN_TO_SDK_VERSION", json!({}), "not_a_write"),
        ];
        for (event_name, keys, reason) in cases {
            let change = record(event_name, keys, json!({})).unwrap();
            assert!(
                matches!(change, Change::Ignored(r) if r == reason),
                "{event_name}: {change:?}"
            );
        }
    }

    fn classify_file(json: &str) -> Vec<Result<Change>> {
        let event: aws_lambda_events::event::dynamodb::Event = serde_json::from_str(json).unwrap();
        event
            .records
            .into_iter()
            .map(|r| classify(&r.event_name, r.change))
            .collect()
    }

    #[test]
    fn the_sample_batch_holds_a_body_and_a_turn() {
        let changes = classify_file(include_str!("../../../events/dynamodb-stream-batch.json"));
        assert!(matches!(
            changes.as_slice(),
            [Ok(Change::Body(_)), Ok(Change::Turn(_))]
        ));
    }

    #[test]
    fn the_poison_sample_has_one_bad_record_among_ignored_and_good_ones() {
        let changes = classify_file(include_str!(
            "../../../events/dynamodb-stream-batch-poison.json"
        ));
        assert!(
            matches!(
                changes.as_slice(),
                [
                    Ok(Change::Ignored("meta")),
                    Ok(Change::Turn(_)),
                    Err(Error::BadTurnRecord { .. }),
                    Ok(Change::Ignored("not_a_write")),
                ]
            ),
            "{changes:?}"
        );
    }
}
