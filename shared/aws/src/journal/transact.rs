//! Sending one `TransactWriteItems` and reading why it was cancelled.

use aws_sdk_dynamodb::error::BuildError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{CancellationReason, TransactWriteItem};
use baton_core::ports::store::StoreError;

use super::config::DynamoStore;
use super::error;
use super::items::Item;

/// The code of a cancellation reason whose condition did not hold.
const CONDITION_FAILED: &str = "ConditionalCheckFailed";

/// What became of a transaction DynamoDB answered.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Every write happened.
    Written,
    /// Nothing was written; one reason per item, in request order.
    Cancelled(Vec<CancellationReason>),
}

/// Sends the items as one all-or-nothing transaction (1 TransactWriteItems). The SDK
/// adds an idempotency token, so its own retries cannot apply a transaction twice.
pub(crate) async fn write(
    store: &DynamoStore,
    items: Vec<TransactWriteItem>,
    doing: &'static str,
) -> Result<Outcome, StoreError> {
    match store
        .dynamodb
        .transact_write_items()
        .set_transact_items(Some(items))
        .send()
        .await
    {
        Ok(_) => Ok(Outcome::Written),
        Err(err) => match err.as_service_error() {
            Some(TransactWriteItemsError::TransactionCanceledException(cancelled)) => Ok(
                Outcome::Cancelled(cancelled.cancellation_reasons().to_vec()),
            ),
            _ => Err(error::sdk(doing, &err)),
        },
    }
}

/// Whether this item's condition did not hold.
pub(crate) fn condition_failed(reason: Option<&CancellationReason>) -> bool {
    reason.and_then(CancellationReason::code) == Some(CONDITION_FAILED)
}

/// The item as it was when its condition failed, if DynamoDB returned it.
pub(crate) fn old_item(reason: Option<&CancellationReason>) -> Option<Item> {
    reason.and_then(CancellationReason::item).cloned()
}

/// Whether any item failed for a reason other than its condition (contention,
/// throttling, validation).
pub(crate) fn other_failure(reasons: &[CancellationReason]) -> bool {
    reasons.iter().any(|r| {
        r.code()
            .is_some_and(|code| code != CONDITION_FAILED && code != "None")
    })
}

/// The reasons' codes, for the log.
pub(crate) fn codes(reasons: &[CancellationReason]) -> Vec<Option<&str>> {
    reasons.iter().map(CancellationReason::code).collect()
}

/// A request that could not be built: a bug here, reported as unavailable.
pub(crate) fn build_error(err: BuildError) -> StoreError {
    tracing::error!(error = %err, "journal: a request could not be built");
    StoreError::Unavailable(error::UNREACHABLE.into())
}
