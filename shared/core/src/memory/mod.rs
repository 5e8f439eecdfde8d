//! Episode memory (design.md §4): the summary compaction writes, when an episode is due, which
//! turns one compaction folds, and what the summarizer is asked.
//!
//! Compaction folds: new summary = summarise(previous summary, the turns since it), so its
//! cost follows the batch, not the episode's length. Cuts fall between turns only, and a
//! turn holds each sub-agent's call with its answer, so a call is never separated from its
//! result. The summarizer reads the masked text the user saw, and what it writes is masked
//! again before it is stored: nothing the privacy guard masked reappears in a summary.

mod summarize;

#[cfg(test)]
mod props;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::model::ModelSpec;
use crate::prompt::estimate_tokens;
use crate::turn::TurnRecord;

pub use summarize::{SummaryInput, agent_inputs, finish_summary, orchestrator_input};

/// What compaction has written for an episode.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct EpisodeSummary {
    /// The last turn folded in: turns `1..=upto_seq` are in the summary, later ones are not.
    pub upto_seq: u64,
    /// The orchestrator's summary of the whole conversation up to `upto_seq`.
    pub text: String,
    /// Each specialist's summary of its own segments, by agent id; used only in that
    /// specialist's requests (D-17).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub agents: BTreeMap<String, String>,
}

impl EpisodeSummary {
    /// The turn folded last, or 0 when there is no summary.
    pub fn upto(summary: Option<&EpisodeSummary>) -> u64 {
        summary.map_or(0, |s| s.upto_seq)
    }
}

/// An orchestrator card's `memory` settings.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryPolicy {
    /// Unsummarised turns that make an episode due.
    pub compact_after_turns: u32,
    /// Or: the share of the orchestrator model's context window that unsummarised history
    /// may fill before the episode is due.
    pub compact_at_fraction: f64,
    /// Turns kept intact (never folded) at the end of the episode.
    pub keep_last: u32,
    /// The most turns one compaction folds; a longer backlog takes more runs.
    pub max_batch: u32,
    /// A summary's length limit, in characters.
    pub max_summary_chars: usize,
    /// The summarizer: the card's `memory.summarizer`, else the `summarizer` of
    /// `models.yaml`, else the card's own model.
    pub summarizer: Arc<ModelSpec>,
}

impl MemoryPolicy {
    /// The defaults, with `summarizer` as the model.
    pub fn with_summarizer(summarizer: Arc<ModelSpec>) -> Self {
        MemoryPolicy {
            compact_after_turns: 8,
            compact_at_fraction: 0.5,
            keep_last: 4,
            max_batch: 40,
            max_summary_chars: 2_400,
            summarizer,
        }
    }

    /// Whether an episode is due: `unsummarised` turns holding about `tokens` tokens, for a
    /// model with `context_window` tokens.
    pub fn is_due(&self, unsummarised: u64, tokens: u64, context_window: u64) -> bool {
        if unsummarised <= u64::from(self.keep_last) {
            // Nothing could be folded: the turns are all kept intact.
            return false;
        }
        unsummarised >= u64::from(self.compact_after_turns)
            || tokens as f64 >= self.compact_at_fraction * context_window as f64
    }

    /// The turns one compaction folds, as `(after, upto)`: turns `after+1 ..= upto`, or
    /// `None` when every unsummarised turn is kept intact. `version` is the episode's last
    /// turn, `after` the previous summary's last.
    pub fn batch(&self, version: u64, after: u64) -> Option<(u64, u64)> {
        let keep_from = version.saturating_sub(u64::from(self.keep_last));
        let upto = keep_from.min(after.saturating_add(u64::from(self.max_batch.max(1))));
        (upto > after).then_some((after, upto))
    }
}

/// Tokens the turns put into the orchestrator's conversation (user text and narration), by
/// the same rough estimate as the prompt budgets.
pub fn history_tokens<'a>(turns: impl IntoIterator<Item = &'a TurnRecord>) -> u64 {
    turns
        .into_iter()
        .map(|t| estimate_tokens(&t.user_text) + estimate_tokens(&t.narration))
        .sum()
}
