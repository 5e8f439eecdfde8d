//! Overlap guard (D-8): in mixed intent, a call sharing no content word with the user's
//! text is dropped.

use super::words::shares_content_word;

/// Indexes of calls to keep. Single-intent turns keep everything; if no call overlaps,
/// everything is kept (the guard never empties a turn).
pub fn keep_overlapping(user_text: &str, queries: &[&str]) -> Vec<usize> {
    if queries.len() < 2 {
        return (0..queries.len()).collect();
    }
    let keep: Vec<usize> = queries
        .iter()
        .enumerate()
        .filter(|(_, q)| shares_content_word(q, user_text))
        .map(|(i, _)| i)
        .collect();
    if keep.is_empty() {
        (0..queries.len()).collect()
    } else {
        keep
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_the_call_that_shares_nothing() {
        let user = "my receipt didn't scan and find me coffee deals";
        assert_eq!(
            keep_overlapping(user, &["receipt didn't scan", "coffee deals", "weather"]),
            vec![0, 1]
        );
    }

    #[test]
    fn never_empties_a_turn() {
        assert_eq!(keep_overlapping("hello there", &["a", "b"]), vec![0, 1]);
    }
}
