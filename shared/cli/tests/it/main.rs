//! The `baton` binary run as a user would: exit codes, stdout and stderr.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod adversaries;
mod chat;
mod config;
mod console;
mod dynamodb;
mod offline;
mod serve;
mod support;
mod validate;
