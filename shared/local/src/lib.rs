//! Baton's local adapters: the embedded store (one SQLite file plus a folder of bodies)
//! and the offline model (deterministic, no network; not a language model).
//!
//! Adding an adapter: implement the port from `baton_core::ports`, map every failure
//! into the port's error (never panic on bad data), and run the port's conformance suite
//! from `baton_testkit` against it.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

pub mod embedded_store;
pub mod offline;
