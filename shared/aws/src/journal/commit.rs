//! Committing a turn (D-24, D-26): one all-or-nothing transaction.
//!
//! The transaction holds, in this order:
//! 1. the META update: version, `updated_ms` and state, if the caller owns the episode and
//!    it is still at the expected version; it also clears the lease when the lease is this
//!    turn's (or absent), and marks the episode due for compaction when the turn leaves it
//!    so (`due_pk`, `compaction_due`: the sparse index `compaction-due`);
//! 2. the TURN put (`TURN#<seq>`), if that seq is free;
//! 3. the TURN-ID update to `done` (dropping its lease and TTL), unless it is done already:
//!    a turn id commits once;
//! 4. one BODY put per body, if its key is free in the episode;
//! 5. one PICTURE put (`IMG#<sha256>`: its media type and S3 object) per distinct picture
//!    the user sent (D-42), over the item of the same picture sent before, if any: it is
//!    the same picture.
//!
//! Bodies over the inline limit, and every picture, are written to S3 *before* the
//! transaction, which then references them; if any S3 write fails, the commit fails and
//! the table is not touched. A picture is read through its item, so it is readable only
//! once the commit that carried it has succeeded; a commit that fails leaves at most an
//! object no item names.
//! An episode state over [`INLINE_STATE_LIMIT`] (a long conversation waiting for the user)
//! goes the same way: META then names its object (`state_s3_key`) instead of holding it.
//! Before those S3 writes one GetItem checks that the episode is the caller's and at the
//! expected version, so that a commit bound to fail does not overwrite another's objects.
//!
//! Requests: an ordinary commit is 1 TransactWriteItems. With k large bodies and p pictures
//! it is 1 GetItem, k + p PutObject and 1 TransactWriteItems. A commit refused before
//! sending (wrong seq, repeated body key) costs 1 GetItem (to tell "not found" from
//! "conflict"). A commit by a turn whose lease another turn holds is sent twice (the first
//! guess about the lease was wrong), as memory and embedded stores also let it commit.

use std::collections::HashSet;

use aws_sdk_dynamodb::types::{
    Put, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};
use baton_core::picture::Picture;
use baton_core::ports::store::{Commit, StoreError, check_picture_names};

use super::bodies::{self, Placement};
use super::config::DynamoStore;
use super::items::{self, Item, n, s};
use super::transact::{self, Outcome, build_error};
use super::{error, keys, read};

/// DynamoDB's limit on one item.
const MAX_ITEM_BYTES: usize = 400 * 1024;
/// DynamoDB's limit on the items of one transaction, summed.
const MAX_TRANSACTION_BYTES: usize = 4 * 1024 * 1024;
/// DynamoDB's limit on the writes of one transaction.
const MAX_TRANSACTION_ITEMS: usize = 100;
/// META, TURN and TURN-ID: the writes every commit has, beside its bodies and pictures.
const FIXED_ITEMS: usize = 3;
/// What an update's target item holds beyond the values it sets (keys, owner, times).
const META_OVERHEAD_BYTES: usize = 512;
/// The largest episode state kept in META, in bytes: past it, the state is an S3 object.
/// Well under the item limit, which META shares with its summary.
pub(crate) const INLINE_STATE_LIMIT: usize = 256 * 1024;

