//! Each specialist's conversation with its upstream chat service (seed 000): the item
//! `EP#<episode>` / `UPSTREAM#<agent id>` with `owner`, `conversation_id`, `expires_ms`,
//! `pending` (the exchange awaiting the user's reply, when there is one) and the TTL
//! attribute `expires_at`.
//!
//! Expiry is the caller's to judge, from `expires_ms`, on every read: DynamoDB's TTL
//! deletes late, and `expires_at` lies a day past `expires_ms` anyway, so that for a day
//! an expired conversation reads as expired (as in the other stores) rather than as none.
//!
//! Reading is 1 strongly consistent GetItem of the item: the item carries its owner, so
//! the principal's own item answers alone. Its owner is its episode's by construction, as
//! for BODY and TURN items: the store creates the item only after checking META, and a
//! refresh needs the item to be the principal's already. Only when it is absent (or not
//! the principal's) does 1 GetItem of META tell "none" from "not found". One BatchGetItem of both would be one round trip every time
//! but would bill both reads on every call, retry unprocessed keys, and need another IAM
//! action; a TransactGetItems bills each read twice. A conversation is read on every turn
//! its specialist answers and is missing only before the first, so the common read is one
//! request and the cheapest.
//!
//! Saving is first 1 PutItem conditioned on the item being there and the principal's: a
//! refresh, the common case (each turn of a conversation refreshes it), one write unit,
//! and it never touches META (no contention with claims and commits). When that condition
//! fails (no item yet, or an item not the principal's), 1 TransactWriteItems puts it with a
//! ConditionCheck that META is the principal's, so nothing is created on an unknown or
//! another's episode; a failed check is "not found".

use aws_sdk_dynamodb::types::{AttributeValue, ConditionCheck, Put, TransactWriteItem};
use baton_core::Principal;
use baton_core::ports::store::StoreError;
use baton_core::ports::upstream::UpstreamConversation;

use super::config::DynamoStore;
use super::items::{self, Item, n, s};
use super::transact::{self, Outcome, build_error};
use super::{error, keys, read};

/// How long an item outlives its conversation's expiry before TTL may remove it.
const UPSTREAM_TTL_GRACE_S: u64 = 86_400;

/// The conversation `agent_id` keeps on the episode, as last saved (1 GetItem; 2 when
/// there is none or the item is not the principal's).
///
/// # Errors
/// `NotFound` for an unknown episode or another's.
pub(crate) async fn conversation(
    store: &DynamoStore,
    principal: &Principal,
    episode_id: &str,
    agent_id: &str,
) -> Result<Option<UpstreamConversation>, StoreError> {
    let doing = "reading an upstream conversation";
    let item = read::get_item(
        store,
        keys::episode_pk(episode_id),
        keys::upstream_sk(agent_id),
        doing,
    )
    .await?;
    if let Some(item) = item.as_ref().filter(|i| items::owned_by(i, principal)) {
        let decoded = decode(item, agent_id);
        if decoded.is_none() {
            // Losing the id only costs a new conversation (with replay); failing would
            // cost the answer.
            tracing::warn!(
                agent = agent_id,
                "journal: an upstream conversation does not decode; treated as none"
            );
        }
        return Ok(decoded);
    }
    // Nothing of the principal's: the episode says whether it is theirs at all.
    let meta = read::meta_item(store, episode_id, doing).await?;
    if !meta.is_some_and(|m| items::owned_by(&m, principal)) {
        return Err(StoreError::NotFound);
    }
    if item.is_some() {
        tracing::warn!(
            agent = agent_id,
            "journal: an upstream conversation is not its episode owner's; treated as none"
        );
    }
    Ok(None)
}

/// The item's fields as a conversation, if they are what this store writes.
fn decode(item: &Item, agent_id: &str) -> Option<UpstreamConversation> {
    let expires_ms = match item.get(keys::EXPIRES_MS) {
        Some(AttributeValue::N(number)) => number.parse::<u64>().ok()?,
        _ => return None,
    };
    let pending = match item.get(keys::PENDING) {
        None => None,
        Some(AttributeValue::S(pending)) => Some(pending.clone()),
        Some(_) => return None,
    };
    Some(UpstreamConversation {
        agent_id: agent_id.to_owned(),
        conversation_id: items::string(item, keys::CONVERSATION_ID)?.to_owned(),
        expires_ms,
        pending,
    })
}

/// The item as saved: keys, owner, the conversation, and a TTL a day past its expiry
/// (in seconds, rounded up, so DynamoDB never deletes it before it expires).
fn item(
    principal: &Principal,
    pk: String,
    sk: String,
    conversation: &UpstreamConversation,
) -> Item {
    let expires_at = conversation
        .expires_ms
        .div_ceil(1_000)
        .saturating_add(UPSTREAM_TTL_GRACE_S);
    let mut item = Item::from([
        (keys::PK.to_owned(), s(pk)),
        (keys::SK.to_owned(), s(sk)),
        (keys::OWNER.to_owned(), s(principal.as_str())),
        (
            keys::CONVERSATION_ID.to_owned(),
            s(&conversation.conversation_id),
        ),
        (keys::EXPIRES_MS.to_owned(), n(conversation.expires_ms)),
        (keys::EXPIRES_AT.to_owned(), n(expires_at)),
    ]);
    if let Some(pending) = &conversation.pending {
        item.insert(keys::PENDING.to_owned(), s(pending));
    }
    item
}

