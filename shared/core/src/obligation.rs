//! Delegation obligations (D-22): "specialist X must be consulted this turn", from the
//! request or from a rule on the orchestrator card.
//!
//! A card rule fires on a keyword found as a whole word or phrase of the user's text,
//! ignoring case and treating any run of whitespace as one space: `refund` fires in
//! "I want a Refund!" but not in "refunded" or "refunds" (list those forms if they should
//! fire). Whole words keep a short keyword from firing inside unrelated longer words.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::guard::words::{contains_phrase, fold};

/// A card rule: `agent` must be consulted when one of `keywords` appears, when the
/// orchestrator files a request under one of `category`'s values, or always.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObligationRule {
    /// The sub-agent that must be consulted.
    pub agent: Arc<str>,
    /// Words or phrases that make the rule fire (whole words, case-insensitive).
    #[serde(default)]
    pub keywords: Vec<String>,
    /// The rule fires on every turn.
    #[serde(default)]
    pub always: bool,
    /// The rule fires when a call of the orchestrator's carries one of these categories.
    #[serde(default)]
    pub category: Option<CategoryRule>,
}

/// A category rule: an argument a specialist's card declares for its `ask_<id>` tool
/// (e.g. `support_category`) and the values that make the rule fire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CategoryRule {
    /// The argument's name.
    pub field: String,
    /// Values that fire the rule (compared exactly, as strings).
    pub values: Vec<String>,
}

impl CategoryRule {
    /// Whether one call's arguments carry one of the values.
    pub fn matches(&self, args: &serde_json::Map<String, serde_json::Value>) -> bool {
        args.get(&self.field)
            .and_then(serde_json::Value::as_str)
            .is_some_and(|v| self.values.iter().any(|w| w == v))
    }
}

impl ObligationRule {
    /// Whether the rule fires on this user text.
    pub fn fires(&self, user_text: &str) -> bool {
        self.fires_on_folded(&fold(user_text))
    }

    fn fires_on_folded(&self, text: &str) -> bool {
        self.always
            || self
                .keywords
                .iter()
                .any(|k| contains_phrase(text, &fold(k)))
    }
}

/// Where an obligation came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ObligationSource {
    /// The turn's request named it.
    Request,
    /// A rule on the orchestrator card fired.
    Card,
}

/// One specialist that must be consulted this turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Obligation {
    /// The specialist's id.
    pub agent_id: String,
    /// Where the obligation came from.
    pub source: ObligationSource,
}

/// The obligations that category rules add once the orchestrator has made its calls:
/// each rule whose category one of `calls` (their arguments) carries, in rule order,
/// leaving out specialists already in `known`.
pub fn for_calls(
    rules: &[ObligationRule],
    calls: &[&serde_json::Map<String, serde_json::Value>],
    known: &[Obligation],
) -> Vec<Obligation> {
    let mut out: Vec<Obligation> = Vec::new();
    for rule in rules {
        let Some(category) = &rule.category else {
            continue;
        };
        let seen = known.iter().chain(&out).any(|o| *o.agent_id == *rule.agent);
        if !seen && calls.iter().any(|args| category.matches(args)) {
            out.push(Obligation {
                agent_id: rule.agent.to_string(),
                source: ObligationSource::Card,
            });
        }
    }
    out
}