/// Commits a turn; see the module docs for the transaction and its requests.
pub(crate) async fn commit(store: &DynamoStore, commit: &Commit) -> Result<u64, StoreError> {
    let record = &commit.record;
    let episode_id = record.episode_id.as_str();
    let in_order = commit.expected_version.checked_add(1) == Some(record.seq);
    let mut seen = HashSet::new();
    let keys_unique = commit.bodies.iter().all(|b| seen.insert(b.key.as_str()));
    if !in_order || !keys_unique {
        // Bound to fail; only ownership decides how ("not found" before "conflict").
        let meta = read::meta_item(store, episode_id, "checking a refused commit").await?;
        items::episode_meta(meta.as_ref(), &commit.principal, episode_id)?;
        return Err(StoreError::Conflict);
    }

    let placements = bodies::place(store, episode_id, &record.turn_id, &commit.bodies);
    // One write per picture: a transaction may not write one item twice.
    let mut seen_pictures = HashSet::new();
    let pictures: Vec<&Picture> = commit
        .pictures
        .iter()
        .filter(|p| seen_pictures.insert(p.sha256.as_str()))
        .collect();
    let parts = Parts::new(commit, &placements, &pictures)?;
    let has_objects = placements.iter().any(|p| matches!(p, Placement::Object(_)))
        || matches!(parts.state, State::Object { .. })
        || !pictures.is_empty();
    let mut lease_held = true;
    if has_objects {
        let item = read::meta_item(
            store,
            episode_id,
            "checking an episode before storing bodies",
        )
        .await?;
        let meta = items::episode_meta(item.as_ref(), &commit.principal, episode_id)?;
        if meta.version != commit.expected_version {
            return Err(StoreError::Conflict);
        }
        lease_held = item
            .as_ref()
            .and_then(|i| items::string(i, keys::LEASE_TURN))
            .is_none_or(|turn| turn == record.turn_id);
        // Only now, every check done, may objects be written.
        let state = async {
            match &parts.state {
                State::Object { key, json } => {
                    bodies::put_object(
                        store,
                        key,
                        "application/json",
                        json,
                        "storing a large episode state",
                    )
                    .await
                }
                State::Inline(_) => Ok(()),
            }
        };
        futures::try_join!(
            bodies::put_all(store, &commit.bodies, &placements),
            state,
            bodies::put_pictures(store, episode_id, &pictures),
        )?;
    }

    // A second attempt only when the first guessed wrong whose lease it is.
    for _ in 0..2 {
        let writes = parts.writes(store, commit, lease_held)?;
        match transact::write(store, writes, "committing a turn").await? {
            Outcome::Written => return Ok(record.seq),
            Outcome::Cancelled(reasons) => match refusal(commit, &reasons)? {
                Refusal::LeaseGuessedWrong => lease_held = !lease_held,
                Refusal::Final(err) => return Err(err),
            },
        }
    }
    // The lease changed hands under this commit twice: someone else is active.
    Err(StoreError::Conflict)
}

/// Why a commit transaction was cancelled.
enum Refusal {
    /// Only the META condition failed, on the lease part: try the other variant.
    LeaseGuessedWrong,
    /// The answer to give.
    Final(StoreError),
}

fn refusal(
    commit: &Commit,
    reasons: &[aws_sdk_dynamodb::types::CancellationReason],
) -> Result<Refusal, StoreError> {
    let others_failed = reasons
        .iter()
        .skip(1)
        .any(|r| transact::condition_failed(Some(r)));
    if transact::condition_failed(reasons.first()) {
        // No item back means no META: the episode does not exist.
        let old = transact::old_item(reasons.first());
        let Some(meta) = old.filter(|m| items::owned_by(m, &commit.principal)) else {
            return Ok(Refusal::Final(StoreError::NotFound));
        };
        if items::number(&meta, keys::VERSION)? != Some(commit.expected_version) || others_failed {
            return Ok(Refusal::Final(StoreError::Conflict));
        }
        if transact::other_failure(reasons) {
            return Ok(Refusal::Final(error::cancelled(
                "committing a turn",
                &transact::codes(reasons),
            )));
        }
        return Ok(Refusal::LeaseGuessedWrong);
    }
    if others_failed {
        // The seq, the turn id or a body key is taken.
        return Ok(Refusal::Final(StoreError::Conflict));
    }
    Ok(Refusal::Final(error::cancelled(
        "committing a turn",
        &transact::codes(reasons),
    )))
}

/// Where a commit puts the episode state.
enum State {
    /// In META's `state`.
    Inline(String),
    /// In the S3 object `key`, which META's `state_s3_key` names.
    Object { key: String, json: String },
}

/// The items of a commit that do not depend on the lease, built and size-checked once.
struct Parts {
    state: State,
    turn: Item,
    bodies: Vec<Item>,
    pictures: Vec<Item>,
}

