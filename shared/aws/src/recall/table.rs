//! The DynamoDB requests long-term memory makes, each with its retry of what a batch left
//! unprocessed and its error mapping: reads are strongly consistent, so a save's checks
//! see every committed write.

use std::time::Duration;

use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    CancellationReason, DeleteRequest, KeysAndAttributes, PutRequest, TransactWriteItem,
    WriteRequest,
};
use baton_core::ports::store::StoreError;

use super::DynamoMemory;
use super::error;
use super::items::{Item, s};
use super::keys;

/// BatchWriteItem's limit of requests per call.
const WRITE_BATCH: usize = 25;
/// BatchGetItem's limit of keys per call.
const READ_BATCH: usize = 100;
/// How many times a batch's unprocessed part is sent again before giving up.
const BATCH_ATTEMPTS: u32 = 5;

/// What a transaction came to.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Every write happened.
    Written,
    /// A condition did not hold, or a concurrent transaction held an item: nothing was
    /// written; the caller reads again.
    ConditionFailed,
}

/// Waits a little longer each time a batch comes back with work left (DynamoDB leaves
/// items unprocessed when a partition is busy).
async fn back_off(attempt: u32) {
    tokio::time::sleep(Duration::from_millis(25u64 << attempt.min(5))).await;
}

impl DynamoMemory {
    /// One item (1 GetItem).
    pub(crate) async fn get(
        &self,
        key: Item,
        doing: &'static str,
    ) -> Result<Option<Item>, StoreError> {
        self.dynamodb
            .get_item()
            .table_name(&self.config.table)
            .set_key(Some(key))
            .consistent_read(true)
            .send()
            .await
            .map(|out| out.item)
            .map_err(|e| error::sdk(doing, &e))
    }

    /// The items of `keys` that exist, in no particular order (1 BatchGetItem per 100
    /// keys, more when DynamoDB leaves some unprocessed).
    pub(crate) async fn get_many(
        &self,
        keys: Vec<Item>,
        doing: &'static str,
    ) -> Result<Vec<Item>, StoreError> {
        let mut found = Vec::with_capacity(keys.len());
        for chunk in keys.chunks(READ_BATCH) {
            let mut pending = chunk.to_vec();
            let mut attempt = 0;
            while !pending.is_empty() {
                if attempt == BATCH_ATTEMPTS {
                    return Err(error::gave_up(doing));
                }
                if attempt > 0 {
                    back_off(attempt).await;
                }
                attempt += 1;
                let wanted = KeysAndAttributes::builder()
                    .set_keys(Some(std::mem::take(&mut pending)))
                    .consistent_read(true)
                    .build()
                    .map_err(|e| error::build(&e))?;
                let out = self
                    .dynamodb
                    .batch_get_item()
                    .request_items(&self.config.table, wanted)
                    .send()
                    .await
                    .map_err(|e| error::sdk(doing, &e))?;
                if let Some(mut responses) = out.responses {
                    found.extend(responses.remove(&self.config.table).unwrap_or_default());
                }
                pending = out
                    .unprocessed_keys
                    .and_then(|mut left| left.remove(&self.config.table))
                    .map(|left| left.keys)
                    .unwrap_or_default();
            }
        }
        Ok(found)
    }