/// The obligations of one turn: the requested ones first, in order, then the specialists
/// of card rules that fire on the user's text, in rule order. Each specialist appears
/// once (a request wins over a rule); empty requested ids are skipped. Whether a
/// requested id is one of the orchestrator's specialists is the caller's check.
pub fn for_turn(
    rules: &[ObligationRule],
    user_text: &str,
    requested: &[String],
) -> Vec<Obligation> {
    let mut out: Vec<Obligation> = Vec::new();
    let push = |out: &mut Vec<Obligation>, id: &str, source| {
        if !id.is_empty() && !out.iter().any(|o| o.agent_id == id) {
            out.push(Obligation {
                agent_id: id.to_owned(),
                source,
            });
        }
    };
    for id in requested {
        push(&mut out, id, ObligationSource::Request);
    }
    // Only keyword rules read the text; most turns of most cards need no folded copy.
    let text = if rules.iter().any(|r| !r.keywords.is_empty()) {
        fold(user_text)
    } else {
        String::new()
    };
    for rule in rules {
        if rule.fires_on_folded(&text) {
            push(&mut out, &rule.agent, ObligationSource::Card);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn rule(agent: &str, keywords: &[&str]) -> ObligationRule {
        ObligationRule {
            agent: Arc::from(agent),
            keywords: keywords.iter().map(|k| (*k).to_owned()).collect(),
            always: false,
            category: None,
        }
    }

    fn ids(obligations: &[Obligation]) -> Vec<(&str, ObligationSource)> {
        obligations
            .iter()
            .map(|o| (o.agent_id.as_str(), o.source))
            .collect()
    }

    #[test]
    fn a_keyword_fires_as_a_whole_word_whatever_its_case() {
        let r = rule("support", &["refund"]);
        assert!(r.fires("I want a Refund!"));
        assert!(r.fires("REFUND"));
        assert!(r.fires("refund: order 12"));
        assert!(r.fires("(refund)"));
        assert!(!r.fires("it was refunded"), "not inside a longer word");
        assert!(
            !r.fires("refunds please"),
            "plurals are listed, not guessed"
        );
        assert!(!r.fires("prerefund"));
        assert!(!r.fires("re fund"));
        assert!(!r.fires(""));
    }

    #[test]
    fn a_phrase_fires_across_any_whitespace() {
        let r = rule("support", &["missing  points"]);
        assert!(r.fires("I have Missing\n\tpoints again"));
        assert!(!r.fires("missing pointsmith"));
        assert!(!r.fires("points missing"));
    }

    #[test]
    fn a_later_occurrence_counts_when_an_earlier_one_is_inside_a_word() {
        let r = rule("support", &["card"]);
        assert!(r.fires("cardboard and my card"));
        let r = rule("support", &["ab ab"]);
        assert!(r.fires("xab ab ab"), "overlapping occurrences are tried");
    }

    #[test]
    fn a_keyword_edged_with_punctuation_needs_no_boundary_there() {
        let r = rule("shop", &["c++"]);
        assert!(r.fires("books on c++?"));
        assert!(!r.fires("abc++"));
        let r = rule("shop", &["€"]);
        assert!(r.fires("10€ off"));
    }

    #[test]
    fn empty_keywords_never_fire_and_always_fires_on_anything() {
        assert!(!rule("support", &["", "  "]).fires("anything at all"));
        let always = ObligationRule {
            always: true,
            ..rule("support", &[])
        };
        assert!(always.fires(""));
    }

    #[test]
    fn requests_come_first_then_firing_rules_each_specialist_once() {
        let rules = [
            rule("support", &["refund", "chargeback"]),
            rule("rewards", &["points"]),
            rule("shop", &["coffee"]),
            ObligationRule {
                always: true,
                ..rule("strategist", &[])
            },
            rule("support", &["points"]),
        ];
        let requested = vec!["rewards".to_owned(), String::new(), "rewards".to_owned()];
        let got = for_turn(&rules, "A chargeback on my points?", &requested);
        assert_eq!(
            ids(&got),
            [
                ("rewards", ObligationSource::Request),
                ("support", ObligationSource::Card),
                ("strategist", ObligationSource::Card),
            ]
        );
    }

    #[test]
    fn a_category_rule_fires_on_a_call_that_carries_one_of_its_values() {
        let rule = ObligationRule {
            agent: Arc::from("rewards"),
            keywords: Vec::new(),
            always: false,
            category: Some(CategoryRule {
                field: "support_category".into(),
                values: vec!["missing_points".into()],
            }),
        };
        let args = |v: serde_json::Value| v.as_object().cloned().unwrap();
        let filed = args(serde_json::json!({"support_category": "missing_points"}));
        let other = args(serde_json::json!({"support_category": "receipts"}));
        let rules = [rule];
        assert_eq!(
            for_calls(&rules, &[&other, &filed], &[]),
            vec![Obligation {
                agent_id: "rewards".into(),
                source: ObligationSource::Card,
            }]
        );
        assert!(for_calls(&rules, &[&other], &[]).is_empty());
        // Keyword rules never fire here, and a known obligation is not repeated.
        let known = for_calls(&rules, &[&filed], &[]);
        assert!(for_calls(&rules, &[&filed], &known).is_empty());
        assert!(!rules[0].fires("missing_points"));
    }

    #[test]
    fn nothing_fires_on_an_unrelated_turn() {
        let rules = [rule("support", &["refund"])];
        assert!(for_turn(&rules, "find me coffee deals", &[]).is_empty());
    }

    #[test]
    fn obligations_serialize_in_snake_case() {
        let o = Obligation {
            agent_id: "support".into(),
            source: ObligationSource::Card,
        };
        assert_eq!(
            serde_json::to_value(&o).unwrap(),
            serde_json::json!({"agent_id": "support", "source": "card"})
        );
    }

    proptest! {
        #[test]
        fn for_turn_never_panics_and_never_repeats(
            text in any::<String>(),
            keywords in proptest::collection::vec(any::<String>(), 0..4),
            requested in proptest::collection::vec("[a-c]{0,2}", 0..4),
        ) {
            let rules = [
                ObligationRule { agent: Arc::from("a"), keywords: keywords.clone(), always: false, category: None },
                ObligationRule { agent: Arc::from("b"), keywords, always: false, category: None },
            ];
            let got = for_turn(&rules, &text, &requested);
            for (i, o) in got.iter().enumerate() {
                prop_assert!(!got[..i].iter().any(|p| p.agent_id == o.agent_id));
            }
        }

        #[test]
        fn a_keyword_between_spaces_always_fires(
            before in "[a-z ]{0,10}",
            keyword in "[a-zA-Z]{1,8}( [a-zA-Z]{1,8})?",
            after in "[a-z ]{0,10}",
        ) {
            let r = rule("support", &[keyword.as_str()]);
            let text = format!("{before} {} {after}", keyword.to_uppercase());
            prop_assert!(r.fires(&text));
        }
    }
}
