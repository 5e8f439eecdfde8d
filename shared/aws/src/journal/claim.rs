//! Claiming a turn (D-25, D-26) and releasing a claim.
//!
//! A claim is one transaction of two writes:
//! - the TURN-ID item `PR#<principal>` / `TID#<turn_id>`, put as `claimed` if it does not
//!   exist or holds only a dead claim (lease over, or past its TTL);
//! - the META item: put for a new episode (if the id is free), or updated with the lease
//!   if the caller owns the episode and its lease is free or over.
//!
//! When the transaction is cancelled, DynamoDB returns the failing items as they were
//! (`ReturnValuesOnConditionCheckFailure = ALL_OLD`), which tells every answer apart
//! without another request: a `done` TURN-ID is a replay (`Completed`, whose record is then
//! read), a live `claimed` one is `InFlight`; a META that exists and is the caller's is
//! `Busy`, one that is missing or another's is `NotFound`; a new episode's taken id is a
//! `Conflict`.

use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{
    Put, ReturnValue, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};
use baton_core::ports::store::{Claim, ClaimRequest, EpisodeMeta, StoreError};
use baton_core::turn::EpisodeState;

use super::config::DynamoStore;
use super::items::{self, Item, n, s};
use super::transact::{self, Outcome, build_error};
use super::{error, keys, read};

/// How long an abandoned claim's TURN-ID item outlives its lease before TTL removes it.
const CLAIM_TTL_GRACE_S: u64 = 86_400;

/// Claims a turn: 1 TransactWriteItems for a new episode; 1 TransactWriteItems and 1
/// GetItem (the episode as of now) for an existing one; plus 1 GetItem of the stored record
/// for a replay, or one more claim on its own episode for an interrupted turn sent again
/// without one.
pub(crate) async fn claim(store: &DynamoStore, req: &ClaimRequest) -> Result<Claim, StoreError> {
    claim_on(store, req, true).await
}