    /// Puts `items` (1 BatchWriteItem per 25, more for what comes back unprocessed). Not
    /// atomic: used for postings and deletions whose order alone keeps them safe.
    pub(crate) async fn put_many(
        &self,
        items: Vec<Item>,
        doing: &'static str,
    ) -> Result<(), StoreError> {
        let requests = items
            .into_iter()
            .map(|item| {
                PutRequest::builder()
                    .set_item(Some(item))
                    .build()
                    .map(|put| WriteRequest::builder().put_request(put).build())
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| error::build(&e))?;
        self.write_many(requests, doing).await
    }

    /// Deletes the items of `keys` (as [`DynamoMemory::put_many`]).
    pub(crate) async fn delete_many(
        &self,
        keys: Vec<Item>,
        doing: &'static str,
    ) -> Result<(), StoreError> {
        let requests = keys
            .into_iter()
            .map(|key| {
                DeleteRequest::builder()
                    .set_key(Some(key))
                    .build()
                    .map(|delete| WriteRequest::builder().delete_request(delete).build())
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| error::build(&e))?;
        self.write_many(requests, doing).await
    }

    async fn write_many(
        &self,
        requests: Vec<WriteRequest>,
        doing: &'static str,
    ) -> Result<(), StoreError> {
        for chunk in requests.chunks(WRITE_BATCH) {
            let mut pending = chunk.to_vec();
            let mut attempt = 0;
            while !pending.is_empty() {
                if attempt == BATCH_ATTEMPTS {
                    return Err(error::gave_up(doing));
                }
                if attempt > 0 {
                    back_off(attempt).await;
                }
                attempt += 1;
                let out = self
                    .dynamodb
                    .batch_write_item()
                    .request_items(&self.config.table, std::mem::take(&mut pending))
                    .send()
                    .await
                    .map_err(|e| error::sdk(doing, &e))?;
                pending = out
                    .unprocessed_items
                    .and_then(|mut left| left.remove(&self.config.table))
                    .unwrap_or_default();
            }
        }
        Ok(())
    }

    /// Every item of the principal's partition whose sort key starts with `prefix`, with
    /// the attributes `projection` names (1 Query per MB).
    pub(crate) async fn query_prefix(
        &self,
        partition: String,
        prefix: String,
        projection: &[&str],
        doing: &'static str,
    ) -> Result<Vec<Item>, StoreError> {
        let mut query = self
            .dynamodb
            .query()
            .table_name(&self.config.table)
            .key_condition_expression("#pk = :pk AND begins_with(#sk, :prefix)")
            .expression_attribute_names("#pk", keys::PK)
            .expression_attribute_names("#sk", keys::SK)
            .expression_attribute_values(":pk", s(partition))
            .expression_attribute_values(":prefix", s(prefix))
            .consistent_read(true);
        if !projection.is_empty() {
            let mut names = Vec::with_capacity(projection.len() + 1);
            for (i, name) in std::iter::once(&keys::SK).chain(projection).enumerate() {
                let alias = format!("#p{i}");
                query = query.expression_attribute_names(&alias, *name);
                names.push(alias);
            }
            query = query.projection_expression(names.join(", "));
        }
        query
            .into_paginator()
            .items()
            .send()
            .collect::<Result<Vec<_>, _>>()
            .await
            .map_err(|e| error::sdk(doing, &e))
    }

    /// Sends `items` as one all-or-nothing transaction (1 TransactWriteItems; the SDK's
    /// idempotency token keeps its own retries from applying it twice).
    pub(crate) async fn transact(
        &self,
        items: Vec<TransactWriteItem>,
        doing: &'static str,
    ) -> Result<Outcome, StoreError> {
        let err = match self
            .dynamodb
            .transact_write_items()
            .set_transact_items(Some(items))
            .send()
            .await
        {
            Ok(_) => return Ok(Outcome::Written),
            Err(err) => err,
        };
        let Some(TransactWriteItemsError::TransactionCanceledException(cancelled)) =
            err.as_service_error()
        else {
            return Err(error::sdk(doing, &err));
        };
        let reasons = cancelled.cancellation_reasons();
        let other = reasons.iter().any(|r| {
            r.code().is_some_and(|c| {
                !matches!(c, "ConditionalCheckFailed" | "TransactionConflict" | "None")
            })
        });
        if other {
            let codes: Vec<Option<&str>> = reasons.iter().map(CancellationReason::code).collect();
            return Err(error::cancelled(doing, &codes));
        }
        Ok(Outcome::ConditionFailed)
    }
}
