//! The episode aggregates (the `AGG` item).
//!
//! - `attributes`: the AGG item's attribute names and number encoding.
//! - `apply`: folding one turn into the aggregates, exactly once, in any order.
//! - `view`: reading the aggregates back as a typed value.

mod apply;
mod attributes;
mod view;

pub(crate) use apply::{apply_turn, record_last_seq};
pub use view::{AgentTally, EpisodeAggregates};
