//! The offline model: deterministic, no network, and not a language model.
//!
//! It routes by ranking the user's words against agent cards (descriptions, routing
//! examples, keywords) and composes by template, so that Baton runs end to end on a laptop
//! and in tests with no model provider.

mod about_user;
mod answer;
mod args;
mod bm25;
mod chunks;
mod composing_reply;
mod conversation;
mod looks;
mod model;
mod planning_reply;
mod remember_reply;
mod render;
mod routing_reply;
mod segment;
mod summary_reply;
#[cfg(test)]
mod testing;
mod worker_reply;

pub use model::OfflineModel;
