//! Integration tests of baton-local: one binary, modules named for the behaviour they prove.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod embedded_store;
mod small_talk;
