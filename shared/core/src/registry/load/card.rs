//! The card as the loaders see it: what was parsed from each file, and the one being built
//! with every card its references may name.

use std::collections::BTreeMap;

use crate::registry::raw::RawCard;

/// A card as parsed, with the file it came from.
pub(super) struct ParsedCard {
    /// The card as written.
    pub(super) raw: RawCard,
    /// Its file.
    pub(super) file: String,
}

/// Every parsed card, by id.
pub(super) type Cards = BTreeMap<String, ParsedCard>;

/// The card being built: its text, its file, and every card its references may name.
#[derive(Clone, Copy)]
pub(super) struct Card<'c> {
    /// The card as written.
    pub(super) raw: &'c RawCard,
    /// Its file.
    pub(super) file: &'c str,
    /// Every parsed card.
    pub(super) cards: &'c Cards,
}

/// A card's default label: its id's words, each capitalised.
pub(super) fn capitalise(id: &str) -> String {
    id.split(['-', '_'])
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut c = w.chars();
            match c.next() {
                Some(f) => f.to_uppercase().chain(c).collect::<String>(),
                None => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The card's description, or, for a card of exactly one tool that leaves it out, the
/// tool's (from `tools.yaml` or what its backend said of itself).
pub(super) fn description_of(
    raw: &RawCard,
    tools: &[std::sync::Arc<crate::registry::Tool>],
) -> std::sync::Arc<str> {
    match (raw.description.trim(), tools) {
        ("", [tool]) => std::sync::Arc::from(tool.description.trim()),
        (own, _) => std::sync::Arc::from(own),
    }
}
