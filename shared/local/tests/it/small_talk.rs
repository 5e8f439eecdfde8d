//! The shipped registry with the offline model, turn by turn through the engine: greetings,
//! thanks and small talk take the Fastpath (a text-only answer, no specialist), and a real
//! request that opens or closes with them still reaches one.

use baton_core::Principal;
use baton_core::events::Event;
use baton_runtime::{Runtime, TurnRequest};

use crate::shipped::{runtime, turn_events};

/// The specialists one new user's message consulted, and the answer's text.
async fn turn(runtime: &Runtime, message: &str) -> (Vec<String>, String) {
    let request = TurnRequest::new(Principal::new("new-user").unwrap(), message);
    let events = turn_events(runtime, request).await;
    let consulted = events
        .iter()
        .find_map(|e| match e {
            Event::AgentsConsulted { agents, .. } => {
                Some(agents.iter().map(|a| a.agent_id.clone()).collect())
            }
            _ => None,
        })
        .unwrap();
    let text = events
        .iter()
        .filter_map(|e| match e {
            Event::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    (consulted, text)
}

/// Greetings, thanks and small talk in their common phrasings. The cards' routing
/// examples are all in English, so these are too.
const SMALL_TALK: &[&str] = &[
    "hi",
    "hi there",
    "hello!",
    "Hello there!",
    "hey",
    "hey there",
    "hiya",
    "good morning",
    "Good afternoon!",
    "good evening",
    "morning!",
    "hey, how are you?",
    "hi, how are you doing today?",
    "how's it going?",
    "what's up?",
    "thanks!",
    "thank you",
    "thank you so much",
    "thank you very much!",
    "thanks a lot",
    "many thanks",
    "thanks for your help",
    "thank you for the help!",
    "cheers",
    "ok great",
    "ok, thanks",
    "great, thank you!",
    "perfect, thanks",
    "awesome",
    "sounds good",
    "got it, thanks",
    "nice to meet you",
    "who are you?",
    "what can you do?",
    "bye!",
    "goodbye, have a nice day",
    "see you later",
    "good night",
];

#[tokio::test]
async fn small_talk_takes_the_fastpath() {
    let runtime = runtime();
    let mut routed = Vec::new();
    for message in SMALL_TALK {
        let (consulted, text) = turn(&runtime, message).await;
        if !consulted.is_empty() || text.trim().is_empty() {
            routed.push(format!("{message:?} -> {consulted:?} {text:?}"));
        }
    }
    assert!(
        routed.is_empty(),
        "small talk went to a specialist:\n{}",
        routed.join("\n")
    );
}

#[tokio::test]
async fn a_request_wrapped_in_small_talk_still_reaches_its_specialist() {
    let runtime = runtime();
    let cases: &[(&str, &str)] = &[
        ("hi, what is my points balance?", "rewards"),
        ("thanks, and can you find coffee deals?", "shop"),
        ("hello! my receipt didn't scan", "support"),
        ("good morning, any deals on coffee?", "shop"),
        ("thank you so much! how many points do I have?", "rewards"),
        ("hey, how are my points doing?", "rewards"),
        ("ok great, now show me my past redemptions", "rewards"),
        ("cheers. what did I buy at FreshMart last month?", "shop"),
        ("what can you do about my missing points?", "support"),
        ("thanks for your help with my receipt", "support"),
        (
            "hi there, is my plan to buy coffee in bulk realistic?",
            "strategist",
        ),
    ];
    let mut wrong = Vec::new();
    for (message, expected) in cases {
        let (consulted, _) = turn(&runtime, message).await;
        if !consulted.iter().any(|c| c == expected) {
            wrong.push(format!("{message:?} -> {consulted:?}, expected {expected}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
