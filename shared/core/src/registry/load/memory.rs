//! An orchestrator card's `memory` section: when its episodes are compacted, what is kept,
//! and which model summarises.

use std::sync::Arc;

use super::Loader;
use super::card::Card;
use crate::memory::MemoryPolicy;
use crate::registry::ModelSpec;

impl Loader<'_> {
    /// The memory policy; the defaults where unset. The summarizer is the section's, else
    /// the `summarizer` of `models.yaml`, else `model` (the card's own). `None` only when
    /// no model resolved, which is already a problem of the card.
    pub(super) fn memory(
        &mut self,
        card: Card<'_>,
        model: Option<&Arc<ModelSpec>>,
    ) -> Option<MemoryPolicy> {
        let raw = card.raw.memory.clone().unwrap_or_default();
        let file = card.file;
        let summarizer = match &raw.summarizer {
            Some(key) => match self.models.get(key) {
                Some(m) => Some(m.clone()),
                None => {
                    self.problems.add(
                        file,
                        "memory.summarizer",
                        key,
                        "no such model key in models.yaml",
                    );
                    None
                }
            },
            None => self.summarizer.clone().or_else(|| model.cloned()),
        }?;
        let mut policy = MemoryPolicy::with_summarizer(summarizer);
        let p = &mut self.problems;
        let mut positive = |v: Option<u32>, slot: &mut u32, name: &str| {
            if let Some(v) = v {
                if v == 0 {
                    p.add(file, format!("memory.{name}"), "0", "must be positive");
                }
                *slot = v;
            }
        };
        positive(
            raw.compact_after_turns,
            &mut policy.compact_after_turns,
            "compact_after_turns",
        );
        positive(raw.max_batch, &mut policy.max_batch, "max_batch");
        if let Some(k) = raw.keep_last {
            policy.keep_last = k;
        }
        if let Some(f) = raw.compact_at_fraction {
            if !(f > 0.0 && f <= 1.0) {
                p.add(
                    file,
                    "memory.compact_at_fraction",
                    f.to_string(),
                    "must be a share of the context window, above 0 and at most 1",
                );
            }
            policy.compact_at_fraction = f;
        }
        if let Some(c) = raw.max_summary_chars {
            if c < 200 {
                p.add(
                    file,
                    "memory.max_summary_chars",
                    c.to_string(),
                    "must be at least 200",
                );
            }
            policy.max_summary_chars = c;
        }
        if policy.keep_last >= policy.compact_after_turns {
            p.add(
                file,
                "memory.keep_last",
                policy.keep_last.to_string(),
                format!(
                    "must be below compact_after_turns ({}), or nothing is ever folded",
                    policy.compact_after_turns
                ),
            );
        }
        Some(policy)
    }
}
