//! [`DynamoStore`]: the clients, the configuration, and the `Store` port's methods, each
//! delegated to the module that holds its requests.

use async_trait::async_trait;
use std::time::Duration;

use aws_config::SdkConfig;
use aws_config::retry::RetryConfig;
use aws_sdk_s3::config::{RequestChecksumCalculation, ResponseChecksumValidation};
use baton_core::Principal;
use baton_core::memory::EpisodeSummary;
use baton_core::ports::store::{
    AccountLink, Claim, ClaimRequest, Commit, DueEpisode, EpisodeMeta, Store, StoreError,
};
use baton_core::ports::upstream::UpstreamConversation;
use baton_core::turn::TurnRecord;

use super::{checkpoint, claim, commit, links, memory, read, upstream};

/// Where the journal lives and when a body leaves the table for S3.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalConfig {
    table: String,
    bucket: String,
    inline_body_limit: usize,
}

impl JournalConfig {
    /// Bodies up to this many bytes of JSON are kept in the table by default.
    pub const DEFAULT_INLINE_BODY_LIMIT: usize = 32 * 1024;
    /// The largest inline limit accepted: a BODY item must stay under DynamoDB's 400 KB.
    pub const MAX_INLINE_BODY_LIMIT: usize = 350 * 1024;

    /// The table and the bucket, with the default inline limit.
    pub fn new(table: impl Into<String>, bucket: impl Into<String>) -> Self {
        JournalConfig {
            table: table.into(),
            bucket: bucket.into(),
            inline_body_limit: Self::DEFAULT_INLINE_BODY_LIMIT,
        }
    }

    /// Keeps bodies up to `bytes` of JSON in the table (capped at
    /// [`Self::MAX_INLINE_BODY_LIMIT`]); larger ones go to S3.
    pub fn with_inline_body_limit(mut self, bytes: usize) -> Self {
        self.inline_body_limit = bytes.min(Self::MAX_INLINE_BODY_LIMIT);
        self
    }

    /// The table's name.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The bucket's name.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// The largest body kept in the table, in bytes of JSON.
    pub fn inline_body_limit(&self) -> usize {
        self.inline_body_limit
    }
}

/// The episode journal on one DynamoDB table plus an S3 bucket for large bodies (D-24).
///
/// Cheap to clone: the SDK clients share their connections.
#[derive(Debug, Clone)]
pub struct DynamoStore {
    pub(crate) dynamodb: aws_sdk_dynamodb::Client,
    pub(crate) s3: aws_sdk_s3::Client,
    pub(crate) config: JournalConfig,
}

