//! Words of a text as memory search sees them: lower case, letters and digits, and the
//! content words among them (without the words every sentence has).

/// Words that carry no subject of their own.
const STOP_WORDS: &[&str] = &[
    "a", "about", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be", "been", "but",
    "by", "can", "could", "did", "do", "does", "for", "from", "had", "has", "have", "he", "her",
    "him", "his", "how", "i", "i'm", "if", "in", "into", "is", "it", "its", "just", "me", "my",
    "of", "on", "or", "our", "please", "remember", "she", "so", "some", "than", "that", "the",
    "their", "them", "then", "there", "these", "they", "this", "to", "up", "us", "was", "we",
    "were", "what", "when", "where", "which", "who", "why", "will", "with", "would", "you", "your",
    "what's", "i've", "i'd", "i'll", "it's", "that's", "tell", "know", "now", "again", "still",
];

/// The words of `text`, lower case: runs of letters and digits (an apostrophe inside a
/// word stays: "i'm"; a possessive goes: "dog's" is "dog").
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '’'))
        .map(|w| w.trim_matches(|c| c == '\'' || c == '’'))
        .filter(|w| !w.is_empty())
        .map(|w| {
            let w = w.replace('’', "'").to_lowercase();
            match w.strip_suffix("'s") {
                Some(owner) if !owner.is_empty() => owner.to_owned(),
                _ => w,
            }
        })
}

/// The content words of `text`: [`words`] without stop words.
pub fn content_words(text: &str) -> impl Iterator<Item = String> + '_ {
    words(text).filter(|w| !STOP_WORDS.contains(&w.as_str()))
}

/// A word's stem for matching: a plural's or a verb form's common endings cut, so that
/// "dogs" finds "dog" and "saving" finds "save".
pub fn stem(word: &str) -> &str {
    for suffix in ["ing", "ies", "es", "ed", "s"] {
        if let Some(stem) = word.strip_suffix(suffix)
            && stem.chars().count() >= 3
            && !(suffix == "s" && stem.ends_with('s'))
        {
            return stem;
        }
    }
    word
}

/// The distinct content words of `text`, in order: what a text search looks for (each
/// store matches them its own way: SQLite's Porter stemmer, the heap's [`stem`]).
pub fn query_terms(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in content_words(text) {
        if !out.contains(&word) {
            out.push(word);
        }
    }
    out
}

/// The distinct stems of `text`'s words.
pub fn stems(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in words(text) {
        let stem = stem(&word).to_owned();
        if !out.contains(&stem) {
            out.push(stem);
        }
    }
    out
}
