//! A small BM25 ranker and the term extraction it shares with the rest of the model.
//!
//! Terms are the content words of `baton_core::guard::words` with a light suffix stemmer,
//! so that "deals", "scanned" and "receipts" meet "deal", "scan" and "receipt".

use std::collections::{BTreeMap, BTreeSet};

use baton_core::guard::words::{content_words, words};

/// Term-frequency saturation.
const K1: f64 = 1.2;
/// Length normalisation.
const B: f64 = 0.75;

/// The stemmed content words of a text, in order (repeats kept).
pub(crate) fn terms(text: &str) -> Vec<String> {
    let content = content_words(text);
    words(text)
        .filter(|w| content.contains(w))
        .map(|w| stem(&w))
        .filter(|w| !w.is_empty())
        .collect()
}

/// Strips common English inflections; deliberately crude but identical for both sides of
/// every comparison, which is all that matters here.
pub(crate) fn stem(word: &str) -> String {
    let w = word.strip_suffix("'s").unwrap_or(word);
    if !w.is_ascii() {
        return w.to_owned();
    }
    let n = w.len();
    if n > 4 && w.ends_with("ies") {
        format!("{}y", &w[..n - 3])
    } else if n > 5 && w.ends_with("ing") {
        undouble(&w[..n - 3])
    } else if n > 4 && w.ends_with("ed") {
        undouble(&w[..n - 2])
    } else if n > 3
        && w.ends_with('s')
        && !w.ends_with("ss")
        && !w.ends_with("us")
        && !w.ends_with("is")
    {
        w[..n - 1].to_owned()
    } else {
        w.to_owned()
    }
}

/// "scann" → "scan", "shipp" → "ship"; natural doubles such as "miss" or "fill" stay.
fn undouble(w: &str) -> String {
    let b = w.as_bytes();
    let n = b.len();
    if n >= 3 && b[n - 1] == b[n - 2] && b"bdgmnprt".contains(&b[n - 1]) {
        w[..n - 1].to_owned()
    } else {
        w.to_owned()
    }
}

/// One indexed document.
#[derive(Debug, Clone)]
struct Doc {
    tf: BTreeMap<String, u32>,
    len: usize,
}

/// A BM25 index over a fixed list of documents.
#[derive(Debug, Clone)]
pub(crate) struct Bm25 {
    docs: Vec<Doc>,
    df: BTreeMap<String, usize>,
    avg_len: f64,
}

impl Bm25 {
    /// Indexes documents given as term lists; scores come back in the same order.
    pub(crate) fn new(docs: impl IntoIterator<Item = Vec<String>>) -> Self {
        let mut df: BTreeMap<String, usize> = BTreeMap::new();
        let docs: Vec<Doc> = docs
            .into_iter()
            .map(|terms| {
                let mut tf = BTreeMap::new();
                for t in &terms {
                    *tf.entry(t.clone()).or_insert(0) += 1;
                }
                for t in tf.keys() {
                    *df.entry(t.clone()).or_insert(0) += 1;
                }
                Doc {
                    tf,
                    len: terms.len(),
                }
            })
            .collect();
        let total: usize = docs.iter().map(|d| d.len).sum();
        let avg_len = if docs.is_empty() {
            1.0
        } else {
            (total as f64 / docs.len() as f64).max(1.0)
        };
        Bm25 { docs, df, avg_len }
    }

    /// Number of documents.
    pub(crate) fn len(&self) -> usize {
        self.docs.len()
    }

    /// The score of every document for a query (repeated query terms count once).
    pub(crate) fn scores(&self, query: &[String]) -> Vec<f64> {
        let query: BTreeSet<&String> = query.iter().collect();
        let n = self.docs.len() as f64;
        self.docs
            .iter()
            .map(|doc| {
                query
                    .iter()
                    .filter_map(|t| {
                        let tf = f64::from(*doc.tf.get(*t)?);
                        let df = self.df.get(*t).copied().unwrap_or(0) as f64;
                        // The "+1" form of IDF stays positive even for a term in every doc.
                        let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                        let norm = K1 * (1.0 - B + B * doc.len as f64 / self.avg_len);
                        Some(idf * tf * (K1 + 1.0) / (tf + norm))
                    })
                    .sum()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Vec<String> {
        terms(s)
    }

    #[test]
    fn terms_drop_stop_words_and_stem() {
        assert_eq!(
            t("My receipts were scanned and I want deals!"),
            vec!["receipt", "scan", "deal"]
        );
        assert_eq!(stem("missing"), "miss");
        assert_eq!(stem("status"), "status");
        assert_eq!(stem("categories"), "category");
    }

    #[test]
    fn the_document_sharing_rare_terms_ranks_first() {
        let index = Bm25::new([
            t("receipt scanning problems and account login"),
            t("coffee deals, offers and discounts"),
            t("points balance and redeeming points"),
        ]);
        let s = index.scores(&t("find me coffee deals"));
        assert!(s[1] > s[0] && s[1] > s[2], "{s:?}");
        assert_eq!(s[0], 0.0);
        assert_eq!(index.len(), 3);
    }

    #[test]
    fn an_empty_index_or_query_scores_nothing() {
        let empty = Bm25::new(Vec::<Vec<String>>::new());
        assert!(empty.scores(&t("anything")).is_empty());
        let index = Bm25::new([t("coffee")]);
        assert_eq!(index.scores(&[]), vec![0.0]);
    }
}
