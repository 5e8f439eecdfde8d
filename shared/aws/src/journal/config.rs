//! [`DynamoStore`]: its clients and its configuration (where the journal lives, when a body
//! leaves the table, how the SDK clients retry and address an emulator).

use std::time::Duration;

use aws_config::SdkConfig;
use aws_config::retry::RetryConfig;
use aws_sdk_s3::config::{RequestChecksumCalculation, ResponseChecksumValidation};

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
