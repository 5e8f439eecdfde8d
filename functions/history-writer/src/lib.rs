//! The history writer: the DynamoDB Streams consumer of Baton's journal (D-27).
//!
//! It reads the journal table's stream and maintains what the turn path must not pay for:
//!
//! - episode aggregates (`AGG`): turns, tokens by kind, cost, per-agent executions and
//!   outcomes, the last sequence number;
//! - the audit trail (`AUDIT#<seq>#<agent>`): one item per sub-agent execution;
//! - the body archive: every `BODY` copied to `archive/<episode>/<url-safe key>.json` in S3;
//! - long-term memory (D-43), when the deployment keeps it: each new turn handed to the
//!   runtime's extraction after its batch is projected ([`Remember`]).
//!
//! Key decision: every projection is idempotent and commutes across items, because the
//! stream redelivers (Lambda retries from the lowest failed sequence number) and orders
//! records only per item, not per episode. Aggregates are applied once per turn through a
//! condition on a number set of applied sequence numbers; audit items and archives are
//! plain overwrites of content derived from the record alone.
//!
//! This crate depends on the journal's table contract (D-24), not on the journal's code:
//! it must keep working on records written by any version of the writer side, ignoring
//! shapes it does not know.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

mod aggregate;
mod archive;
mod audit;
mod change;
mod config;
mod error;
mod read;
mod remember;
mod writer;

pub use aggregate::{AgentTally, EpisodeAggregates};
pub use archive::archive_key;
pub use audit::{AuditCall, AuditEntry};
pub use config::Config;
pub use error::{Error, Result};
pub use remember::{MemoryInitError, MemorySetup, Remember, RuntimeMemory};
pub use writer::{BatchSummary, HistoryWriter};
