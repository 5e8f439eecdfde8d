//! Reading one memory, listing them, and the principal's own setting.

use aws_sdk_dynamodb::types::AttributeValue;
use baton_core::Principal;
use baton_core::ports::memory::Status;
use baton_core::ports::store::StoreError;
use baton_core::recall::{Memory, MemoryFilter, MemoryId};

use super::items::{self, Item, s};
use super::{DynamoMemory, error, keys};

/// Memory items a status check reads per page while looking for a current one.
const PEEK: i32 = 25;

/// The setting an item holds.
fn setting_of(item: &Item) -> Result<Option<bool>, StoreError> {
    match item.get(keys::ENABLED) {
        Some(AttributeValue::Bool(on)) => Ok(Some(*on)),
        _ => Err(error::undecodable("a memory setting", &"not a boolean")),
    }
}

impl DynamoMemory {
    /// One memory, current or history (1 GetItem).
    pub(crate) async fn one(
        &self,
        principal: &Principal,
        id: &MemoryId,
    ) -> Result<Option<Memory>, StoreError> {
        Ok(self
            .stored(principal, id, "reading a memory")
            .await?
            .map(|stored| stored.memory))
    }

    /// The memories `filter` admits, newest first, at most `limit` (1 Query per MB of
    /// the principal's memories: there is no index by time, and a principal holds at most
    /// their cap of current ones plus their history).
    pub(crate) async fn listed(
        &self,
        principal: &Principal,
        filter: &MemoryFilter,
        limit: usize,
    ) -> Result<Vec<Memory>, StoreError> {
        let found = self
            .query_prefix(
                keys::partition(principal.as_str()),
                keys::ITEM_PREFIX.to_owned(),
                &[],
                "listing memories",
            )
            .await?;
        let mut out = Vec::new();
        for item in &found {
            if let Some(stored) = items::stored(item, principal)?
                && filter.admits(&stored.memory)
            {
                out.push(stored.memory);
            }
        }
        out.sort_by(|a, b| b.created_ms.cmp(&a.created_ms).then(a.id.cmp(&b.id)));
        out.truncate(limit);
        Ok(out)
    }

    /// The setting and whether a current memory is held: 1 BatchGetItem (the setting and
    /// the count), and when the count is not zero 1 Query of a few memory items at a time
    /// until a current one shows (usually the first), rather than a list of them all.
    pub(crate) async fn glance(
        &self,
        principal: &Principal,
        now_ms: u64,
    ) -> Result<Status, StoreError> {
        let doing = "reading a memory status";
        let wanted = vec![
            items::key(principal, keys::SETTING.to_owned()),
            items::key(principal, keys::COUNT.to_owned()),
        ];
        let mut status = Status::default();
        let mut live = 0;
        for item in self.get_many(wanted, doing).await? {
            match items::string(&item, keys::SK) {
                Some(keys::SETTING) => status.setting = setting_of(&item)?,
                Some(keys::COUNT) => live = items::signed(&item, keys::LIVE)?.unwrap_or(0),
                _ => {}
            }
        }
        if status.setting == Some(false) || live <= 0 {
            return Ok(status);
        }
        let mut pages = self
            .dynamodb
            .query()
            .table_name(&self.config.table)
            .key_condition_expression("#pk = :pk AND begins_with(#sk, :prefix)")
            .filter_expression(
                "attribute_not_exists(#replaced_by) AND \
                 (attribute_not_exists(#expires_ms) OR #expires_ms > :now)",
            )
            .expression_attribute_names("#pk", keys::PK)
            .expression_attribute_names("#sk", keys::SK)
            .expression_attribute_names("#replaced_by", keys::REPLACED_BY)
            .expression_attribute_names("#expires_ms", keys::EXPIRES_MS)
            .expression_attribute_values(":pk", s(keys::partition(principal.as_str())))
            .expression_attribute_values(":prefix", s(keys::ITEM_PREFIX))
            .expression_attribute_values(":now", items::n(now_ms))
            .projection_expression("#sk")
            .limit(PEEK)
            .consistent_read(true)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| error::sdk(doing, &e))?;
            if page.count() > 0 {
                status.holds_any = true;
                break;
            }
        }
        Ok(status)
    }

    /// The principal's own setting (1 GetItem).
    pub(crate) async fn own_setting(
        &self,
        principal: &Principal,
    ) -> Result<Option<bool>, StoreError> {
        let item = self
            .get(
                items::key(principal, keys::SETTING.to_owned()),
                "reading a memory setting",
            )
            .await?;
        match item {
            Some(item) => setting_of(&item),
            None => Ok(None),
        }
    }

    /// Sets (1 PutItem) or clears (1 DeleteItem) the principal's own setting.
    pub(crate) async fn put_setting(
        &self,
        principal: &Principal,
        enabled: Option<bool>,
    ) -> Result<(), StoreError> {
        let doing = "saving a memory setting";
        let key = items::key(principal, keys::SETTING.to_owned());
        match enabled {
            Some(on) => {
                let mut item: Item = key;
                item.insert(keys::OWNER.to_owned(), s(principal.as_str()));
                item.insert(keys::ENABLED.to_owned(), AttributeValue::Bool(on));
                self.dynamodb
                    .put_item()
                    .table_name(&self.config.table)
                    .set_item(Some(item))
                    .send()
                    .await
                    .map(drop)
                    .map_err(|e| error::sdk(doing, &e))
            }
            None => {
                // Keyed as the turn function's role allows deletes: under `PR#` only.
                let principal_pk = keys::principal_pk(principal.as_str());
                self.dynamodb
                    .delete_item()
                    .table_name(&self.config.table)
                    .key(keys::PK, s(principal_pk))
                    .key(keys::SK, s(keys::SETTING))
                    .send()
                    .await
                    .map(drop)
                    .map_err(|e| error::sdk(doing, &e))
            }
        }
    }
}