impl Parts {
    /// `pictures` are the commit's, each once.
    fn new(
        commit: &Commit,
        placements: &[Placement],
        pictures: &[&Picture],
    ) -> Result<Parts, StoreError> {
        let record = &commit.record;
        let episode_pk = keys::episode_pk(&record.episode_id);
        let turn_id_key = (
            keys::principal_pk(commit.principal.as_str()),
            keys::turn_id_sk(&record.turn_id),
        );
        if !keys::fits(&episode_pk, keys::META) || !keys::fits(&turn_id_key.0, &turn_id_key.1) {
            return Err(error::refused(
                "the turn id or episode id is too long to be stored",
            ));
        }
        if commit.bodies.len() + pictures.len() > MAX_TRANSACTION_ITEMS - FIXED_ITEMS {
            return Err(error::refused(
                "the turn has too many bodies and pictures to be stored in one commit",
            ));
        }
        // Their names become keys: anything but a SHA-256 in hex is refused here.
        check_picture_names(&commit.pictures)?;

        let record_json = record
            .to_json()
            .map_err(|e| error::refused(&e.to_string()))?;
        let turn: Item = [
            (keys::PK, s(episode_pk.clone())),
            (keys::SK, s(keys::turn_sk(record.seq))),
            (keys::RECORD, s(record_json)),
            (keys::TURN_ID, s(&record.turn_id)),
            (keys::OWNER, s(commit.principal.as_str())),
            (keys::SEQ, n(record.seq)),
            (keys::CREATED_MS, n(record.created_ms)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();

        let mut bodies = Vec::with_capacity(commit.bodies.len());
        for (body, placement) in commit.bodies.iter().zip(placements) {
            let sk = keys::body_sk(&body.key);
            if !keys::fits(&episode_pk, &sk) {
                return Err(error::refused("a body key is too long to be stored"));
            }
            let content = match placement {
                Placement::Inline => (keys::JSON, s(&body.json)),
                Placement::Object(object_key) => (keys::S3_KEY, s(object_key)),
            };
            let item: Item = [
                (keys::PK, s(episode_pk.clone())),
                (keys::SK, s(sk)),
                (keys::OWNER, s(commit.principal.as_str())),
                (keys::TURN_ID, s(&record.turn_id)),
                content,
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
            bodies.push(item);
        }

        // No turn id: the same picture sent again writes the very same item.
        let pictures = pictures
            .iter()
            .map(|picture| -> Item {
                [
                    (keys::PK, s(episode_pk.clone())),
                    (keys::SK, s(keys::picture_sk(&picture.sha256))),
                    (keys::OWNER, s(commit.principal.as_str())),
                    (keys::MEDIA_TYPE, s(picture.media_type.as_str())),
                    (
                        keys::S3_KEY,
                        s(keys::picture_object_key(
                            &record.episode_id,
                            &picture.sha256,
                        )),
                    ),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect()
            })
            .collect();

        let state_json = items::encode(&commit.state, "an episode state")?;
        let state = if state_json.len() > INLINE_STATE_LIMIT {
            State::Object {
                key: keys::state_object_key(&record.episode_id, &record.turn_id),
                json: state_json,
            }
        } else {
            State::Inline(state_json)
        };
        let parts = Parts {
            state,
            turn,
            bodies,
            pictures,
        };
        parts.check_sizes()?;
        Ok(parts)
    }

    /// Refuses, before anything is written, what DynamoDB would reject for size.
    fn check_sizes(&self) -> Result<(), StoreError> {
        let meta = match &self.state {
            State::Inline(json) => json.len(),
            State::Object { key, .. } => key.len(),
        } + META_OVERHEAD_BYTES;
        if meta > MAX_ITEM_BYTES {
            return Err(error::refused(
                "the episode state is too large to be stored",
            ));
        }
        let turn = items::size(&self.turn);
        if turn > MAX_ITEM_BYTES {
            return Err(error::refused("the turn is too large to be stored"));
        }
        let mut total = meta + turn + META_OVERHEAD_BYTES;
        for body in &self.bodies {
            let size = items::size(body);
            if size > MAX_ITEM_BYTES {
                // Only an inline body can get here, and the inline limit is capped below
                // this; kept as a guard.
                return Err(error::refused("a body is too large to be stored"));
            }
            total += size;
        }
        total += self.pictures.iter().map(items::size).sum::<usize>();
        if total > MAX_TRANSACTION_BYTES {
            return Err(error::refused(
                "the turn and its bodies are too large to be stored in one commit",
            ));
        }
        Ok(())
    }

    /// The transaction's writes; `lease_held` picks the META variant (see [`meta_update`]).
    fn writes(
        &self,
        store: &DynamoStore,
        commit: &Commit,
        lease_held: bool,
    ) -> Result<Vec<TransactWriteItem>, StoreError> {
        let table = store.config.table();
        let mut writes = Vec::with_capacity(FIXED_ITEMS + self.bodies.len() + self.pictures.len());
        writes.push(
            TransactWriteItem::builder()
                .update(meta_update(table, commit, &self.state, lease_held)?)
                .build(),
        );
        writes.push(
            TransactWriteItem::builder()
                .put(put_if_absent(table, self.turn.clone())?)
                .build(),
        );
        writes.push(
            TransactWriteItem::builder()
                .update(turn_id_done(table, commit)?)
                .build(),
        );
        for body in &self.bodies {
            writes.push(
                TransactWriteItem::builder()
                    .put(put_if_absent(table, body.clone())?)
                    .build(),
            );
        }
        for picture in &self.pictures {
            // Unconditional: an item already there is this one, written again as it was.
            let put = Put::builder()
                .table_name(table)
                .set_item(Some(picture.clone()))
                .build()
                .map_err(build_error)?;
            writes.push(TransactWriteItem::builder().put(put).build());
        }
        Ok(writes)
    }
}

/// The META update. The lease cannot be cleared conditionally within one update, so there
/// are two variants: `lease_held` (the lease is this turn's or absent: clear it) and not
/// (another turn's lease: leave it). Each variant's condition includes its lease guess, so
/// a wrong guess is a cancelled transaction, never a wrong write.
fn meta_update(
    table: &str,
    commit: &Commit,
    state: &State,
    lease_held: bool,
) -> Result<Update, StoreError> {
    let record = &commit.record;
    let builder = Update::builder()
        .table_name(table)
        .key(keys::PK, s(keys::episode_pk(&record.episode_id)))
        .key(keys::SK, s(keys::META))
        .expression_attribute_names("#owner", keys::OWNER)
        .expression_attribute_names("#version", keys::VERSION)
        .expression_attribute_names("#updated_ms", keys::UPDATED_MS)
        .expression_attribute_names("#state", keys::STATE)
        .expression_attribute_names("#state_s3_key", keys::STATE_S3_KEY)
        .expression_attribute_names("#lease_turn", keys::LEASE_TURN)
        .expression_attribute_values(":principal", s(commit.principal.as_str()))
        .expression_attribute_values(":expected", n(commit.expected_version))
        .expression_attribute_values(":seq", n(record.seq))
        .expression_attribute_values(":updated_ms", n(record.created_ms))
        .expression_attribute_values(":turn", s(&record.turn_id))
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
    // The state goes where it fits, and the other place is cleared.
    let (builder, state_set, state_remove) = match state {
        State::Inline(json) => (
            builder.expression_attribute_values(":state", s(json)),
            "#state = :state",
            "#state_s3_key",
        ),
        State::Object { key, .. } => (
            builder.expression_attribute_values(":state_s3_key", s(key)),
            "#state_s3_key = :state_s3_key",
            "#state",
        ),
    };
    let mut set = format!("SET #version = :seq, #updated_ms = :updated_ms, {state_set}");
    let builder = if commit.compaction_due {
        // A mark already there keeps its time: the queue is by how long an episode waited.
        set.push_str(
            ", #due_pk = :due, #compaction_due = if_not_exists(#compaction_due, :updated_ms)",
        );
        builder
            .expression_attribute_names("#due_pk", keys::DUE_PK)
            .expression_attribute_names("#compaction_due", keys::COMPACTION_DUE)
            .expression_attribute_values(":due", s(keys::DUE))
    } else {
        builder
    };
    let builder = if lease_held {
        builder
            .update_expression(format!(
                "{set} REMOVE {state_remove}, #lease_turn, #lease_principal, #lease_expires_ms"
            ))
            .condition_expression(
                "#owner = :principal AND #version = :expected AND \
                 (attribute_not_exists(#lease_turn) OR #lease_turn = :turn)",
            )
            .expression_attribute_names("#lease_principal", keys::LEASE_PRINCIPAL)
            .expression_attribute_names("#lease_expires_ms", keys::LEASE_EXPIRES_MS)
    } else {
        builder
            .update_expression(format!("{set} REMOVE {state_remove}"))
            .condition_expression(
                "#owner = :principal AND #version = :expected AND \
             attribute_exists(#lease_turn) AND #lease_turn <> :turn",
            )
    };
    builder.build().map_err(build_error)
}

/// The TURN-ID update to `done`, unless a commit of this turn id already happened.
fn turn_id_done(table: &str, commit: &Commit) -> Result<Update, StoreError> {
    let record = &commit.record;
    Update::builder()
        .table_name(table)
        .key(keys::PK, s(keys::principal_pk(commit.principal.as_str())))
        .key(keys::SK, s(keys::turn_id_sk(&record.turn_id)))
        .update_expression(
            "SET #state = :done, #episode_id = :episode, #seq = :seq \
             REMOVE #lease_expires_ms, #expires_at",
        )
        .condition_expression("attribute_not_exists(#pk) OR #state = :claimed")
        .expression_attribute_names("#pk", keys::PK)
        .expression_attribute_names("#state", keys::STATE)
        .expression_attribute_names("#episode_id", keys::EPISODE_ID)
        .expression_attribute_names("#seq", keys::SEQ)
        .expression_attribute_names("#lease_expires_ms", keys::LEASE_EXPIRES_MS)
        .expression_attribute_names("#expires_at", keys::EXPIRES_AT)
        .expression_attribute_values(":done", s(keys::DONE))
        .expression_attribute_values(":claimed", s(keys::CLAIMED))
        .expression_attribute_values(":episode", s(&record.episode_id))
        .expression_attribute_values(":seq", n(record.seq))
        .build()
        .map_err(build_error)
}

/// A put that only creates: the key must be free.
fn put_if_absent(table: &str, item: Item) -> Result<Put, StoreError> {
    Put::builder()
        .table_name(table)
        .set_item(Some(item))
        .condition_expression("attribute_not_exists(#pk)")
        .expression_attribute_names("#pk", keys::PK)
        .build()
        .map_err(build_error)
}