impl DynamoStore {
    /// A store over these clients.
    pub fn new(
        dynamodb: aws_sdk_dynamodb::Client,
        s3: aws_sdk_s3::Client,
        config: JournalConfig,
    ) -> Self {
        DynamoStore {
            dynamodb,
            s3,
            config,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &JournalConfig {
        &self.config
    }
}

/// How the journal's DynamoDB client retries: throttling, contention and transient
/// failures, in the SDK's standard mode, up to 4 attempts with jittered waits of at most
/// 100, 200 and 400 ms (rather than the SDK's default of 3 attempts from 1 s): a claim is
/// on the path to the turn's first event. The SDK's retry budget (500 tokens a client, 5 per
/// retried throttle, 10 per retried timeout, 1 back per success) stops the retries of a
/// table that keeps refusing (D-38).
pub fn retry_config() -> RetryConfig {
    RetryConfig::standard()
        .with_max_attempts(4)
        .with_initial_backoff(Duration::from_millis(100))
        .with_max_backoff(Duration::from_secs(1))
}

/// The DynamoDB client settings the journal wants from `sdk`: its retries
/// ([`retry_config`]).
pub fn dynamodb_config(sdk: &SdkConfig) -> aws_sdk_dynamodb::config::Builder {
    aws_sdk_dynamodb::config::Builder::from(sdk).retry_config(retry_config())
}

/// The S3 client settings the journal wants from `sdk`: when an endpoint override is
/// configured (an emulator or an S3-compatible server, in code or through
/// `AWS_ENDPOINT_URL[_S3]`), path-style addressing and checksums only where required,
/// which S3-compatible servers handle; AWS's defaults otherwise.
pub fn s3_config(sdk: &SdkConfig) -> aws_sdk_s3::config::Builder {
    let builder = aws_sdk_s3::config::Builder::from(sdk);
    if !has_s3_endpoint_override(sdk) {
        return builder;
    }
    builder
        .force_path_style(true)
        .request_checksum_calculation(RequestChecksumCalculation::WhenRequired)
        .response_checksum_validation(ResponseChecksumValidation::WhenRequired)
}

/// Mirrors how the S3 config reads its endpoint from an `SdkConfig`.
fn has_s3_endpoint_override(sdk: &SdkConfig) -> bool {
    if sdk.endpoint_url().is_some() {
        return true;
    }
    let Ok(key) = aws_types::service_config::ServiceConfigKey::builder()
        .service_id("S3")
        .env("AWS_ENDPOINT_URL")
        .profile("endpoint_url")
        .build()
    else {
        return false;
    };
    sdk.service_config()
        .and_then(|conf| conf.load_config(key))
        .is_some()
}

#[async_trait]
impl Store for DynamoStore {
    async fn claim(&self, request: ClaimRequest) -> Result<Claim, StoreError> {
        baton_core::store_write!("store.claim", claim::claim(self, &request))
    }

    async fn release(&self, episode_id: &str, turn_id: &str) -> Result<(), StoreError> {
        baton_core::store_write!("store.release", claim::release(self, episode_id, turn_id))
    }

    async fn commit(&self, commit: &Commit) -> Result<u64, StoreError> {
        baton_core::store_write!("store.commit", commit::commit(self, commit))
    }

    async fn save_checkpoint(
        &self,
        episode_id: &str,
        turn_id: &str,
        checkpoint: &str,
    ) -> Result<(), StoreError> {
        baton_core::store_write!(
            "store.checkpoint",
            checkpoint::save(self, episode_id, turn_id, checkpoint)
        )
    }

    async fn checkpoint(
        &self,
        episode_id: &str,
        turn_id: &str,
    ) -> Result<Option<String>, StoreError> {
        checkpoint::load(self, episode_id, turn_id).await
    }

    async fn episode(
        &self,
        principal: &Principal,
        episode_id: &str,
    ) -> Result<EpisodeMeta, StoreError> {
        read::episode(self, principal, episode_id).await
    }

    async fn turns(
        &self,
        principal: &Principal,
        episode_id: &str,
        limit: usize,
    ) -> Result<Vec<TurnRecord>, StoreError> {
        read::turns(self, principal, episode_id, limit).await
    }

    async fn turns_after(
        &self,
        principal: &Principal,
        episode_id: &str,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<TurnRecord>, StoreError> {
        read::turns_after(self, principal, episode_id, after_seq, limit).await
    }

    async fn save_summary(
        &self,
        principal: &Principal,
        episode_id: &str,
        expected_version: u64,
        summary: &EpisodeSummary,
    ) -> Result<(), StoreError> {
        baton_core::store_write!(
            "store.summary",
            memory::save_summary(self, principal, episode_id, expected_version, summary)
        )
    }

    async fn due_episodes(&self, limit: usize) -> Result<Vec<DueEpisode>, StoreError> {
        memory::due_episodes(self, limit).await
    }

    async fn upstream_conversation(
        &self,
        principal: &Principal,
        episode_id: &str,
        agent_id: &str,
    ) -> Result<Option<UpstreamConversation>, StoreError> {
        upstream::conversation(self, principal, episode_id, agent_id).await
    }

    async fn save_upstream_conversation(
        &self,
        principal: &Principal,
        episode_id: &str,
        conversation: &UpstreamConversation,
    ) -> Result<(), StoreError> {
        upstream::save(self, principal, episode_id, conversation).await
    }

    async fn link(
        &self,
        principal: &Principal,
        server: &str,
    ) -> Result<Option<AccountLink>, StoreError> {
        links::link(self, principal, server).await
    }

    async fn links(&self, principal: &Principal) -> Result<Vec<AccountLink>, StoreError> {
        links::links(self, principal).await
    }

    async fn save_link(&self, principal: &Principal, link: &AccountLink) -> Result<(), StoreError> {
        links::save(self, principal, link).await
    }

    async fn delete_link(&self, principal: &Principal, server: &str) -> Result<bool, StoreError> {
        links::delete(self, principal, server).await
    }

    async fn body(
        &self,
        principal: &Principal,
        episode_id: &str,
        key: &str,
    ) -> Result<serde_json::Value, StoreError> {
        read::body(self, principal, episode_id, key).await
    }

    /// One read of an episode key no turn ever uses: the table answers, and this role may
    /// read it.
    async fn ready(&self) -> Result<(), StoreError> {
        read::meta_item(self, READY_PROBE_EPISODE, "checking the journal")
            .await
            .map(drop)
    }
}

/// The episode id [`DynamoStore::ready`] reads; never a valid turn's (ids have no `~`).
const READY_PROBE_EPISODE: &str = "~ready";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_limit_defaults_to_32_kib_and_is_capped() {
        let config = JournalConfig::new("t", "b");
        assert_eq!(config.inline_body_limit(), 32 * 1024);
        let config = config.with_inline_body_limit(10 * 1024 * 1024);
        assert_eq!(
            config.inline_body_limit(),
            JournalConfig::MAX_INLINE_BODY_LIMIT
        );
    }

    #[test]
    fn endpoint_override_is_detected_from_code() {
        let plain = SdkConfig::builder().build();
        assert!(!has_s3_endpoint_override(&plain));
        let local = SdkConfig::builder()
            .endpoint_url("http://127.0.0.1:9000")
            .build();
        assert!(has_s3_endpoint_override(&local));
    }
}
