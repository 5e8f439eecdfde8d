//! The streaming turn function: Baton's HTTP app behind a Lambda function URL
//! (`RESPONSE_STREAM`) and an API Gateway REST API with response streaming.
//!
//! Init ([`init`]) reads the [`Config`], loads and validates the registry, builds the SDK
//! clients, the Bedrock model, the DynamoDB + S3 journal and the EMF metrics once, and
//! builds the same router `baton serve` uses (`baton_http::app`). Each invocation:
//!
//! - the caller comes from the Lambda request context ([`LambdaPrincipal`]), never from the
//!   body or a header; no identity is a 403;
//! - the turn streams as Server-Sent Events; a failure is an `error` event in plain words,
//!   and the body never yields an error ([`outgoing`]);
//! - after the stream ends, [`InvocationLayer`] waits for the invocation's turns to commit
//!   (a client that left mid-stream does not lose its turn) and writes the metrics as EMF
//!   lines to stdout.
//!
//! The same [`Function`] runs as a plain HTTP server outside Lambda (local development).
//! This crate holds adapters only: no turn logic.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

mod config;
mod deployed;
mod error;
mod host;
mod incoming;
mod init;
mod invocation;
pub mod outgoing;
mod principal;
mod tracker;

pub use config::{Config, ConfigError, LAMBDA_MAX_REQUEST_BYTES, LinkKeySetting};
pub use error::InitError;
pub use host::under_lambda;
pub use init::{Adapters, Function, ModelServing, assemble, init, init_with};
pub use invocation::{InvocationLayer, InvocationService, MetricsSink};
pub use principal::LambdaPrincipal;
pub use tracker::{TrackedStore, TurnTracker};