/// [`claim`], restarting a dead claim of this turn id on its episode if `may_restart`.
async fn claim_on(
    store: &DynamoStore,
    req: &ClaimRequest,
    may_restart: bool,
) -> Result<Claim, StoreError> {
    let principal = req.principal.as_str();
    let episode_id = req.episode_id.as_deref().unwrap_or(&req.new_episode_id);
    let turn_id_key = (
        keys::principal_pk(principal),
        keys::turn_id_sk(&req.turn_id),
    );
    let episode_pk = keys::episode_pk(episode_id);
    if !keys::fits(&turn_id_key.0, &turn_id_key.1) || !keys::fits(&episode_pk, keys::META) {
        return Err(error::refused(
            "the turn id or episode id is too long to be stored",
        ));
    }
    let lease_expires_ms = req.now_ms.saturating_add(req.lease_ms);

    let mut turn_id_put = Put::builder()
        .table_name(store.config.table())
        .item(keys::PK, s(turn_id_key.0))
        .item(keys::SK, s(turn_id_key.1))
        .item(keys::EPISODE_ID, s(episode_id))
        .item(keys::STATE, s(keys::CLAIMED))
        .item(keys::FINGERPRINT, s(&req.fingerprint))
        .item(keys::LEASE_EXPIRES_MS, n(lease_expires_ms))
        .item(
            keys::EXPIRES_AT,
            n((lease_expires_ms / 1_000).saturating_add(CLAIM_TTL_GRACE_S)),
        )
        .expression_attribute_names("#pk", keys::PK)
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
    turn_id_put = match &req.episode_id {
        // A turn id seen before comes back with its item: replay, in flight, mismatch, or
        // a dead claim restarted on its own episode (a second request).
        None => turn_id_put.condition_expression("attribute_not_exists(#pk)"),
        // A dead claim of this request on this episode is taken over in the same write.
        Some(_) => turn_id_put
            .condition_expression(
                "attribute_not_exists(#pk) OR (#state = :claimed AND \
                 (#lease_expires_ms <= :now_ms OR #expires_at <= :now_s) AND \
                 #episode_id = :episode AND \
                 (attribute_not_exists(#fingerprint) OR #fingerprint = :fingerprint))",
            )
            .expression_attribute_names("#state", keys::STATE)
            .expression_attribute_names("#lease_expires_ms", keys::LEASE_EXPIRES_MS)
            .expression_attribute_names("#expires_at", keys::EXPIRES_AT)
            .expression_attribute_names("#episode_id", keys::EPISODE_ID)
            .expression_attribute_names("#fingerprint", keys::FINGERPRINT)
            .expression_attribute_values(":claimed", s(keys::CLAIMED))
            .expression_attribute_values(":now_ms", n(req.now_ms))
            .expression_attribute_values(":now_s", n(req.now_ms / 1_000))
            .expression_attribute_values(":episode", s(episode_id))
            .expression_attribute_values(":fingerprint", s(&req.fingerprint)),
    };
    let turn_id_put = turn_id_put.build().map_err(build_error)?;

    let new_meta = req.episode_id.is_none().then(|| EpisodeMeta {
        episode_id: episode_id.to_owned(),
        owner: req.principal.clone(),
        version: 0,
        created_ms: req.now_ms,
        updated_ms: req.now_ms,
        summary: None,
        state: EpisodeState::default(),
    });
    let meta_write = match &new_meta {
        Some(meta) => TransactWriteItem::builder()
            .put(new_meta_put(store, meta, &req.turn_id, lease_expires_ms)?)
            .build(),
        None => TransactWriteItem::builder()
            .update(lease_update(store, req, episode_pk, lease_expires_ms)?)
            .build(),
    };
    let writes = vec![
        TransactWriteItem::builder().put(turn_id_put).build(),
        meta_write,
    ];

    match transact::write(store, writes, "claiming a turn").await? {
        Outcome::Written => match new_meta {
            Some(meta) => Ok(Claim::Claimed(meta)),
            None => {
                let item = read::meta_item(store, episode_id, "reading a claimed episode").await?;
                read::episode_meta(store, item.as_ref(), &req.principal, episode_id)
                    .await
                    .map(Claim::Claimed)
            }
        },
        Outcome::Cancelled(reasons) => {
            // A failed condition comes with the item as it was, or none when there was
            // no item (DynamoDB Local 3.3 does this too, so no read is needed here).
            if transact::condition_failed(reasons.first()) {
                let item = transact::old_item(reasons.first());
                return turn_id_taken(store, req, item, may_restart).await;
            }
            if transact::condition_failed(reasons.get(1)) {
                if req.episode_id.is_none() {
                    return Err(StoreError::Conflict);
                }
                return match transact::old_item(reasons.get(1)) {
                    Some(meta) if items::owned_by(&meta, &req.principal) => Ok(Claim::Busy),
                    _ => Err(StoreError::NotFound),
                };
            }
            Err(error::cancelled(
                "claiming a turn",
                &transact::codes(&reasons),
            ))
        }
    }
}

/// The META put that starts an episode, holding the lease, if its id is free.
fn new_meta_put(
    store: &DynamoStore,
    meta: &EpisodeMeta,
    turn_id: &str,
    lease_expires_ms: u64,
) -> Result<Put, StoreError> {
    Put::builder()
        .table_name(store.config.table())
        .item(keys::PK, s(keys::episode_pk(&meta.episode_id)))
        .item(keys::SK, s(keys::META))
        .item(keys::OWNER, s(meta.owner.as_str()))
        .item(keys::VERSION, n(meta.version))
        .item(keys::CREATED_MS, n(meta.created_ms))
        .item(keys::UPDATED_MS, n(meta.updated_ms))
        .item(
            keys::STATE,
            s(items::encode(&meta.state, "an episode state")?),
        )
        .item(keys::LEASE_TURN, s(turn_id))
        .item(keys::LEASE_PRINCIPAL, s(meta.owner.as_str()))
        .item(keys::LEASE_EXPIRES_MS, n(lease_expires_ms))
        .condition_expression("attribute_not_exists(#pk)")
        .expression_attribute_names("#pk", keys::PK)
        .build()
        .map_err(build_error)
}

