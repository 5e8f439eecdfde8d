//! Echo guard (D-8): a short reply that echoes the previous question of sub-agent X goes
//! to X, whatever the orchestrator picked.

use super::words::{content_words, word_count};

/// The last question a sub-agent asked the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingQuestion<'a> {
    /// Sub-agent that asked.
    pub agent_id: &'a str,
    /// Its question text.
    pub text: &'a str,
}

/// Longest reply still treated as a short answer.
pub const MAX_ECHO_WORDS: usize = 4;

/// The sub-agent a short echoing reply belongs to, if any.
pub fn echo_target<'a>(user_text: &str, previous: Option<&PendingQuestion<'a>>) -> Option<&'a str> {
    let previous = previous?;
    if word_count(user_text) > MAX_ECHO_WORDS || !previous.text.trim_end().ends_with('?') {
        return None;
    }
    let reply = content_words(user_text);
    if reply.is_empty() {
        return None;
    }
    let question = content_words(previous.text);
    reply
        .iter()
        .any(|w| question.contains(w))
        .then_some(previous.agent_id)
}

/// The last question in a sub-agent's text: the last sentence if it ends with `?`.
pub fn last_question(text: &str) -> Option<&str> {
    let t = text.trim_end();
    if !t.ends_with('?') {
        return None;
    }
    let start = t[..t.len() - 1]
        .rfind(['.', '!', '?', '\n'])
        .map(|i| i + 1)
        .unwrap_or(0);
    Some(t[start..].trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_echo_routes_to_the_asker() {
        let q = PendingQuestion {
            agent_id: "support",
            text: "Is it from a Fetch Shop purchase?",
        };
        assert_eq!(echo_target("Fetch shop", Some(&q)), Some("support"));
        assert_eq!(
            echo_target("find me coffee deals for tomorrow", Some(&q)),
            None
        );
        assert_eq!(echo_target("yes", Some(&q)), None);
    }

    #[test]
    fn last_question_takes_the_final_sentence() {
        assert_eq!(
            last_question("I see. Is it from a shop purchase?"),
            Some("Is it from a shop purchase?")
        );
        assert_eq!(last_question("Done."), None);
    }
}
