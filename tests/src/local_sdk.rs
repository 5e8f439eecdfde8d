//! SDK settings for a service that runs here (an emulator or a fake): `us-east-1`, dummy
//! credentials, the SDK's retries off (a test decides what is retried), and `endpoint` as
//! every service's endpoint, so clients of other services are built from another config.

use aws_config::retry::RetryConfig;
use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_sdk_dynamodb::config::Credentials;

/// The settings; `provider` names the credentials in the SDK's logs.
pub async fn config(endpoint: &str, provider: &'static str) -> SdkConfig {
    aws_config::defaults(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("local", "local", None, None, provider))
        .endpoint_url(endpoint)
        .retry_config(RetryConfig::disabled())
        .load()
        .await
}