/// The META update that takes the lease, if the caller owns the episode and the lease is
/// free or over.
fn lease_update(
    store: &DynamoStore,
    req: &ClaimRequest,
    episode_pk: String,
    lease_expires_ms: u64,
) -> Result<Update, StoreError> {
    Update::builder()
        .table_name(store.config.table())
        .key(keys::PK, s(episode_pk))
        .key(keys::SK, s(keys::META))
        .update_expression(
            "SET #lease_turn = :turn, #lease_principal = :principal, \
             #lease_expires_ms = :lease_expires_ms",
        )
        .condition_expression(
            "#owner = :principal AND \
             (attribute_not_exists(#lease_expires_ms) OR #lease_expires_ms <= :now_ms)",
        )
        .expression_attribute_names("#owner", keys::OWNER)
        .expression_attribute_names("#lease_turn", keys::LEASE_TURN)
        .expression_attribute_names("#lease_principal", keys::LEASE_PRINCIPAL)
        .expression_attribute_names("#lease_expires_ms", keys::LEASE_EXPIRES_MS)
        .expression_attribute_values(":turn", s(&req.turn_id))
        .expression_attribute_values(":principal", s(req.principal.as_str()))
        .expression_attribute_values(":lease_expires_ms", n(lease_expires_ms))
        .expression_attribute_values(":now_ms", n(req.now_ms))
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
        .build()
        .map_err(build_error)
}

/// The answer when the turn id's item refused the claim: a replay, a running duplicate, a
/// different request under the same id, or an interrupted turn restarted on its episode.
async fn turn_id_taken(
    store: &DynamoStore,
    req: &ClaimRequest,
    item: Option<Item>,
    may_restart: bool,
) -> Result<Claim, StoreError> {
    let Some(item) = item else {
        // This condition only fails on an existing item, which DynamoDB returns; without
        // one, something is off: let the caller retry.
        return Err(StoreError::Unavailable(error::BUSY.into()));
    };
    match items::string(&item, keys::STATE) {
        Some(keys::DONE) => {
            let episode_id = items::required_string(&item, keys::EPISODE_ID)?;
            let seq = items::required_number(&item, keys::SEQ)?;
            let turn = read::get_item(
                store,
                keys::episode_pk(episode_id),
                keys::turn_sk(seq),
                "reading a completed turn",
            )
            .await?
            .ok_or_else(|| error::undecodable("a completed turn", &"missing"))?;
            let record = items::turn_record(&turn)?;
            match req.mismatch(&record.episode_id, &record.fingerprint) {
                Some(mismatch) => Ok(Claim::Mismatch(mismatch)),
                None => Ok(Claim::Completed(Box::new(record))),
            }
        }
        Some(keys::CLAIMED) => {
            let episode_id = items::required_string(&item, keys::EPISODE_ID)?;
            let fingerprint = items::string(&item, keys::FINGERPRINT).unwrap_or_default();
            if let Some(mismatch) = req.mismatch(episode_id, fingerprint) {
                return Ok(Claim::Mismatch(mismatch));
            }
            if claim_live(&item, req.now_ms)? {
                return Ok(Claim::InFlight);
            }
            if !may_restart || req.episode_id.is_some() {
                // Taken over by another claim in between: let the caller retry.
                return Err(StoreError::Unavailable(error::BUSY.into()));
            }
            let restart = ClaimRequest {
                episode_id: Some(episode_id.to_owned()),
                ..req.clone()
            };
            Box::pin(claim_on(store, &restart, false)).await
        }
        _ => Err(StoreError::Unavailable(error::BUSY.into())),
    }
}

/// Whether a `claimed` TURN-ID item still holds at `now_ms`: its lease is running and its
/// TTL has not passed (DynamoDB deletes expired items late, so reads check it themselves).
pub(crate) fn claim_live(item: &Item, now_ms: u64) -> Result<bool, StoreError> {
    let lease_live = items::number(item, keys::LEASE_EXPIRES_MS)?.is_some_and(|e| e > now_ms);
    let ttl_live = items::number(item, keys::EXPIRES_AT)?.is_none_or(|e| e > now_ms / 1_000);
    Ok(lease_live && ttl_live)
}