/// Saves or refreshes the conversation: 1 PutItem when the principal's item is there; 1
/// PutItem and 1 TransactWriteItems otherwise (see the module docs).
///
/// # Errors
/// `NotFound` for an unknown episode or another's (nothing written).
pub(crate) async fn save(
    store: &DynamoStore,
    principal: &Principal,
    episode_id: &str,
    conversation: &UpstreamConversation,
) -> Result<(), StoreError> {
    let doing = "saving an upstream conversation";
    let pk = keys::episode_pk(episode_id);
    let sk = keys::upstream_sk(&conversation.agent_id);
    if !keys::fits(&pk, keys::META) {
        // No episode can have this id.
        return Err(StoreError::NotFound);
    }
    if !keys::fits(&pk, &sk) {
        return Err(error::refused(
            "the specialist's id is too long to keep its conversation",
        ));
    }
    let item = item(principal, pk.clone(), sk, conversation);

    let refreshed = store
        .dynamodb
        .put_item()
        .table_name(store.config.table())
        .set_item(Some(item.clone()))
        .condition_expression("#owner = :principal")
        .expression_attribute_names("#owner", keys::OWNER)
        .expression_attribute_values(":principal", s(principal.as_str()))
        .send()
        .await;
    match refreshed {
        Ok(_) => return Ok(()),
        Err(err)
            if err
                .as_service_error()
                .is_some_and(|e| e.is_conditional_check_failed_exception()) => {}
        Err(err) => return Err(error::sdk(doing, &err)),
    }

    // No item of the principal's yet: create it (or replace one not theirs) only on their
    // episode.
    let check = ConditionCheck::builder()
        .table_name(store.config.table())
        .key(keys::PK, s(pk))
        .key(keys::SK, s(keys::META))
        .condition_expression("#owner = :principal")
        .expression_attribute_names("#owner", keys::OWNER)
        .expression_attribute_values(":principal", s(principal.as_str()))
        .build()
        .map_err(build_error)?;
    let put = Put::builder()
        .table_name(store.config.table())
        .set_item(Some(item))
        .build()
        .map_err(build_error)?;
    let writes = vec![
        TransactWriteItem::builder().condition_check(check).build(),
        TransactWriteItem::builder().put(put).build(),
    ];
    match transact::write(store, writes, doing).await? {
        Outcome::Written => Ok(()),
        Outcome::Cancelled(reasons) if transact::condition_failed(reasons.first()) => {
            // No META, or another's (D-30).
            Err(StoreError::NotFound)
        }
        Outcome::Cancelled(reasons) => Err(error::cancelled(doing, &transact::codes(&reasons))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn principal(id: &str) -> Principal {
        Principal::new(id).unwrap()
    }

    fn kept(expires_ms: u64) -> UpstreamConversation {
        UpstreamConversation {
            agent_id: "support".into(),
            conversation_id: "c-1".into(),
            expires_ms,
            pending: None,
        }
    }

    #[test]
    fn an_item_round_trips_with_a_ttl_a_day_past_its_expiry_in_seconds() {
        let item = item(
            &principal("alice"),
            "EP#ep-1".into(),
            "UPSTREAM#support".into(),
            &kept(5_001),
        );
        assert_eq!(items::string(&item, keys::OWNER), Some("alice"));
        assert_eq!(
            items::number(&item, keys::EXPIRES_AT),
            Ok(Some(6 + 86_400)),
            "rounded up: never deleted before it expires"
        );
        assert_eq!(decode(&item, "support"), Some(kept(5_001)));
        let far = item_of(u64::MAX);
        assert_eq!(decode(&far, "support"), Some(kept(u64::MAX)));
        let waiting = UpstreamConversation {
            pending: Some("task-1".into()),
            ..kept(5_001)
        };
        let with_pending = super::item(
            &principal("alice"),
            "EP#ep-1".into(),
            "UPSTREAM#support".into(),
            &waiting,
        );
        assert_eq!(decode(&with_pending, "support"), Some(waiting));
        let mut bad = with_pending.clone();
        bad.insert(keys::PENDING.to_owned(), n(7));
        assert_eq!(decode(&bad, "support"), None);
    }

    fn item_of(expires_ms: u64) -> Item {
        item(
            &principal("alice"),
            "EP#ep-1".into(),
            "UPSTREAM#support".into(),
            &kept(expires_ms),
        )
    }

    #[test]
    fn a_damaged_item_decodes_to_none_not_a_panic() {
        let damaged = [
            (keys::EXPIRES_MS, s("soon")),
            (keys::EXPIRES_MS, AttributeValue::N("-1".into())),
            (keys::EXPIRES_MS, AttributeValue::N("1.5".into())),
            (keys::CONVERSATION_ID, n(7)),
        ];
        for (name, value) in damaged {
            let mut item = item_of(9_000);
            item.insert(name.to_owned(), value.clone());
            assert_eq!(decode(&item, "support"), None, "{name} = {value:?}");
        }
        for name in [keys::EXPIRES_MS, keys::CONVERSATION_ID] {
            let mut item = item_of(9_000);
            item.remove(name);
            assert_eq!(decode(&item, "support"), None, "without {name}");
        }
    }
}
