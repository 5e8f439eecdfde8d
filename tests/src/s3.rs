//! An in-process S3 for tests: `s3s-fs` over a temporary folder, reached by the real
//! `aws-sdk-s3` client through `s3s-aws` (no socket, no process). Each
//! [`InProcessS3`] has its own folder, so tests run in parallel.
//!
//! To make S3 fail, break a bucket ([`InProcessS3::break_bucket`]): every write to it then
//! gets a server error. (A bucket that was never created would not do: `s3s-fs` creates
//! folders as objects are written.)

// Test support: a broken fixture is a test failure with a plain message.
#![allow(clippy::panic, clippy::expect_used)]

use std::path::Path;

use aws_config::retry::RetryConfig;
use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_sdk_s3::config::{Credentials, SharedCredentialsProvider};
use s3s::auth::SimpleAuth;
use s3s::service::S3ServiceBuilder;
use tempfile::TempDir;

/// The access key and secret the in-process server checks signatures with.
const KEY: &str = "local";

/// An S3 server living in this process, over a temporary folder removed on drop.
#[derive(Debug)]
pub struct InProcessS3 {
    dir: TempDir,
    sdk: SdkConfig,
}

impl InProcessS3 {
    /// Starts one over a fresh temporary folder.
    ///
    /// # Panics
    /// When the folder cannot be created.
    pub fn start() -> InProcessS3 {
        let dir = tempfile::tempdir().expect("a temporary folder for the in-process S3");
        let fs = s3s_fs::FileSystem::new(dir.path())
            .unwrap_or_else(|e| panic!("the in-process S3 cannot use its folder: {e:?}"));
        let mut service = S3ServiceBuilder::new(fs);
        service.set_auth(SimpleAuth::from_single(KEY, KEY));
        let sdk = SdkConfig::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .credentials_provider(SharedCredentialsProvider::new(Credentials::new(
                KEY, KEY, None, None, "static",
            )))
            .http_client(s3s_aws::Client::from(service.build()))
            // Never dialled (the client above answers in process), but an endpoint override
            // is what makes the journal pick path-style addressing.
            .endpoint_url("http://localhost:8014")
            .retry_config(RetryConfig::disabled())
            .build();
        InProcessS3 { dir, sdk }
    }

    /// The SDK settings that reach this server.
    pub fn sdk_config(&self) -> &SdkConfig {
        &self.sdk
    }

    /// A client config builder with the journal's S3 settings (path style, checksums
    /// when required), to add interceptors before building.
    pub fn config_builder(&self) -> aws_sdk_s3::config::Builder {
        baton_aws::journal::s3_config(&self.sdk)
    }

    /// A client.
    pub fn client(&self) -> aws_sdk_s3::Client {
        aws_sdk_s3::Client::from_conf(self.config_builder().build())
    }

    /// Creates a bucket.
    ///
    /// # Panics
    /// When the server refuses.
    pub async fn create_bucket(&self, name: &str) {
        self.client()
            .create_bucket()
            .bucket(name)
            .send()
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "creating bucket {name} in the in-process S3: {}",
                    aws_sdk_s3::error::DisplayErrorContext(&e)
                )
            });
    }

    /// Makes every object write to bucket `name` fail with a server error (500): a file
    /// takes the place of the bucket's folder, so no object file can be created under it,
    /// whoever runs the tests (root included).
    ///
    /// # Panics
    /// When the file cannot be written.
    pub fn break_bucket(&self, name: &str) {
        let path = self.dir.path().join(name);
        if path.is_dir() {
            std::fs::remove_dir_all(&path)
                .unwrap_or_else(|e| panic!("removing bucket folder {}: {e}", path.display()));
        }
        std::fs::write(&path, b"not a bucket")
            .unwrap_or_else(|e| panic!("breaking bucket {name}: {e}"));
    }

    /// The folder holding the buckets.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }
}
