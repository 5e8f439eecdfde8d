//! A running turn's checkpoint (D-16): one CKPT item per turn in its episode's partition,
//! `EP#<episode_id>` / `CKPT#<turn_id>`, holding the text inline or, past
//! [`INLINE_CHECKPOINT_LIMIT`], the key of an S3 object that does.
//!
//! A save is one transaction: a condition check that META's lease is this turn's (its
//! `lease_turn`, whether or not the lease has run out: as for a commit, only another turn
//! taking the episode over ends it) and the put of the item, replacing the last one. A
//! release or a dead lease leaves the item. Nothing deletes it: the turn function's role
//! may delete claim items only, so a commit leaves it, a read checks that its turn has not
//! committed, and DynamoDB's TTL removes it a day after its last save.
//!
//! A large checkpoint gets a new object per save, written before the transaction, so that
//! a refused save leaves the one in use as it was. Objects no item references any more are
//! not deleted here: they live under `bodies/`, which the bucket's lifecycle rule expires.

use std::hash::{BuildHasher, RandomState};
use std::time::{SystemTime, UNIX_EPOCH};

use aws_sdk_dynamodb::types::{ConditionCheck, Put, TransactWriteItem};
use baton_core::ports::store::StoreError;

use super::config::DynamoStore;
use super::items::{self, n, s};
use super::transact::{self, Outcome, build_error};
use super::{bodies, error, keys, read};

/// How long a checkpoint item outlives its last save before TTL removes it: a turn cut
/// short is retried well within it.
const CHECKPOINT_TTL_S: u64 = 86_400;

/// The largest checkpoint kept in its item, in bytes: well under DynamoDB's 400 KB per
/// item, with room for the keys.
pub(crate) const INLINE_CHECKPOINT_LIMIT: usize = 300 * 1024;

/// Saves `checkpoint` for `turn_id`, if it holds the episode's claim: 1 TransactWriteItems
/// (a ConditionCheck of META and a Put), plus 1 PutObject first when it is large.
///
/// # Errors
/// `Conflict` when the turn does not hold the claim (or there is no such episode).
pub(crate) async fn save(
    store: &DynamoStore,
    episode_id: &str,
    turn_id: &str,
    checkpoint: &str,
) -> Result<(), StoreError> {
    let episode_pk = keys::episode_pk(episode_id);
    let checkpoint_sk = keys::checkpoint_sk(turn_id);
    if !keys::fits(&episode_pk, keys::META) {
        // No such episode can exist, so no claim on it either.
        return Err(StoreError::Conflict);
    }
    if !keys::fits(&episode_pk, &checkpoint_sk) {
        return Err(error::refused(
            "the turn id is too long to store a checkpoint under",
        ));
    }

    let content = if checkpoint.len() > INLINE_CHECKPOINT_LIMIT {
        let object_key = keys::checkpoint_object_key(episode_id, turn_id, &unique_suffix());
        bodies::put_object(
            store,
            &object_key,
            "text/plain; charset=utf-8",
            checkpoint,
            "storing a large checkpoint",
        )
        .await?;
        (keys::S3_KEY, s(object_key))
    } else {
        (keys::CHECKPOINT, s(checkpoint))
    };
    let lease_check = ConditionCheck::builder()
        .table_name(store.config.table())
        .key(keys::PK, s(episode_pk.clone()))
        .key(keys::SK, s(keys::META))
        .condition_expression("#lease_turn = :turn")
        .expression_attribute_names("#lease_turn", keys::LEASE_TURN)
        .expression_attribute_values(":turn", s(turn_id))
        .build()
        .map_err(build_error)?;
    let put = Put::builder()
        .table_name(store.config.table())
        .item(keys::PK, s(episode_pk))
        .item(keys::SK, s(checkpoint_sk))
        .item(keys::TURN_ID, s(turn_id))
        .item(content.0, content.1)
        .item(
            keys::EXPIRES_AT,
            n(now_s().saturating_add(CHECKPOINT_TTL_S)),
        )
        .build()
        .map_err(build_error)?;
    let writes = vec![
        TransactWriteItem::builder()
            .condition_check(lease_check)
            .build(),
        TransactWriteItem::builder().put(put).build(),
    ];
    match transact::write(store, writes, "saving a checkpoint").await? {
        Outcome::Written => Ok(()),
        // The only condition is META's: no lease of this turn's, or no episode.
        Outcome::Cancelled(reasons) if transact::condition_failed(reasons.first()) => {
            Err(StoreError::Conflict)
        }
        Outcome::Cancelled(reasons) => Err(error::cancelled(
            "saving a checkpoint",
            &transact::codes(&reasons),
        )),
    }
}

