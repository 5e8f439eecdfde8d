//! Test helpers for adapter crates: the store conformance suite.
//!
//! Compiled for this crate's own tests and, behind the `testkit` feature, for other
//! crates' tests. Everything here is test code: a failed expectation panics.

// Test code: a failed expectation is meant to panic (the crate allows these under `test`
// only, and this module is also built for other crates' tests).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod store;

pub use store::StoreFixture;
