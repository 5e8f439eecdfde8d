//! Reads: episode metadata, the last turns, the turns after one, one body, one picture.
//! Every read is strongly consistent (read-your-writes, D-24) and checks ownership: another
//! principal's episode is "not found" (D-30).

use std::collections::HashMap;

use aws_sdk_dynamodb::operation::query::QueryOutput;
use aws_sdk_dynamodb::types::AttributeValue;
use baton_core::Principal;
use baton_core::picture::MediaType;
use baton_core::ports::store::{EpisodeMeta, StoreError, StoredPicture};
use baton_core::turn::TurnRecord;

use super::config::DynamoStore;
use super::items::{self, Item};
use super::{bodies, error, keys};

/// One item by key, strongly consistent (1 GetItem).
pub(crate) async fn get_item(
    store: &DynamoStore,
    pk: String,
    sk: String,
    doing: &'static str,
) -> Result<Option<Item>, StoreError> {
    if !keys::fits(&pk, &sk) {
        // No such key can have been written.
        return Ok(None);
    }
    let output = store
        .dynamodb
        .get_item()
        .table_name(store.config.table())
        .key(keys::PK, AttributeValue::S(pk))
        .key(keys::SK, AttributeValue::S(sk))
        .consistent_read(true)
        .send()
        .await
        .map_err(|e| error::sdk(doing, &e))?;
    Ok(output.item)
}

/// The META item of an episode, whoever owns it.
pub(crate) async fn meta_item(
    store: &DynamoStore,
    episode_id: &str,
    doing: &'static str,
) -> Result<Option<Item>, StoreError> {
    get_item(
        store,
        keys::episode_pk(episode_id),
        keys::META.to_owned(),
        doing,
    )
    .await
}

/// Episode metadata (1 GetItem).
pub(crate) async fn episode(
    store: &DynamoStore,
    principal: &Principal,
    episode_id: &str,
) -> Result<EpisodeMeta, StoreError> {
    let item = meta_item(store, episode_id, "reading an episode").await?;
    episode_meta(store, item.as_ref(), principal, episode_id).await
}

/// Decodes a META item owned by `principal` with its whole state: when the state is kept
/// in S3 (too large for the item), 1 GetObject more. An object the bucket's lifecycle
/// rule expired reads as an empty state, as its contents would have expired by then.
pub(crate) async fn episode_meta(
    store: &DynamoStore,
    item: Option<&Item>,
    principal: &Principal,
    episode_id: &str,
) -> Result<EpisodeMeta, StoreError> {
    let mut meta = items::episode_meta(item, principal, episode_id)?;
    let Some(object_key) = item.and_then(|i| items::string(i, keys::STATE_S3_KEY)) else {
        return Ok(meta);
    };
    match bodies::get_object(
        store,
        object_key,
        "reading a large episode state",
        "an episode state object",
    )
    .await?
    {
        Some(text) => {
            meta.state = serde_json::from_str(&text)
                .map_err(|e| error::undecodable("an episode state", &e))?;
        }
        None => tracing::warn!(
            key = object_key,
            "journal: an episode state's object is gone; read as empty"
        ),
    }
    Ok(meta)
}

/// The last `limit` turns, oldest first: one descending Query over `META ..= TURN#~`
/// (more only past 1 MB of turns). The range ends at META, so an episode with fewer
/// turns than asked, or none, also yields its META: every item carries `owner`, which is
/// how ownership is checked without a second request.
pub(crate) async fn turns(
    store: &DynamoStore,
    principal: &Principal,
    episode_id: &str,
    limit: usize,
) -> Result<Vec<TurnRecord>, StoreError> {
    let pk = keys::episode_pk(episode_id);
    if !keys::fits(&pk, keys::TURN_MAX) {
        return Err(StoreError::NotFound);
    }
    // At least one item, so that `limit == 0` still checks the episode exists and is theirs.
    let page_limit = i32::try_from(limit.max(1)).unwrap_or(i32::MAX);
    let mut records = Vec::new();
    let mut owner_checked = false;
    let mut start = None;
    loop {
        let output = turn_page(store, &pk, keys::META, false, page_limit, start.take()).await?;
        for item in output.items.unwrap_or_default() {
            if !items::owned_by(&item, principal) {
                // Items of one episode share their owner: the first decides.
                return Err(StoreError::NotFound);
            }
            owner_checked = true;
            if items::string(&item, keys::SK) == Some(keys::META) {
                // The range's low end: every turn has been read.
                records.reverse();
                return Ok(records);
            }
            if records.len() < limit {
                records.push(items::turn_record(&item)?);
            }
        }
        match output.last_evaluated_key {
            Some(key) if records.len() < limit => start = Some(key),
            _ => break,
        }
    }
    if !owner_checked {
        return Err(StoreError::NotFound);
    }
    records.reverse();
    Ok(records)
}

/// The highest seq a `TURN#` sort key orders correctly (ten digits).
const MAX_SORTABLE_SEQ: u64 = 9_999_999_999;

