//! A principal's account links (D-37): the item `PR#<principal>` / `LINK#<server>` with
//! `owner`, `sealed` (the tokens, sealed before they reach the store) and `updated_ms`.
//! Reading one is 1 GetItem; listing them 1 Query (a page per MB); saving 1 PutItem;
//! revoking 1 DeleteItem, the only item the turn function's role may delete (its partition
//! key is the principal's: the role's condition on `PR#*`).

use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};
use baton_core::Principal;
use baton_core::ports::store::{AccountLink, StoreError};

use super::config::DynamoStore;
use super::items::{self, Item, n, s};
use super::{error, keys, read};

/// The principal's link to `server`, if any (1 GetItem).
pub(crate) async fn link(
    store: &DynamoStore,
    principal: &Principal,
    server: &str,
) -> Result<Option<AccountLink>, StoreError> {
    let item = read::get_item(
        store,
        keys::principal_pk(principal.as_str()),
        keys::link_sk(server),
        "reading an account link",
    )
    .await?;
    Ok(item.as_ref().and_then(|i| decode(i, principal)))
}

/// Every link of the principal, by server (1 Query a page).
pub(crate) async fn links(
    store: &DynamoStore,
    principal: &Principal,
) -> Result<Vec<AccountLink>, StoreError> {
    let found: Vec<Item> = store
        .dynamodb
        .query()
        .table_name(store.config.table())
        .key_condition_expression("#pk = :pk AND begins_with(#sk, :link)")
        .expression_attribute_names("#pk", keys::PK)
        .expression_attribute_names("#sk", keys::SK)
        .expression_attribute_values(":pk", s(keys::principal_pk(principal.as_str())))
        .expression_attribute_values(":link", s(keys::LINK_PREFIX))
        .consistent_read(true)
        .into_paginator()
        .items()
        .send()
        .collect::<Result<Vec<_>, _>>()
        .await
        .map_err(|e| error::sdk("listing account links", &e))?;
    Ok(found.iter().filter_map(|i| decode(i, principal)).collect())
}

/// Saves or replaces the principal's link (1 PutItem).
pub(crate) async fn save(
    store: &DynamoStore,
    principal: &Principal,
    link: &AccountLink,
) -> Result<(), StoreError> {
    let item = Item::from([
        (
            keys::PK.to_owned(),
            s(keys::principal_pk(principal.as_str())),
        ),
        (keys::SK.to_owned(), s(keys::link_sk(&link.server))),
        (keys::OWNER.to_owned(), s(principal.as_str())),
        (keys::SEALED.to_owned(), s(link.sealed.clone())),
        (keys::UPDATED_MS.to_owned(), n(link.updated_ms)),
    ]);
    store
        .dynamodb
        .put_item()
        .table_name(store.config.table())
        .set_item(Some(item))
        .send()
        .await
        .map(drop)
        .map_err(|e| error::sdk("saving an account link", &e))
}

/// Removes the principal's link to `server`; whether there was one (1 DeleteItem).
pub(crate) async fn delete(
    store: &DynamoStore,
    principal: &Principal,
    server: &str,
) -> Result<bool, StoreError> {
    let principal_pk = keys::principal_pk(principal.as_str());
    let removed = store
        .dynamodb
        .delete_item()
        .table_name(store.config.table())
        .key(keys::PK, s(principal_pk))
        .key(keys::SK, s(keys::link_sk(server)))
        .return_values(ReturnValue::AllOld)
        .send()
        .await
        .map_err(|e| error::sdk("removing an account link", &e))?;
    Ok(removed.attributes.is_some_and(|old| !old.is_empty()))
}

/// The item as a link, if it is one of this store's and the principal's.
fn decode(item: &Item, principal: &Principal) -> Option<AccountLink> {
    if !items::owned_by(item, principal) {
        return None;
    }
    let server = items::string(item, keys::SK)?.strip_prefix(keys::LINK_PREFIX)?;
    let updated_ms = match item.get(keys::UPDATED_MS) {
        Some(AttributeValue::N(number)) => number.parse::<u64>().ok()?,
        _ => return None,
    };
    Some(AccountLink {
        server: server.to_owned(),
        sealed: items::string(item, keys::SEALED)?.to_owned(),
        updated_ms,
    })
}
