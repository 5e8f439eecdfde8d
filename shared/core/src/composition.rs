//! How the orchestrator turns sub-agent answers into the final response (D-13): a card
//! setting that the routing record also carries.

use std::fmt;

use serde::{Deserialize, Serialize};

/// How the orchestrator turns sub-agent answers into the final response (D-13).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Composition {
    /// One more orchestrator call composes from the tool results.
    #[default]
    Mediated,
    /// Single intent: the sub-agent's text streams through the output pipeline.
    Passthrough,
    /// First sub-agent to produce text streams live; others buffer and flush, paced.
    Direct,
    /// As `Direct`, then one more orchestrator call composes a summary from the results:
    /// the user watches the specialists work, then reads one answer in the assistant's
    /// voice.
    DirectThenCompose,
}

impl fmt::Display for Composition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Composition::Mediated => "mediated",
            Composition::Passthrough => "passthrough",
            Composition::Direct => "direct",
            Composition::DirectThenCompose => "direct_then_compose",
        })
    }
}
