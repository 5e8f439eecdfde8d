//! Baton's turn engine.
//!
//! Given a registry and an adapter behind each port, [`Runtime::run_turn`] runs one user
//! turn: the orchestrator's routing call, the guards, the concurrent sub-agent fan-out
//! with per-sub-agent tool loops and limits, composition, the consulted record, the
//! journal commit, and the event stream.
//!
//! "Runtime" means one thing here: what runs turns. The crate is that layer (between the
//! core and the adapters), [`Runtime`] is its handle, which a main builds once with
//! [`RuntimeBuilder`] (both in `runtime.rs`) and shares across requests; the tokio runtime
//! is only ever called the task handle.
//!
//! This crate talks to ports only: it never depends on an AWS SDK, an HTTP server or a
//! database. It adds tokio for concurrency and time, and ring to seal what a store keeps
//! for a user ([`seal`], D-37).

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

pub mod account_links;
mod breaker;
pub mod clock;
pub mod compaction;
pub mod config;
mod engine;
mod faults;
pub mod history;
pub mod metrics;
mod model_text;
pub mod recall;
pub mod registry_folder;
pub mod replay;
pub mod request;
mod running;
mod runtime;
pub mod seal;
mod services;
pub mod stream;

pub use account_links::{LinkError, Linked};
pub use config::{BlindPictures, MemorySettings, RuntimeConfig};
pub use recall::{Extraction, Found, MemoryControl, MemoryFailure};
pub use request::{Conversation, FACE_API, RejectionKind, Resume, TurnRejection, TurnRequest};
pub use runtime::{BuildError, Runtime, RuntimeBuilder};
pub use seal::{SealError, Sealer};
pub use stream::{OutputLimits, TurnStream};
