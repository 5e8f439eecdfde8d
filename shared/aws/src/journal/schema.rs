//! The journal table's definition (D-24), for tests and local development. The SAM
//! template declares the same table for deployments.

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::{BuildError, DisplayErrorContext};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType, StreamSpecification, StreamViewType,
    TimeToLiveSpecification,
};

use super::keys;

/// Why the table could not be created.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// The request could not be built (a bug in this module).
    #[error("building the table definition")]
    Build(#[source] BuildError),
    /// DynamoDB refused or could not be reached.
    #[error("{doing} table {table}: {detail}")]
    Request {
        /// What was being done.
        doing: &'static str,
        /// The table.
        table: String,
        /// The SDK's error with its causes, as text.
        detail: String,
    },
}

/// Creates the journal table `name` as D-24 describes it: keys `pk`/`sk` (strings),
/// on-demand billing, a NEW_AND_OLD_IMAGES stream, the sparse index `compaction-due`
/// (`due_pk`, `compaction_due`; it projects `owner` too, so the queue names whom to read
/// each episode as) and TTL on `expires_at`.
///
/// # Errors
/// When DynamoDB refuses (the table exists, say) or cannot be reached.
pub async fn create_table(client: &Client, name: &str) -> Result<(), SchemaError> {
    create_table_without_ttl(client, name).await?;
    client
        .update_time_to_live()
        .table_name(name)
        .time_to_live_specification(
            TimeToLiveSpecification::builder()
                .enabled(true)
                .attribute_name(keys::EXPIRES_AT)
                .build()
                .map_err(SchemaError::Build)?,
        )
        .send()
        .await
        .map_err(|e| SchemaError::Request {
            doing: "enabling TTL on",
            table: name.to_owned(),
            detail: DisplayErrorContext(&e).to_string(),
        })?;
    Ok(())
}

/// Like [`create_table`] without enabling TTL.
///
/// For tests that write with a synthetic clock (times near 1970): DynamoDB Local deletes
/// expired TTL items within seconds, which would make such tests race against its sweeper.
/// The journal never relies on TTL deletion: every read checks `expires_at` itself.
///
/// # Errors
/// As [`create_table`].
pub async fn create_table_without_ttl(client: &Client, name: &str) -> Result<(), SchemaError> {
    let string_key = |attr: &str| {
        AttributeDefinition::builder()
            .attribute_name(attr)
            .attribute_type(ScalarAttributeType::S)
            .build()
            .map_err(SchemaError::Build)
    };
    let key = |attr: &str, kind: KeyType| {
        KeySchemaElement::builder()
            .attribute_name(attr)
            .key_type(kind)
            .build()
            .map_err(SchemaError::Build)
    };
    let compaction_index = GlobalSecondaryIndex::builder()
        .index_name(keys::COMPACTION_INDEX)
        .key_schema(key(keys::DUE_PK, KeyType::Hash)?)
        .key_schema(key(keys::COMPACTION_DUE, KeyType::Range)?)
        .projection(
            Projection::builder()
                .projection_type(ProjectionType::Include)
                .non_key_attributes(keys::OWNER)
                .build(),
        )
        .build()
        .map_err(SchemaError::Build)?;
    client
        .create_table()
        .table_name(name)
        .attribute_definitions(string_key(keys::PK)?)
        .attribute_definitions(string_key(keys::SK)?)
        .attribute_definitions(string_key(keys::DUE_PK)?)
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name(keys::COMPACTION_DUE)
                .attribute_type(ScalarAttributeType::N)
                .build()
                .map_err(SchemaError::Build)?,
        )
        .key_schema(key(keys::PK, KeyType::Hash)?)
        .key_schema(key(keys::SK, KeyType::Range)?)
        .global_secondary_indexes(compaction_index)
        .billing_mode(BillingMode::PayPerRequest)
        .stream_specification(
            StreamSpecification::builder()
                .stream_enabled(true)
                .stream_view_type(StreamViewType::NewAndOldImages)
                .build()
                .map_err(SchemaError::Build)?,
        )
        .send()
        .await
        .map_err(|e| SchemaError::Request {
            doing: "creating",
            table: name.to_owned(),
            detail: DisplayErrorContext(&e).to_string(),
        })?;
    Ok(())
}
