//! Content words: the lowercase words of a text minus stop words, shared by the guards.

use std::borrow::Cow;
use std::collections::BTreeSet;

/// Words too common to say anything about intent.
const STOP_WORDS: &[&str] = &[
    // Contractions first: "what's" says no more about intent than "what".
    "can't", "don't", "doesn't", "he's", "how's", "i'd", "i'll", "i've", "isn't", "let's", "she's",
    "that's", "there's", "they're", "wasn't", "we're", "what's", "where's", "who's", "won't",
    "you're", "you've", "a", "about", "all", "also", "am", "an", "and", "any", "are", "as", "at",
    "be", "been", "but", "by", "can", "could", "did", "didn't", "do", "does", "for", "from", "get",
    "give", "got", "had", "has", "have", "hi", "how", "i", "i'm", "if", "in", "into", "is", "it",
    "it's", "its", "just", "know", "let", "like", "me", "my", "need", "no", "not", "of", "on",
    "or", "our", "please", "show", "so", "some", "tell", "than", "that", "the", "their", "them",
    "then", "there", "these", "they", "this", "to", "too", "up", "us", "want", "was", "we", "were",
    "what", "when", "where", "which", "while", "who", "why", "will", "with", "would", "you",
    "your",
];

/// Splits a text into lowercase words (letters, digits and inner apostrophes).
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    word_views(text).map(Cow::into_owned)
}

/// [`words`] without a new string for a word that is already lowercase ASCII (most words
/// are), for the guards that only compare or count words on every turn.
pub fn word_views(text: &str) -> impl Iterator<Item = Cow<'_, str>> + '_ {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '’'))
        .map(|w| w.trim_matches(|c| c == '\'' || c == '’'))
        .filter(|w| !w.is_empty())
        .map(|w| {
            if w.bytes().all(|b| b.is_ascii() && !b.is_ascii_uppercase()) {
                Cow::Borrowed(w)
            } else {
                Cow::Owned(w.replace('’', "'").to_lowercase())
            }
        })
}

/// The content words of a text.
pub fn content_words(text: &str) -> BTreeSet<String> {
    words(text)
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .collect()
}

/// Whether two texts share at least one content word.
pub fn shares_content_word(a: &str, b: &str) -> bool {
    let a = content_words(a);
    word_views(b).any(|w| a.contains(w.as_ref()))
}

/// Number of words.
pub fn word_count(text: &str) -> usize {
    word_views(text).count()
}

/// Lowercase, with every whitespace run as one space and no space at either end.
pub fn fold(text: &str) -> String {
    let lower = text.to_lowercase();
    let mut out = String::with_capacity(lower.len());
    for word in lower.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Whether `phrase` occurs in `text` with a word boundary at each end where the phrase
/// itself begins or ends with a word character (both already folded).
pub fn contains_phrase(text: &str, phrase: &str) -> bool {
    let (Some(first), Some(last)) = (phrase.chars().next(), phrase.chars().next_back()) else {
        return false;
    };
    let mut from = 0;
    while let Some(offset) = text[from..].find(phrase) {
        let at = from + offset;
        let before = text[..at].chars().next_back();
        let after = text[at + phrase.len()..].chars().next();
        let starts_clean = !is_word_char(first) || !before.is_some_and(is_word_char);
        let ends_clean = !is_word_char(last) || !after.is_some_and(is_word_char);
        if starts_clean && ends_clean {
            return true;
        }
        // Overlapping occurrences: retry one character further on.
        from = at + first.len_utf8();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_lowercase_with_plain_apostrophes_borrowed_or_not() {
        let text = "Don’t STOP: it's 'quoted' café ÉTÉ 42x";
        let all: Vec<String> = words(text).collect();
        assert_eq!(
            all,
            ["don't", "stop", "it's", "quoted", "café", "été", "42x"]
        );
        let borrowed: Vec<bool> = word_views(text)
            .map(|w| matches!(w, Cow::Borrowed(_)))
            .collect();
        assert_eq!(borrowed, [false, false, true, true, false, false, true]);
        assert_eq!(word_count(text), 7);
    }

    #[test]
    fn stop_words_do_not_count_as_overlap() {
        assert!(!shares_content_word(
            "find me the deals",
            "I want the refund"
        ));
        assert!(shares_content_word("coffee deals", "find me coffee deals"));
        assert!(shares_content_word(
            "Receipt didn't scan",
            "my RECEIPT failed"
        ));
    }
}
