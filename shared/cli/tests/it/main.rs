//! The `baton` binary run as a user would: exit codes, stdout and stderr.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod a2a;
mod a2a_sdks;
mod a2a_tck;
mod account_links;
mod adversaries;
mod ag_ui_client;
mod approvals;
mod browser;
mod chat;
mod compact;
mod config;
mod console;
mod eval;
mod eval_report;
mod mcp_client;
mod mcp_conformance;
mod memory;
// The DynamoDB store is in a `baton` built with the `aws` feature (`./infra/test.sh` runs
// the suite with it).
#[cfg(feature = "aws")]
mod dynamodb;
mod offline;
mod openai_sdk;
mod pictures;
mod planner;
mod replay;
mod serve;
mod support;
mod traces;
mod validate;
