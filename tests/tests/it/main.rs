//! The Lambda bundle's black-box tests against real emulators (DynamoDB Local, an
//! in-process S3, the Bedrock-wire fake), and the workspace's layering, in one test binary.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod bedrock;
mod design_refs;
mod history_writer;
mod journal;
mod journal_throttling;
mod layering;
mod link_key;
mod local_model;
mod module_circles;
mod planner;
mod readme;
mod real_tools;
mod recall;
mod secrets;
mod turn_function;
mod upstream;
