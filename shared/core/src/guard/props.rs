//! Property tests: the guards hold for any input, not just the examples.

use proptest::prelude::*;

use super::*;

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            "[a-z]{1,8}",
            Just("and".to_owned()),
            Just("the".to_owned()),
            Just("coffee".to_owned()),
            Just("receipt".to_owned()),
            "[A-Z][a-z]{0,5}[?!.,]?",
            "[0-9]{1,4}",
        ],
        0..14,
    )
    .prop_map(|w| w.join(" "))
}

proptest! {
    #[test]
    fn single_intent_always_gets_the_exact_words(user in text(), model in text()) {
        prop_assert_eq!(verbatim::effective_query(&user, &model, 1).query, user);
    }

    #[test]
    fn a_kept_split_always_shares_a_word_with_the_user(user in text(), model in text(), calls in 2usize..5) {
        let v = verbatim::effective_query(&user, &model, calls);
        prop_assert!(v.query == user || v.query == model);
        if v.query != user {
            prop_assert!(words::shares_content_word(&model, &user));
            prop_assert!(words::word_count(&user) > 4);
        }
    }

    #[test]
    fn overlap_never_empties_a_turn_and_keeps_order(user in text(), queries in prop::collection::vec(text(), 0..6)) {
        let refs: Vec<&str> = queries.iter().map(String::as_str).collect();
        let keep = overlap::keep_overlapping(&user, &refs);
        prop_assert!(keep.windows(2).all(|w| w[0] < w[1]));
        prop_assert!(keep.iter().all(|i| *i < refs.len()));
        if !refs.is_empty() {
            prop_assert!(!keep.is_empty());
        }
        if refs.len() == 1 {
            prop_assert_eq!(keep, vec![0]);
        }
    }

    #[test]
    fn the_cap_splits_without_losing_or_reordering(calls in prop::collection::vec(0u32..100, 0..10), cap in 1usize..5) {
        let (kept, dropped, _) = fanout::apply_cap(calls.clone(), cap);
        prop_assert_eq!(kept.len(), calls.len().min(cap));
        let mut all = kept;
        all.extend(dropped);
        prop_assert_eq!(all, calls);
    }

    #[test]
    fn long_replies_never_count_as_echoes(reply in text(), question in text()) {
        let q = format!("{question}?");
        let pending = echo::PendingQuestion { agent_id: "x", text: &q };
        if words::word_count(&reply) > echo::MAX_ECHO_WORDS {
            prop_assert_eq!(echo::echo_target(&reply, Some(&pending)), None);
        }
    }

    #[test]
    fn a_request_word_takes_a_message_off_the_fastpath(greeting in prop_oneof![Just("hi"), Just("thanks"), Just("how are you")], word in "(refund|balance|coffee|receipt|bleach)") {
        prop_assert!(fastpath::category(greeting).is_some());
        let with_request = format!("{greeting} {word}");
        prop_assert_eq!(fastpath::category(&with_request), None);
    }

    #[test]
    fn the_shortfall_is_never_negative(reported in prop::collection::vec(0u32..10, 0..5), calls in 0usize..10) {
        let s = intent::shortfall(&reported, calls);
        let largest = reported.iter().copied().max().unwrap_or(0) as usize;
        prop_assert_eq!(s as usize, largest.saturating_sub(calls));
    }
}
