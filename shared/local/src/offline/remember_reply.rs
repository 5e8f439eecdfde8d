//! Remember calls (D-43): what a committed turn holds worth keeping across conversations,
//! found as the summary's "about the user" line finds it ([`super::about_user`]):
//! first-person statements in the user's own words, one per subject, and what the user
//! asked in so many words to be remembered ("remember that …"). It reads the user's
//! message only: it cannot tell which of a specialist's findings will stay true, so it
//! keeps none (a language model does).

use baton_core::ports::model::ModelRequest;
use serde_json::{Value, json};

use super::about_user;
use super::chunks::Reply;

/// Words that make a statement a goal rather than a fact.
const GOAL_SUBJECTS: &[&str] = &["saving", "plan", "want", "goal", "target"];
/// Words that make it a preference.
const PREFERENCE_WORDS: &[&str] = &["favourite", "favorite", "prefer", "like", "love"];
/// How a request to remember starts.
const REMEMBER: &[&str] = &[
    "remember that ",
    "remember: ",
    "please remember ",
    "remember ",
];

/// Answers with the memories of the request's turn, as JSON.
pub(super) fn respond(request: &ModelRequest, reply: &mut Reply) {
    let input = request.latest_user_text().unwrap_or_default();
    let message = between(input, "<user_message>\n", "\n</user_message>").unwrap_or(input);
    reply.text(&json!({ "memories": memories(message) }).to_string());
}

fn between<'a>(text: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let start = text.find(open)? + open.len();
    let end = text[start..].find(close)? + start;
    Some(&text[start..end])
}

/// The memories in one message.
fn memories(message: &str) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let lower = message.trim().to_lowercase();
    if let Some(rest) = REMEMBER.iter().find_map(|r| {
        lower
            .starts_with(r)
            .then(|| message.trim()[r.len()..].trim())
    }) && !rest.is_empty()
    {
        let statements = about_user::statements(rest);
        let subject = statements
            .first()
            .map(|(s, _)| s.clone())
            .unwrap_or_default();
        out.push(json!({
            "kind": kind_of(&subject, rest),
            "subject": subject,
            "text": rest.trim_end_matches('.'),
        }));
        return out;
    }
    for (subject, statement) in about_user::statements(message) {
        out.push(json!({
            "kind": kind_of(&subject, &statement),
            "subject": subject,
            "text": statement,
        }));
    }
    out
}

fn kind_of(subject: &str, statement: &str) -> &'static str {
    let lower = statement.to_lowercase();
    if GOAL_SUBJECTS.contains(&subject) {
        "goal"
    } else if PREFERENCE_WORDS
        .iter()
        .any(|w| lower.split_whitespace().any(|x| x == *w))
    {
        "preference"
    } else {
        "fact"
    }
}

#[cfg(test)]
mod tests {
    use super::memories;

    #[test]
    fn statements_about_the_user_are_kept_in_their_words() {
        let found = memories("My dog is called Biscuit and I'm saving for a Trek FX 2. Any deals?");
        let texts: Vec<&str> = found.iter().filter_map(|m| m["text"].as_str()).collect();
        assert_eq!(
            texts,
            ["My dog is called Biscuit", "I'm saving for a Trek FX 2"]
        );
        assert_eq!(found[0]["kind"], "fact");
        assert_eq!(found[0]["subject"], "dog");
        assert_eq!(found[1]["kind"], "goal");
        assert_eq!(found[1]["subject"], "saving");
        assert!(memories("find me coffee deals").is_empty());
        assert!(memories("how many points do I have?").is_empty());
    }

    #[test]
    fn what_the_user_asks_to_be_remembered_is_kept_whole() {
        let found = memories("Remember that my locker code is 4417.");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0]["text"], "my locker code is 4417");
        assert_eq!(found[0]["kind"], "fact");
        let favourite = memories("remember my favourite coffee is a flat white");
        assert_eq!(favourite[0]["kind"], "preference");
    }
}
