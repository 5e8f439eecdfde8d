//! The trust-layer sections of an orchestrator card: `direct_line`, `obligations` and
//! `privacy`. They are typed here one key at a time, so each mistake is an error naming
//! its own field and does not hide the rest of the card's problems.

use std::sync::Arc;

use serde_json::Value;

use super::Loader;
use super::card::{Card, capitalise};
use crate::directive::{self, DirectLinePolicy};
use crate::obligation::{CategoryRule, ObligationRule};
use crate::privacy::{PiiKind, PrivacyPolicy};
use crate::registry::raw::RawObligation;

impl Loader<'_> {
    /// The direct-line policy: a typeable prefix and an exit word no sub-agent answers to.
    pub(super) fn direct_line(&mut self, card: Card<'_>) -> DirectLinePolicy {
        let file = card.file;
        let Some(value) = &card.raw.direct_line else {
            return DirectLinePolicy::default();
        };
        let Some(policy) = self.typed_mapping::<DirectLinePolicy>(value, file, "direct_line")
        else {
            return DirectLinePolicy::default();
        };
        if policy.prefix.is_empty() {
            self.problems
                .add(file, "direct_line.prefix", "", "must not be empty");
        } else if policy.prefix.contains(char::is_whitespace) {
            self.problems.add(
                file,
                "direct_line.prefix",
                &policy.prefix,
                "must not contain whitespace",
            );
        }
        if !directive::is_token(&policy.exit) {
            self.problems.add(
                file,
                "direct_line.exit",
                &policy.exit,
                "must be one word of letters, digits, '-', '_' or '.'",
            );
        }
        self.check_exit_word(card, &policy.exit);
        policy
    }

    /// The exit word is checked before the specialists, so one that names a specialist
    /// would make that specialist unreachable.
    fn check_exit_word(&mut self, card: Card<'_>, exit: &str) {
        let exit_lower = exit.to_lowercase();
        let exit_norm = directive::normalise_label(exit);
        for s in &card.raw.sub_agents {
            let label = card
                .cards
                .get(s)
                .and_then(|c| c.raw.label.clone())
                .unwrap_or_else(|| capitalise(s));
            if exit_lower == s.to_lowercase() || exit_norm == directive::normalise_label(&label) {
                self.problems.add(
                    card.file,
                    "direct_line.exit",
                    exit,
                    format!(
                        "is also how sub-agent {s} ({label}) is addressed; choose another word"
                    ),
                );
            }
        }
    }

    /// The obligation rules that can fire; each bad rule is reported and left out.
    pub(super) fn obligations(&mut self, card: Card<'_>) -> Vec<ObligationRule> {
        let items = match &card.raw.obligations {
            None => return Vec::new(),
            Some(Value::Array(items)) => items,
            Some(other) => {
                self.problems.add(
                    card.file,
                    "obligations",
                    shown(other),
                    "must be a list of rules (agent, and keywords, category or always)",
                );
                return Vec::new();
            }
        };
        items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| self.obligation(card, &format!("obligations[{i}]"), item))
            .collect()
    }

    /// One rule: it names a sub-agent of this card and has a way to fire.
    fn obligation(&mut self, card: Card<'_>, field: &str, item: &Value) -> Option<ObligationRule> {
        let (file, subs) = (card.file, &card.raw.sub_agents);
        let rule = self.typed_mapping::<RawObligation>(item, file, field)?;
        let Some(agent) = rule.agent else {
            self.problems.add(
                file,
                format!("{field}.agent"),
                "",
                "missing: the sub-agent that must be consulted",
            );
            return None;
        };
        let mut ok = true;
        if !subs.contains(&agent) {
            self.problems.add(
                file,
                format!("{field}.agent"),
                &agent,
                format!(
                    "must be one of this card's sub_agents ({})",
                    subs.join(", ")
                ),
            );
            ok = false;
        }
        for (j, k) in rule.keywords.iter().enumerate() {
            if k.trim().is_empty() {
                self.problems.add(
                    file,
                    format!("{field}.keywords[{j}]"),
                    k,
                    "an empty keyword never fires",
                );
                ok = false;
            }
        }
        if let Some(category) = &rule.category
            && !self.check_category(card, field, category)
        {
            ok = false;
        }
        if rule.keywords.is_empty() && !rule.always && rule.category.is_none() {
            self.problems.add(
                file,
                field,
                &agent,
                "a rule needs keywords, a category or always: true, or it never fires",
            );
            ok = false;
        }
        ok.then(|| ObligationRule {
            agent: Arc::from(agent),
            keywords: rule.keywords,
            always: rule.always,
            category: rule.category,
        })
    }

    /// Whether a category rule can fire: its field must be an argument some specialist of
    /// this card declares, and it needs a value.
    fn check_category(&mut self, card: Card<'_>, field: &str, category: &CategoryRule) -> bool {
        let mut ok = true;
        let declared = card.raw.sub_agents.iter().any(|id| {
            card.cards
                .get(id)
                .is_some_and(|sub| sub.raw.ask_args.contains_key(&category.field))
        });
        if !declared {
            self.problems.add(
                card.file,
                format!("{field}.category.field"),
                &category.field,
                "no sub-agent of this card declares that ask_args field",
            );
            ok = false;
        }
        if category.values.is_empty() {
            self.problems.add(
                card.file,
                format!("{field}.category.values"),
                "",
                "a category rule needs at least one value",
            );
            ok = false;
        }
        ok
    }

    /// The privacy policy; the defaults when unset or when any kind is bad.
    pub(super) fn privacy(&mut self, card: Card<'_>) -> PrivacyPolicy {
        let file = card.file;
        let Some(value) = card.raw.privacy.as_ref() else {
            return PrivacyPolicy::default();
        };
        // Kinds are checked one by one so that an error names the index and the kind.
        if let Some(Value::Array(kinds)) = value.get("kinds") {
            let before = self.problems.len();
            for (i, k) in kinds.iter().enumerate() {
                if serde_json::from_value::<PiiKind>(k.clone()).is_err() {
                    self.problems.add(
                        file,
                        format!("privacy.kinds[{i}]"),
                        shown(k),
                        format!(
                            "unknown kind; known: {}",
                            PiiKind::ALL.map(PiiKind::as_str).join(", ")
                        ),
                    );
                } else if kinds[..i].contains(k) {
                    self.problems.add(
                        file,
                        format!("privacy.kinds[{i}]"),
                        shown(k),
                        "listed twice",
                    );
                }
            }
            if self.problems.len() > before {
                return PrivacyPolicy::default();
            }
        }
        self.typed_mapping::<PrivacyPolicy>(value, file, "privacy")
            .unwrap_or_default()
    }

    /// Types a mapping whose fields all have defaults. Each key is tried on its own first,
    /// so every bad key is reported under its own field path.
    fn typed_mapping<T: serde::de::DeserializeOwned>(
        &mut self,
        value: &Value,
        file: &str,
        field: &str,
    ) -> Option<T> {
        let p = &mut self.problems;
        let Value::Object(map) = value else {
            p.add(file, field, shown(value), "must be a mapping");
            return None;
        };
        let before = p.len();
        for (key, v) in map {
            let one = Value::Object(serde_json::Map::from_iter([(key.clone(), v.clone())]));
            if let Err(e) = serde_json::from_value::<T>(one) {
                let msg = e.to_string();
                if msg.starts_with("unknown field") {
                    p.add(file, format!("{field}.{key}"), key, msg);
                } else if v.is_null() {
                    // The usual cause: an unquoted `#` or `!` starts a comment or a tag in YAML.
                    p.add(
                        file,
                        format!("{field}.{key}"),
                        "",
                        "has no value; quote values such as \"#\" or \"!!\", which YAML otherwise reads as a comment or a tag",
                    );
                } else {
                    p.add(file, format!("{field}.{key}"), shown(v), msg);
                }
            }
        }
        if p.len() > before {
            return None;
        }
        match serde_json::from_value::<T>(value.clone()) {
            Ok(t) => Some(t),
            Err(e) => {
                p.add(file, field, shown(value), e.to_string());
                None
            }
        }
    }
}

/// A value as an error shows it: strings bare, anything else as JSON.
fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
