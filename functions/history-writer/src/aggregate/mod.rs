//! The episode aggregates (the `AGG` item) and the compaction mark on `META`.
//!
//! - `attributes`: the AGG item's attribute names and number encoding.
//! - `apply`: folding one turn into the aggregates, exactly once, in any order.
//! - `view`: reading the aggregates back as a typed value.

mod apply;
mod attributes;
mod view;

pub(crate) use apply::{apply_turn, mark_compaction_due, record_last_seq};
pub use view::{AgentTally, EpisodeAggregates};
