//! Baton's AWS adapters: the production implementations of the core's ports.
//!
//! - [`bedrock`]: the `Model` port over Bedrock ConverseStream.
//! - [`journal`]: the `Store` port over one DynamoDB table and an S3 bucket of bodies.
//! - [`recall`]: the `MemoryStore` port (long-term memory) over the journal's table and an
//!   S3 Vectors index.
//! - [`emf`]: the `Metrics` port as CloudWatch Embedded Metric Format log lines.
//! - [`sdk`]: loading the SDK's standard settings and building the clients once.
//! - [`logs`]: JSON logs for CloudWatch, as every function of the bundle writes them.
//! - [`secrets`]: header secrets by ARN (Secrets Manager, SSM), read once at Init.
//! - [`link_key`]: the account links' key, a KMS data key decrypted once at Init.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

mod attributes;
pub mod bedrock;
pub mod emf;
mod faults;
pub mod journal;
pub mod link_key;
pub mod logs;
pub mod recall;
pub mod sdk;
pub mod secrets;
pub mod settings;
