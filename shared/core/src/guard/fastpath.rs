//! Fastpath allowlist (D-14): decided deterministically from the user's text alone.

use std::borrow::Cow;

use super::words::word_views;

const GREETINGS: &[&str] = &[
    "hi",
    "hello",
    "hey",
    "hiya",
    "howdy",
    "yo",
    "good morning",
    "good afternoon",
    "good evening",
    "morning",
    "evening",
    "good night",
    "greetings",
    "hello again",
];
const ACKNOWLEDGEMENTS: &[&str] = &[
    "ok",
    "okay",
    "k",
    "thanks",
    "thank you",
    "thx",
    "ty",
    "got it",
    "great",
    "cool",
    "nice",
    "perfect",
    "sounds good",
    "awesome",
    "alright",
    "all right",
    "understood",
    "cheers",
    "thanks a lot",
    "thank you so much",
    "many thanks",
    // Thanks for the help, not for a thing: "thanks for the coffee deals" is a request.
    "thanks for your help",
    "thanks for the help",
    "thanks for that",
    "thank you for your help",
    "thank you for the help",
    "thank you for that",
    "bye",
    "goodbye",
    "bye bye",
    "see you",
    "see you later",
    "see ya",
    "talk to you later",
    "take care",
    "have a nice day",
    "have a good day",
    "have a great day",
];
const CHITCHAT: &[&str] = &[
    "how are you",
    "what's up",
    "whats up",
    "how's it going",
    "hows it going",
    "how are you doing",
    "who are you",
    "what can you do",
    "how is your day",
    "sup",
    "nice to meet you",
    "pleased to meet you",
    "good to meet you",
];
/// Words that may pad an allowed phrase ("hi there", "ok thanks!").
const FILLER: &[&str] = &[
    "there",
    "so",
    "much",
    "very",
    "again",
    "then",
    "lol",
    "please",
    "today",
    "baton",
    "assistant",
];

/// The allowlist category of a message, if it is nothing but a greeting,
/// acknowledgement or chitchat.
pub fn category(text: &str) -> Option<&'static str> {
    let ws: Vec<Cow<'_, str>> = word_views(text).collect();
    if ws.is_empty() || ws.len() > 8 {
        return None;
    }
    let mut rest: &[Cow<'_, str>] = &ws;
    let mut found: Option<&'static str> = None;
    'outer: while !rest.is_empty() {
        // The longest phrase that opens the rest wins ("how are you doing" over "how are you").
        let mut best: Option<(&'static str, usize)> = None;
        for (cat, phrases) in [
            ("greeting", GREETINGS),
            ("acknowledgement", ACKNOWLEDGEMENTS),
            ("chitchat", CHITCHAT),
        ] {
            for phrase in phrases.iter() {
                let n = phrase.split(' ').count();
                let matches =
                    rest.len() >= n && rest.iter().zip(phrase.split(' ')).all(|(a, b)| a == b);
                if matches && best.is_none_or(|(_, m)| n > m) {
                    best = Some((cat, n));
                }
            }
        }
        if let Some((cat, n)) = best {
            found.get_or_insert(cat);
            rest = &rest[n..];
            continue 'outer;
        }
        if FILLER.contains(&rest[0].as_ref()) {
            rest = &rest[1..];
            continue;
        }
        return None;
    }
    found
}

/// Whether `text` is in one of the allowed categories.
pub fn allowed(text: &str, allow: &[String]) -> Option<&'static str> {
    category(text).filter(|c| allow.iter().any(|a| a == c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greetings_and_thanks_are_allowed() {
        assert_eq!(category("Hi there!"), Some("greeting"));
        assert_eq!(category("ok thanks"), Some("acknowledgement"));
        assert_eq!(category("how are you?"), Some("chitchat"));
        assert_eq!(category("hey, how are you doing"), Some("greeting"));
    }

    #[test]
    fn small_talk_in_its_common_phrasings_is_allowed() {
        let table = [
            ("hi there", "greeting"),
            ("hello!", "greeting"),
            ("good morning", "greeting"),
            ("Good afternoon!", "greeting"),
            ("hey, how are you?", "greeting"),
            ("good night", "greeting"),
            ("thanks!", "acknowledgement"),
            ("thank you so much", "acknowledgement"),
            ("thank you very much!", "acknowledgement"),
            ("many thanks", "acknowledgement"),
            ("thanks for your help", "acknowledgement"),
            ("thank you for the help!", "acknowledgement"),
            ("cheers", "acknowledgement"),
            ("ok great", "acknowledgement"),
            ("got it, thanks", "acknowledgement"),
            ("goodbye, have a nice day", "acknowledgement"),
            ("see you later", "acknowledgement"),
            ("how's it going?", "chitchat"),
            ("nice to meet you", "chitchat"),
            ("what can you do?", "chitchat"),
        ];
        for (text, expected) in table {
            assert_eq!(category(text), Some(expected), "{text}");
        }
    }

    #[test]
    fn small_talk_around_a_request_is_not_enough() {
        for text in [
            "hi, what is my points balance?",
            "thanks, and can you find coffee deals?",
            "thanks for your help with my receipt",
            "good morning, any deals on coffee?",
            "what can you do about my missing points?",
            "hey, how are my points doing?",
            "have a nice day at the store",
        ] {
            assert_eq!(category(text), None, "{text}");
        }
    }

    #[test]
    fn questions_and_requests_are_not() {
        assert_eq!(category("hi, find me coffee deals"), None);
        assert_eq!(category("what is my points balance"), None);
        assert_eq!(category("thanks, and is it safe to mix bleach?"), None);
        assert_eq!(category(""), None);
    }
}
