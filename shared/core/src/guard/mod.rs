//! The guards between an orchestrator's tool calls and their execution (D-7 … D-9, D-14).
//!
//! All are pure and general over N sub-agents: none names a specialist.

pub mod echo;
pub mod fanout;
pub mod fastpath;
pub mod intent;
pub mod overlap;
pub mod verbatim;
pub mod words;

#[cfg(test)]
mod props;

pub use fanout::CapBehavior;
