//! Baton's test doubles, built on the core's ports only, for every crate's tests and for
//! `baton --model scripted:FILE`:
//!
//! - [`scripted`]: a model that plays a YAML script, matched on each request;
//! - [`connector`]: a connector that answers each tool from its own configuration;
//! - [`memory_store`]: an in-memory journal;
//! - [`store`]: the store conformance suite every journal adapter runs
//!   ([`store_conformance!`]).

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

pub mod connector;
pub mod memory_store;
pub mod scripted;
pub mod store;

pub use store::StoreFixture;
