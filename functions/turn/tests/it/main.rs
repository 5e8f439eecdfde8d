//! The turn function's handler driven with the sample events, a scripted model and the
//! in-memory store (the AWS adapters are exercised in `tests/` against emulators).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod events;
mod init;
mod invocation;
mod support;
