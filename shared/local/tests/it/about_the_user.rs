//! What the user says about themselves outlives the folds of a long conversation: the
//! shipped registry with the offline model, compacted as a user's conversation is, keeps a
//! name, a goal and an amount from the first turns in the summary after sixty turns, and a
//! restated fact replaces the old one.

use std::sync::Arc;

use baton_core::Principal;
use baton_core::events::Event;
use baton_inproc::HeapStore;
use baton_runtime::{Runtime, TurnRequest};

use crate::shipped::{runtime_over, turn_events};
use baton_core::ports::store::TurnStore as _;

/// Requests that have nothing to do with the user's own facts, with the ids, amounts and
/// names that fill a summary's other lists.
const UNRELATED: &[&str] = &[
    "find coffee deals at Caribou for order {i}",
    "my receipt R-{i} from FreshMart didn't scan, can you check it?",
    "what did I buy at Target in week {i}?",
    "show my redemptions since March {i}",
    "any deals on oat milk under ${i}?",
    "I want to redeem {i}00 points for a Starbucks gift card",
    "where are the {i} points from my Walgreens receipt?",
    "is my plan to buy coffee in bulk every {i} weeks realistic?",
];

/// Sends one turn of `user` on `episode` (a new one when `None`); returns the episode id.
async fn turn(runtime: &Runtime, user: &Principal, episode: Option<&str>, text: &str) -> String {
    let request = TurnRequest {
        episode_id: episode.map(str::to_owned),
        ..TurnRequest::new(user.clone(), text)
    };
    let events = turn_events(runtime, request).await;
    events
        .iter()
        .find_map(|e| match e {
            Event::ResponseId { episode_id, .. } => Some(episode_id.clone()),
            _ => None,
        })
        .unwrap()
}

#[tokio::test]
async fn sixty_turns_later_the_summary_still_knows_who_the_user_is() {
    let store = Arc::new(HeapStore::new());
    let runtime = runtime_over(store.clone());
    let user = Principal::new("long-talker").unwrap();
    let mut messages: Vec<String> = vec![
        "my dog is called Biscuit".into(),
        "I'm saving for a Trek FX 2".into(),
        "I have 12,000 points".into(),
        "my budget is $800 a month".into(),
    ];
    for i in 5..=60 {
        let text = if i == 50 {
            // The same subject again: the newer statement wins.
            "my budget is $650 a month now".to_owned()
        } else {
            UNRELATED[i % UNRELATED.len()].replace("{i}", &i.to_string())
        };
        messages.push(text);
    }

    let mut episode: Option<String> = None;
    let mut folds = 0;
    for text in &messages {
        let id = turn(&runtime, &user, episode.as_deref(), text).await;
        episode = Some(id);
        // As the scheduled compaction (or `baton compact --due`) would, after every turn.
        let report = runtime.compact_due(10, None).await.unwrap();
        folds += report
            .episodes
            .iter()
            .filter(|e| e.turns_folded > 0)
            .count();
    }
    assert!(folds >= 10, "the conversation was folded {folds} times");

    let episode = episode.unwrap();
    let summary = store
        .episode(&user, &episode)
        .await
        .unwrap()
        .summary
        .unwrap();
    assert!(
        summary.upto_seq >= 52,
        "summarised up to {}",
        summary.upto_seq
    );
    let text = summary.text;
    let about = text
        .lines()
        .find(|l| l.starts_with("About the user"))
        .unwrap_or_else(|| panic!("no section about the user in:\n{text}"));
    for fact in ["Biscuit", "Trek FX 2", "12,000 points", "$650"] {
        assert!(about.contains(fact), "{fact:?} missing from {about:?}");
    }
    assert!(!about.contains("$800"), "the old budget stayed: {about:?}");
}
