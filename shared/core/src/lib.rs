//! Baton's pure domain.
//!
//! Agent cards and registries (validated at load), prompt assembly, the stream protocol's
//! events, the routing trace, the guards, cost, and the ports the runtime talks to.
//!
//! This crate must never depend on tokio, an AWS SDK, an HTTP server or a database: it
//! does no I/O. Ports are object-safe traits (boxed futures and streams) because models
//! and stores are picked by registry key at run time.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

pub mod approval;
pub mod composition;
pub mod consulted;
pub mod cost;
pub mod directive;
pub mod events;
pub mod failpoint;
pub mod guard;
pub mod input;
pub mod interruption;
pub mod json_text;
pub mod limits;
pub mod memory;
pub mod message;
pub mod model;
pub mod obligation;
pub mod picture;
pub mod plan;
pub mod ports;
pub mod principal;
pub mod privacy;
pub mod prompt;
pub mod recall;
pub mod registry;
pub mod tool;
pub mod tool_result;
pub mod trace;
pub mod turn;

pub use principal::Principal;
