//! Property tests: for any history and any batch boundary, a compaction folds whole turns
//! (a specialist's request never without its answer), keeps the last turns untouched, and
//! no masked value reaches a summarizer's input or a stored summary.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::tests::turn;
use super::*;
use crate::privacy::{PrivacyGuard, PrivacyPolicy};

/// A card number that passes the Luhn check, so the guard masks it.
const CARD: &str = "4111 1111 1111 1111";
const EMAIL: &str = "jane.doe@example.com";

fn words() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            "[a-z]{1,8}".prop_map(String::from),
            // A value between words, as the privacy guard's own properties write them: two
            // card numbers back to back read as one longer number, which it leaves alone.
            Just(format!("card {CARD} ok")),
            Just(EMAIL.to_owned()),
            "R-[0-9]{1,4}".prop_map(String::from),
        ],
        0..8,
    )
    .prop_map(|w| w.join(" "))
}

type RawTurn = (String, String, Vec<(usize, String, String)>);

fn history() -> impl Strategy<Value = Vec<RawTurn>> {
    prop::collection::vec(
        (
            words(),
            words(),
            prop::collection::vec((0..3usize, words(), words()), 0..3),
        ),
        0..30,
    )
}

const AGENTS: [&str; 3] = ["shop", "support", "rewards"];

fn records(raw: &[RawTurn]) -> Vec<TurnRecord> {
    raw.iter()
        .enumerate()
        .map(|(i, (user, narration, segs))| {
            let segs: Vec<(&str, &str, &str)> = segs
                .iter()
                .map(|(a, q, t)| (AGENTS[*a], q.as_str(), t.as_str()))
                .collect();
            turn(i as u64 + 1, user, narration, &segs)
        })
        .collect()
}

proptest! {
    #[test]
    fn a_batch_folds_whole_turns_and_keeps_the_last_ones(
        raw in history(),
        after in 0..30u64,
        keep_last in 0..8u32,
        max_batch in 1..50u32,
    ) {
        let turns = records(&raw);
        let version = turns.len() as u64;
        let after = after.min(version);
        let policy = MemoryPolicy { keep_last, max_batch, ..MemoryPolicy::with_summarizer(super::tests::spec()) };
        if let Some((from, upto)) = policy.batch(version, after) {
            prop_assert_eq!(from, after);
            prop_assert!(upto > from && upto - from <= u64::from(max_batch));
            // The last `keep_last` turns are never folded.
            prop_assert!(upto + u64::from(keep_last) <= version);
            let folded = &turns[from as usize..upto as usize];
            let g = PrivacyGuard::new(&PrivacyPolicy::default());
            // Each specialist's request is in its input exactly when its answer is.
            for (agent, input) in agent_inputs(&BTreeMap::new(), folded, &g) {
                let asked = input.text.matches("\nAsked: ").count();
                let answered = input.text.matches("\nAnswered: ").count();
                prop_assert_eq!(asked, answered);
                let expected = folded
                    .iter()
                    .flat_map(|t| &t.segments)
                    .filter(|s| s.agent_id == agent && !s.text.is_empty())
                    .count();
                prop_assert_eq!(asked, expected);
            }
        } else {
            // Nothing to fold: every unsummarised turn is one of those kept.
            prop_assert!(version.saturating_sub(u64::from(keep_last)) <= after);
        }
    }

    #[test]
    fn no_masked_value_reaches_an_input_or_a_summary(
        raw in history(),
        previous in words(),
        answer in words(),
        max_chars in 10..400usize,
    ) {
        let turns = records(&raw);
        let g = PrivacyGuard::new(&PrivacyPolicy::default());
        let mut texts = vec![orchestrator_input(Some(&previous), &turns, &g).text];
        let prev = BTreeMap::from([("shop".to_owned(), previous.clone())]);
        texts.extend(agent_inputs(&prev, &turns, &g).into_values().map(|i| i.text));
        if let Some(kept) = finish_summary(&answer, &g, max_chars) {
            prop_assert!(kept.chars().count() <= max_chars + 1);
            texts.push(kept);
        }
        for text in texts {
            prop_assert!(!text.contains(CARD), "{}", text);
            prop_assert!(!text.contains(EMAIL), "{}", text);
        }
    }
}
