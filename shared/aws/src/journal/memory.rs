//! Episode memory (design.md §4): saving a compaction's summary and listing the episodes due.
//!
//! A commit marks its episode due (`due_pk` = `DUE`, `compaction_due` = when) on META,
//! which puts it in the sparse index `compaction-due`; the index projects `owner`, so the
//! queue is read with one Query and no read of each episode. Saving a summary is one
//! conditional UpdateItem of META that also removes the mark, so a summary and the mark
//! never disagree, and a turn committed since the compaction read the episode makes it a
//! conflict that changes nothing.
//!
//! Requests: `save_summary` 1 UpdateItem; `due_episodes` 1 Query (one more per further
//! MB of the index, never past `limit` items). The index is eventually consistent: an
//! episode may show up due for a moment after its summary was saved, or not yet after the
//! commit that marked it; the version condition of `save_summary` keeps either harmless.

use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::ReturnValuesOnConditionCheckFailure;
use baton_core::Principal;
use baton_core::memory::EpisodeSummary;
use baton_core::ports::store::{DueEpisode, StoreError};

use super::config::DynamoStore;
use super::items::{self, Item, n, s};
use super::{error, keys};

/// Stores `summary` on META and clears the due mark, if `principal` owns the episode and
/// it is still at `expected_version` (1 UpdateItem).
///
/// # Errors
/// `NotFound` for a missing episode or another's, `Conflict` when its version moved on.
pub(crate) async fn save_summary(
    store: &DynamoStore,
    principal: &Principal,
    episode_id: &str,
    expected_version: u64,
    summary: &EpisodeSummary,
) -> Result<(), StoreError> {
    let pk = keys::episode_pk(episode_id);
    if !keys::fits(&pk, keys::META) {
        return Err(StoreError::NotFound);
    }
    let json = serde_json::to_string(summary).map_err(|e| {
        tracing::warn!(error = %e, "journal: a summary does not serialize");
        StoreError::Unavailable("the summary could not be saved".into())
    })?;
    let result = store
        .dynamodb
        .update_item()
        .table_name(store.config.table())
        .key(keys::PK, s(pk))
        .key(keys::SK, s(keys::META))
        .update_expression("SET #summary = :summary REMOVE #due_pk, #compaction_due")
        .condition_expression("#owner = :principal AND #version = :expected")
        .expression_attribute_names("#summary", keys::SUMMARY)
        .expression_attribute_names("#due_pk", keys::DUE_PK)
        .expression_attribute_names("#compaction_due", keys::COMPACTION_DUE)
        .expression_attribute_names("#owner", keys::OWNER)
        .expression_attribute_names("#version", keys::VERSION)
        .expression_attribute_values(":summary", s(json))
        .expression_attribute_values(":principal", s(principal.as_str()))
        .expression_attribute_values(":expected", n(expected_version))
        // The item as it was tells "not found" from "conflict" without another read.
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
        .send()
        .await;
    let err = match result {
        Ok(_) => return Ok(()),
        Err(err) => err,
    };
    match err.as_service_error() {
        Some(UpdateItemError::ConditionalCheckFailedException(failed)) => {
            match failed.item() {
                Some(meta) if items::owned_by(meta, principal) => Err(StoreError::Conflict),
                // No META (the condition also kept the update from creating one), or
                // another's: not found (D-30).
                _ => Err(StoreError::NotFound),
            }
        }
        _ => Err(error::sdk("saving a summary", &err)),
    }
}

/// Up to `limit` episodes due for compaction, longest due first: a Query of the sparse
/// index, ascending by `compaction_due`.
pub(crate) async fn due_episodes(
    store: &DynamoStore,
    limit: usize,
) -> Result<Vec<DueEpisode>, StoreError> {
    let mut due = Vec::new();
    if limit == 0 {
        // DynamoDB refuses a Limit of 0; nothing was asked for.
        return Ok(due);
    }
    let page_limit = i32::try_from(limit).unwrap_or(i32::MAX);
    let mut start = None;
    loop {
        let output = store
            .dynamodb
            .query()
            .table_name(store.config.table())
            .index_name(keys::COMPACTION_INDEX)
            .key_condition_expression("#due_pk = :due")
            .expression_attribute_names("#due_pk", keys::DUE_PK)
            .expression_attribute_values(":due", s(keys::DUE))
            .scan_index_forward(true)
            .limit(page_limit)
            .set_exclusive_start_key(start.take())
            .send()
            .await
            .map_err(|e| error::sdk("listing episodes due for compaction", &e))?;
        for item in output.items.unwrap_or_default() {
            if due.len() < limit {
                due.push(due_episode(&item)?);
            }
        }
        match output.last_evaluated_key {
            Some(key) if due.len() < limit => start = Some(key),
            _ => break,
        }
    }
    Ok(due)
}

/// Reads one item of the compaction index.
fn due_episode(item: &Item) -> Result<DueEpisode, StoreError> {
    let pk = items::required_string(item, keys::PK)?;
    let episode_id = pk
        .strip_prefix(keys::EPISODE_PREFIX)
        .ok_or_else(|| error::undecodable("a due episode's key", &pk))?;
    let owner = items::required_string(item, keys::OWNER)?;
    Ok(DueEpisode {
        episode_id: episode_id.to_owned(),
        owner: Principal::new(owner).map_err(|e| error::undecodable("an episode owner", &e))?,
        since_ms: items::required_number(item, keys::COMPACTION_DUE)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn index_item(pk: &str, owner: Option<&str>) -> Item {
        let mut item: Item = HashMap::from([
            (keys::PK.into(), s(pk)),
            (keys::SK.into(), s(keys::META)),
            (keys::DUE_PK.into(), s(keys::DUE)),
            (keys::COMPACTION_DUE.into(), n(42)),
        ]);
        if let Some(owner) = owner {
            item.insert(keys::OWNER.into(), s(owner));
        }
        item
    }

    #[test]
    fn an_index_item_names_its_episode_owner_and_time() {
        let due = due_episode(&index_item("EP#ep-1", Some("alice"))).unwrap();
        assert_eq!(due.episode_id, "ep-1");
        assert_eq!(due.owner.as_str(), "alice");
        assert_eq!(due.since_ms, 42);
    }

    #[test]
    fn a_damaged_index_item_is_corrupt_not_a_panic() {
        for item in [
            index_item("PR#alice", Some("alice")),
            index_item("EP#ep-1", None),
            index_item("EP#ep-1", Some("")),
        ] {
            assert!(
                matches!(due_episode(&item), Err(StoreError::Corrupt(_))),
                "{item:?}"
            );
        }
    }
}
