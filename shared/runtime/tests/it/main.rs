//! The engine's integration tests: golden transcripts and behaviour over the public API.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    unreachable_pub
)]

mod approvals;
mod behaviour;
mod golden;
mod memory;
mod observability;
mod pictures;
mod planner;
mod recall;
mod service_questions;
mod support;
mod tool_calls;
mod trust;