/// What `turn_id` last saved on the episode: 1 GetItem; when there is an item, 1 GetItem of
/// META (and 1 of the TURN-ID item when the turn does not hold the claim) to make sure the
/// turn has not committed; 1 GetObject when it is in S3.
pub(crate) async fn load(
    store: &DynamoStore,
    episode_id: &str,
    turn_id: &str,
) -> Result<Option<String>, StoreError> {
    let item = read::get_item(
        store,
        keys::episode_pk(episode_id),
        keys::checkpoint_sk(turn_id),
        "reading a checkpoint",
    )
    .await?;
    let Some(item) = item else {
        return Ok(None);
    };
    if committed(store, episode_id, turn_id).await? {
        // Its turn committed: kept only until TTL removes it.
        return Ok(None);
    }
    if let Some(text) = items::string(&item, keys::CHECKPOINT) {
        return Ok(Some(text.to_owned()));
    }
    let Some(object_key) = items::string(&item, keys::S3_KEY) else {
        return Err(error::undecodable(
            "a checkpoint item",
            &"neither checkpoint nor s3_key",
        ));
    };
    let text = bodies::get_object(
        store,
        object_key,
        "reading a large checkpoint",
        "a checkpoint object",
    )
    .await?;
    if text.is_none() {
        // Expired by the bucket's lifecycle rule: go on without a checkpoint, not fail.
        tracing::warn!(
            key = object_key,
            "journal: a checkpoint's object is gone; read as none"
        );
    }
    Ok(text)
}

/// Whether `turn_id` has committed on the episode (or the episode is gone, which leaves
/// nothing to go on from). A turn that holds the claim has not: a commit ends the claim
/// and a committed turn id is never claimed again. Otherwise its TURN-ID item says.
async fn committed(
    store: &DynamoStore,
    episode_id: &str,
    turn_id: &str,
) -> Result<bool, StoreError> {
    let Some(meta) = read::meta_item(store, episode_id, "checking a checkpoint's turn").await?
    else {
        return Ok(true);
    };
    if items::string(&meta, keys::LEASE_TURN) == Some(turn_id) {
        return Ok(false);
    }
    let owner = items::required_string(&meta, keys::OWNER)?;
    let turn = read::get_item(
        store,
        keys::principal_pk(owner),
        keys::turn_id_sk(turn_id),
        "checking a checkpoint's turn",
    )
    .await?;
    Ok(turn.is_some_and(|t| items::string(&t, keys::STATE) == Some(keys::DONE)))
}

/// Now, in epoch seconds, for the TTL attribute.
fn now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

/// A name part no other save uses: the time and a random number (the standard library's
/// randomly keyed hasher, so no extra dependency is needed).
fn unique_suffix() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let random = RandomState::new().hash_one(nanos);
    format!("{nanos:x}-{random:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_save_names_a_new_object() {
        let a = keys::checkpoint_object_key("ep-1", "t-1", &unique_suffix());
        let b = keys::checkpoint_object_key("ep-1", "t-1", &unique_suffix());
        assert_ne!(a, b);
        assert!(a.starts_with("bodies/ep-1/t-1/checkpoint-"), "{a}");
    }
}