/// Up to `limit` turns after `after_seq`, oldest first: one ascending Query over
/// `TURN#<after_seq + 1> ..= TURN#~` (more only past 1 MB of turns). Turns carry `owner`,
/// so the first one read checks ownership; when none is read, 1 GetItem of META tells an
/// episode with no such turns from one that is not the caller's.
pub(crate) async fn turns_after(
    store: &DynamoStore,
    principal: &Principal,
    episode_id: &str,
    after_seq: u64,
    limit: usize,
) -> Result<Vec<TurnRecord>, StoreError> {
    let pk = keys::episode_pk(episode_id);
    if !keys::fits(&pk, keys::TURN_MAX) {
        return Err(StoreError::NotFound);
    }
    // Past ten digits a key would sort among the early turns; no turn is numbered there.
    let first = after_seq
        .checked_add(1)
        .filter(|seq| *seq <= MAX_SORTABLE_SEQ);
    let mut records = Vec::new();
    if let Some(first) = first.filter(|_| limit > 0) {
        let page_limit = i32::try_from(limit).unwrap_or(i32::MAX);
        let mut start = None;
        loop {
            let first_sk = keys::turn_sk(first);
            let output = turn_page(store, &pk, &first_sk, true, page_limit, start.take()).await?;
            for item in output.items.unwrap_or_default() {
                if !items::owned_by(&item, principal) {
                    // Items of one episode share their owner.
                    return Err(StoreError::NotFound);
                }
                if records.len() < limit {
                    records.push(items::turn_record(&item)?);
                }
            }
            match output.last_evaluated_key {
                Some(key) if records.len() < limit => start = Some(key),
                _ => break,
            }
        }
    }
    if records.is_empty() {
        // Nothing read to check ownership on: the episode itself says.
        let meta = meta_item(store, episode_id, "reading turns").await?;
        if !meta.is_some_and(|m| items::owned_by(&m, principal)) {
            return Err(StoreError::NotFound);
        }
    }
    Ok(records)
}

/// One page of an episode's items from sort key `low` to the last turn, consistent,
/// ascending (`forward`) or descending: the one Query both turn reads page through.
async fn turn_page(
    store: &DynamoStore,
    pk: &str,
    low: &str,
    forward: bool,
    page_limit: i32,
    start: Option<HashMap<String, AttributeValue>>,
) -> Result<QueryOutput, StoreError> {
    store
        .dynamodb
        .query()
        .table_name(store.config.table())
        .key_condition_expression("#pk = :pk AND #sk BETWEEN :low AND :turn_max")
        .expression_attribute_names("#pk", keys::PK)
        .expression_attribute_names("#sk", keys::SK)
        .expression_attribute_values(":pk", AttributeValue::S(pk.to_owned()))
        .expression_attribute_values(":low", items::s(low))
        .expression_attribute_values(":turn_max", items::s(keys::TURN_MAX))
        .scan_index_forward(forward)
        .consistent_read(true)
        .limit(page_limit)
        .set_exclusive_start_key(start)
        .send()
        .await
        .map_err(|e| error::sdk("reading turns", &e))
}

/// One body (1 GetItem, plus 1 S3 GetObject when it was stored in S3).
pub(crate) async fn body(
    store: &DynamoStore,
    principal: &Principal,
    episode_id: &str,
    key: &str,
) -> Result<serde_json::Value, StoreError> {
    let item = get_item(
        store,
        keys::episode_pk(episode_id),
        keys::body_sk(key),
        "reading a body",
    )
    .await?;
    let Some(item) = item.filter(|i| items::owned_by(i, principal)) else {
        return Err(StoreError::NotFound);
    };
    let text = if let Some(json) = items::string(&item, keys::JSON) {
        json.to_owned()
    } else if let Some(object_key) = items::string(&item, keys::S3_KEY) {
        bodies::get(store, object_key).await?
    } else {
        return Err(error::undecodable(
            "a body item",
            &"neither json nor s3_key",
        ));
    };
    serde_json::from_str(&text).map_err(|e| error::undecodable("a body", &e))
}

/// One picture (1 GetItem of its item, which only a commit that succeeded wrote, then 1
/// GetObject).
pub(crate) async fn picture(
    store: &DynamoStore,
    principal: &Principal,
    episode_id: &str,
    sha256: &str,
) -> Result<StoredPicture, StoreError> {
    let item = get_item(
        store,
        keys::episode_pk(episode_id),
        keys::picture_sk(sha256),
        "reading a picture",
    )
    .await?;
    let Some(item) = item.filter(|i| items::owned_by(i, principal)) else {
        return Err(StoreError::NotFound);
    };
    let media_type = items::required_string(&item, keys::MEDIA_TYPE)?;
    let media_type = MediaType::parse(media_type)
        .ok_or_else(|| error::undecodable("a picture's media type", &media_type))?;
    let object_key = items::required_string(&item, keys::S3_KEY)?;
    let bytes = bodies::get_bytes(store, object_key, "reading a picture", "a picture object")
        .await?
        .ok_or_else(|| error::undecodable("a picture object (missing)", &object_key))?;
    Ok(StoredPicture { media_type, bytes })
}
