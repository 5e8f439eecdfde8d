//! Verbatim protection (D-8): which query a sub-agent really gets.

use super::words::{shares_content_word, word_count};

/// What the verbatim rule decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verbatim {
    /// The query to send.
    pub query: String,
    /// Whether the model's query was replaced by the user's text.
    pub overridden: bool,
}

/// Picks the query for one call.
///
/// Single intent: always the user's exact text. Mixed intent and a short message (≤ 4
/// words): the exact text. Otherwise the model's split if it shares a content word with
/// the user's text, else the exact text.
pub fn effective_query(user_text: &str, model_query: &str, calls: usize) -> Verbatim {
    let exact = || Verbatim {
        query: user_text.to_owned(),
        overridden: model_query != user_text,
    };
    if calls <= 1 || word_count(user_text) <= 4 {
        return exact();
    }
    if !model_query.trim().is_empty() && shares_content_word(model_query, user_text) {
        Verbatim {
            query: model_query.to_owned(),
            overridden: false,
        }
    } else {
        exact()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_intent_always_gets_the_exact_text() {
        let v = effective_query("find cheap coffee please", "coffee offers", 1);
        assert_eq!(v.query, "find cheap coffee please");
        assert!(v.overridden);
    }

    #[test]
    fn mixed_short_message_gets_the_exact_text() {
        assert_eq!(
            effective_query("points and coffee", "coffee", 2).query,
            "points and coffee"
        );
    }

    #[test]
    fn mixed_long_message_keeps_an_overlapping_split() {
        let user = "my receipt didn't scan and find me coffee deals";
        assert_eq!(
            effective_query(user, "find me coffee deals", 2).query,
            "find me coffee deals"
        );
        assert_eq!(effective_query(user, "weather tomorrow", 2).query, user);
    }
}
