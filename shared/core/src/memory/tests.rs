//! Due decisions, batches, the summarizer's inputs and what is kept of its answer.

use std::collections::BTreeMap;

use super::*;
use crate::privacy::{PrivacyGuard, PrivacyPolicy};
use crate::trace::RoutingRecord;
use crate::turn::{AgentStatus, Segment, TurnOutcome};

/// A turn with `user` and `narration`, and a segment per `(agent, query, text)`.
pub(super) fn turn(
    seq: u64,
    user: &str,
    narration: &str,
    segments: &[(&str, &str, &str)],
) -> TurnRecord {
    TurnRecord {
        episode_id: "ep".into(),
        seq,
        turn_id: format!("t{seq}"),
        created_ms: seq * 1_000,
        user_text: user.into(),
        narration: narration.into(),
        segments: segments
            .iter()
            .map(|(agent, query, text)| Segment {
                agent_id: (*agent).into(),
                query: (*query).into(),
                text: (*text).into(),
                status: AgentStatus::Ok,
            })
            .collect(),
        consulted: Vec::new(),
        routing: RoutingRecord::default(),
        usage: Vec::new(),
        cost_usd: 0.0,
        body_keys: Vec::new(),
        outcome: TurnOutcome::Answered,
        direct: None,
        privacy: Default::default(),
        fingerprint: String::new(),
        message_id: None,
        pictures: Vec::new(),
    }
}

pub(super) fn spec() -> std::sync::Arc<crate::registry::ModelSpec> {
    std::sync::Arc::new(crate::registry::ModelSpec {
        key: "m1".into(),
        provider: "test".into(),
        model_id: "test-model-1".into(),
        context_window: 100_000,
        prices: Default::default(),
        capabilities: Default::default(),
        endpoint: None,
    })
}

fn guard() -> PrivacyGuard {
    PrivacyGuard::new(&PrivacyPolicy::default())
}

#[test]
fn an_episode_is_due_by_turns_or_by_tokens_but_never_when_all_would_be_kept() {
    let policy = MemoryPolicy::with_summarizer(spec());
    assert!(!policy.is_due(7, 100, 100_000));
    assert!(policy.is_due(8, 100, 100_000));
    // Five long turns fill half of a small window.
    assert!(policy.is_due(5, 5_000, 10_000));
    // Four turns are the ones kept intact: nothing to fold, however long.
    assert!(!policy.is_due(4, 1_000_000, 10_000));
}

#[test]
fn a_batch_folds_from_the_last_summary_up_to_the_kept_turns_and_no_further() {
    let policy = MemoryPolicy::with_summarizer(spec());
    assert_eq!(policy.batch(10, 0), Some((0, 6)));
    assert_eq!(policy.batch(10, 6), None);
    assert_eq!(policy.batch(4, 0), None);
    // A long backlog is folded 40 turns at a time.
    assert_eq!(policy.batch(300, 0), Some((0, 40)));
    assert_eq!(policy.batch(300, 40), Some((40, 80)));
}

#[test]
fn the_orchestrators_input_carries_the_previous_summary_and_what_the_user_saw() {
    let turns = [
        turn(
            7,
            "find coffee deals",
            "Roast coffee earns 500 points.",
            &[],
        ),
        turn(8, "thanks", "", &[]),
    ];
    let input = orchestrator_input(Some("The user asked about receipt R-1."), &turns, &guard());
    assert_eq!(
        input.text,
        "<previous_summary>\nThe user asked about receipt R-1.\n</previous_summary>\n<turns>\n\
         Turn 7\nUser: find coffee deals\nAssistant: Roast coffee earns 500 points.\n\
         Turn 8\nUser: thanks\n</turns>"
    );
}

#[test]
fn each_specialist_gets_an_input_of_its_own_segments_only() {
    let turns = [
        turn(
            1,
            "deals and my receipt",
            "…",
            &[
                ("shop", "coffee deals", "Roast coffee."),
                ("support", "receipt R-1", "R-1 was rejected."),
            ],
        ),
        turn(2, "more deals", "…", &[("shop", "tea deals", "Green tea.")]),
    ];
    let previous = BTreeMap::from([("support".to_owned(), "Earlier: R-0 fixed.".to_owned())]);
    let inputs = agent_inputs(&previous, &turns, &guard());
    assert_eq!(inputs.keys().collect::<Vec<_>>(), ["shop", "support"]);
    let shop = &inputs["shop"].text;
    assert!(shop.contains("Asked: coffee deals\nAnswered: Roast coffee."));
    assert!(shop.contains("Asked: tea deals\nAnswered: Green tea."));
    assert!(!shop.contains("R-1") && !shop.contains("R-0"), "{shop}");
    let support = &inputs["support"].text;
    assert!(support.starts_with("<previous_summary>\nEarlier: R-0 fixed."));
    assert!(!support.contains("coffee"), "{support}");
}

#[test]
fn masked_values_are_masked_in_the_input_and_again_in_the_answer() {
    let card = "4111 1111 1111 1111";
    let turns = [turn(
        1,
        &format!("my card is {card}"),
        "Noted.",
        &[("support", &format!("card {card}"), "ok")],
    )];
    let g = guard();
    assert!(!orchestrator_input(None, &turns, &g).text.contains(card));
    assert!(
        !agent_inputs(&BTreeMap::new(), &turns, &g)["support"]
            .text
            .contains(card)
    );
    // A summarizer that repeats the value anyway does not get it stored.
    let kept = finish_summary(&format!("The user's card is {card}."), &g, 500).unwrap();
    assert!(!kept.contains(card), "{kept}");
}

#[test]
fn an_unusable_answer_keeps_nothing_and_a_long_one_is_cut_at_a_word() {
    let g = guard();
    assert_eq!(finish_summary("   \n ", &g, 100), None);
    assert_eq!(finish_summary("\u{0}\u{1}\u{2}\u{FFFD}ab", &g, 100), None);
    let long = "word ".repeat(100);
    let kept = finish_summary(&long, &g, 23).unwrap();
    assert_eq!(kept, "word word word word…");
}

#[test]
fn the_request_is_a_summarize_call_without_tools() {
    let spec = spec();
    let input = orchestrator_input(None, &[turn(1, "hi", "Hello!", &[])], &guard());
    let req = input.request(&std::sync::Arc::from("orchestrator"), &spec, 2_400);
    assert_eq!(req.purpose, crate::model::CallPurpose::Summarize);
    assert!(req.tools.is_empty());
    assert_eq!(req.model_id.as_ref(), "test-model-1");
    assert_eq!(req.latest_user_text(), Some(input.text.as_str()));
    assert_eq!(req.inference.max_output_tokens, Some(800));
}

#[test]
fn history_tokens_count_user_text_and_narration() {
    let turns = [turn(
        1,
        "abcd",
        "abcdefgh",
        &[("shop", "ignored", "ignored too")],
    )];
    assert_eq!(history_tokens(&turns), 3);
}

#[test]
fn the_summarizer_is_asked_to_keep_what_the_user_said_about_themselves() {
    let input = orchestrator_input(
        None,
        &[turn(1, "my dog is called Biscuit", "", &[])],
        &guard(),
    );
    for asked in [
        "about themselves",
        "goals",
        "budget",
        "however long ago",
        "newer",
    ] {
        assert!(
            input.instructions.contains(asked),
            "{asked}: {}",
            input.instructions
        );
    }
}
