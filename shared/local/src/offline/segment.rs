//! Splitting a user message into intent segments on clause boundaries.
//!
//! Segments are byte spans of the original text, so that merged neighbours can be cut
//! from it verbatim ("salt and pepper deals" stays whole once both halves route alike).

/// Words that join two requests. Matched case-insensitively as whole words.
const CONNECTORS: &[&str] = &["and", "also", "plus", "as well as", "additionally"];

/// A half-open byte range of the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    /// First byte.
    pub(crate) start: usize,
    /// One past the last byte.
    pub(crate) end: usize,
}

impl Span {
    /// The covered text.
    pub(crate) fn of(self, text: &str) -> &str {
        text.get(self.start..self.end).unwrap_or("")
    }
}

/// The clause spans of a text, trimmed, without empty ones.
pub(crate) fn split(text: &str) -> Vec<Span> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let next = bytes.get(i + 1).copied();
        let sentence_end = match b {
            b'!' | b'?' | b';' | b'\n' => true,
            // A full stop ends a sentence only before a space ("3.5", "e.g" stay whole).
            b'.' => next.is_none_or(|n| n.is_ascii_whitespace()),
            _ => false,
        };
        if sentence_end {
            push(text, &mut out, start, i + 1);
            start = i + 1;
            i += 1;
            continue;
        }
        let at_word_start = i == 0 || matches!(bytes[i - 1], b' ' | b'\t' | b',');
        if at_word_start && let Some(len) = connector_at(bytes, i) {
            push(text, &mut out, start, i);
            start = i + len;
            i += len;
            continue;
        }
        i += 1;
    }
    push(text, &mut out, start, bytes.len());
    out
}

/// The length of a connector starting at `i` and followed by a space, a comma or the end.
fn connector_at(bytes: &[u8], i: usize) -> Option<usize> {
    CONNECTORS.iter().map(|c| c.as_bytes()).find_map(|c| {
        let end = i + c.len();
        let word = bytes.get(i..end)?;
        let followed = bytes
            .get(end)
            .is_none_or(|b| b.is_ascii_whitespace() || *b == b',');
        (word.eq_ignore_ascii_case(c) && followed).then_some(c.len())
    })
}

/// Trims a span of spaces and joining punctuation and keeps it if it holds a word.
fn push(text: &str, out: &mut Vec<Span>, start: usize, end: usize) {
    let Some(piece) = text.get(start..end) else {
        return;
    };
    let junk = |c: char| c.is_whitespace() || matches!(c, ',' | ':' | ';' | '-');
    let trimmed_start = piece.trim_start_matches(junk);
    let lead = piece.len() - trimmed_start.len();
    let core =
        trimmed_start.trim_end_matches(|c: char| c.is_whitespace() || matches!(c, ',' | ';'));
    if core.chars().any(char::is_alphanumeric) {
        out.push(Span {
            start: start + lead,
            end: start + lead + core.len(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(text: &str) -> Vec<&str> {
        split(text).into_iter().map(|s| s.of(text)).collect()
    }

    #[test]
    fn splits_on_connectors_and_sentence_ends() {
        assert_eq!(
            texts("my receipt didn't scan and find me coffee deals"),
            vec!["my receipt didn't scan", "find me coffee deals"]
        );
        assert_eq!(
            texts("Points balance? Also, show deals; plus my login, and gift cards."),
            vec!["Points balance?", "show deals", "my login", "gift cards."]
        );
    }

    #[test]
    fn leaves_words_containing_connectors_alone() {
        assert_eq!(
            texts("Andrew's brand candles"),
            vec!["Andrew's brand candles"]
        );
        assert_eq!(texts("costs 3.5 dollars"), vec!["costs 3.5 dollars"]);
    }

    #[test]
    fn empty_and_punctuation_only_texts_have_no_segments() {
        assert!(split("").is_empty());
        assert!(split(" and ... ?").is_empty());
        assert_eq!(
            texts("héllo wörld and ünïcode"),
            vec!["héllo wörld", "ünïcode"]
        );
    }
}