/// Releases the claim `turn_id` holds on `episode_id`: 1 UpdateItem clearing META's lease
/// if it is this turn's (which also returns the owner), then 1 UpdateItem ending the
/// TURN-ID item's lease if it still claims this episode. Without the episode, nothing is sent beyond the
/// first request. Safe to repeat: a release whose second request failed finishes on retry.
pub(crate) async fn release(
    store: &DynamoStore,
    episode_id: &str,
    turn_id: &str,
) -> Result<(), StoreError> {
    let episode_pk = keys::episode_pk(episode_id);
    let turn_id_sk = keys::turn_id_sk(turn_id);
    if !keys::fits(&episode_pk, &turn_id_sk) {
        // Such a claim can never have been made.
        return Ok(());
    }
    let result = store
        .dynamodb
        .update_item()
        .table_name(store.config.table())
        .key(keys::PK, s(episode_pk))
        .key(keys::SK, s(keys::META))
        .update_expression("REMOVE #lease_turn, #lease_principal, #lease_expires_ms")
        .condition_expression("#lease_turn = :turn")
        .expression_attribute_names("#lease_turn", keys::LEASE_TURN)
        .expression_attribute_names("#lease_principal", keys::LEASE_PRINCIPAL)
        .expression_attribute_names("#lease_expires_ms", keys::LEASE_EXPIRES_MS)
        .expression_attribute_values(":turn", s(turn_id))
        .return_values(ReturnValue::AllOld)
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
        .send()
        .await;
    let meta = match result {
        Ok(output) => output.attributes,
        Err(err) => match err.as_service_error() {
            Some(UpdateItemError::ConditionalCheckFailedException(failed)) => failed.item.clone(),
            _ => return Err(error::sdk("releasing a turn", &err)),
        },
    };
    // No META: no such episode, so no claim on it either.
    let Some(owner) = meta.as_ref().and_then(|m| items::string(m, keys::OWNER)) else {
        return Ok(());
    };
    let principal_pk = keys::principal_pk(owner);
    if !keys::fits(&principal_pk, &turn_id_sk) {
        return Ok(());
    }
    // The TURN-ID item stays, its lease ended: the turn id stays bound to its episode, so
    // the same request sent again without an episode id runs there (TTL removes the item
    // a day later, as any dead claim's).
    let ended = store
        .dynamodb
        .update_item()
        .table_name(store.config.table())
        .key(keys::PK, s(principal_pk))
        .key(keys::SK, s(turn_id_sk))
        .update_expression("SET #lease_expires_ms = :zero")
        .condition_expression("#state = :claimed AND #episode_id = :episode")
        .expression_attribute_names("#lease_expires_ms", keys::LEASE_EXPIRES_MS)
        .expression_attribute_names("#state", keys::STATE)
        .expression_attribute_names("#episode_id", keys::EPISODE_ID)
        .expression_attribute_values(":zero", n(0))
        .expression_attribute_values(":claimed", s(keys::CLAIMED))
        .expression_attribute_values(":episode", s(episode_id))
        .send()
        .await;
    match ended {
        Ok(_) => Ok(()),
        // Done, claimed elsewhere, or gone: nothing of this claim is live.
        Err(err)
            if err
                .as_service_error()
                .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
        {
            Ok(())
        }
        Err(err) => Err(error::sdk("releasing a turn id", &err)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn claimed(lease_expires_ms: u64, expires_at: u64) -> Item {
        HashMap::from([
            (keys::STATE.into(), s(keys::CLAIMED)),
            (keys::LEASE_EXPIRES_MS.into(), n(lease_expires_ms)),
            (keys::EXPIRES_AT.into(), n(expires_at)),
        ])
    }

    #[test]
    fn a_claim_is_live_until_its_lease_ends() {
        let item = claimed(31_000, 1_000_000);
        assert!(claim_live(&item, 30_999).unwrap());
        assert!(!claim_live(&item, 31_000).unwrap());
    }

    #[test]
    fn a_claim_past_its_ttl_is_dead_even_with_a_running_lease() {
        let item = claimed(u64::MAX, 100);
        assert!(claim_live(&item, 99_999).unwrap());
        assert!(!claim_live(&item, 100_000).unwrap());
    }
}
