//! Integration tests of baton-local: one binary, modules named for the behaviour they prove.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod about_the_user;
mod embedded_store;
mod memory_across;
mod pictures;
mod pictures_passed;
mod shipped;
mod small_talk;
