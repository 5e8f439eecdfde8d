//! Searching: full text over the postings, similarity over the vector index; both read
//! the hits' memory items and keep only what the filter admits.

use std::collections::HashMap;

use baton_core::Principal;
use baton_core::ports::store::StoreError;
use baton_core::recall::embed::Embedding;
use baton_core::recall::{Memory, MemoryFilter, Scored, terms};

use super::items::{self, Item};
use super::vectors::MAX_TOP_K;
use super::{DynamoMemory, MAX_TERMS, keys};

/// Memory items read per round while looking for `limit` that pass the filter.
const READ_ROUND: usize = 100;
/// The most postings one term's Query reads (its pages stop there): a word in more
/// memories than this is too common to rank anything.
const MAX_POSTINGS: usize = 20_000;

/// The distinct stems of `terms`, matched as the postings were made ([`terms::stem`] of
/// each word, lower case); every character of a term is data: only its words are looked
/// up, never a key prefix of its own making.
pub(crate) fn query_stems(query: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for term in query {
        for word in terms::words(term) {
            let stem = terms::stem(&word);
            if !stem.is_empty()
                && stem.len() <= keys::MAX_STEM_BYTES
                && !out.iter().any(|s| s == stem)
            {
                out.push(stem.to_owned());
            }
        }
    }
    out.truncate(MAX_TERMS);
    out
}

/// Ranks memories by the stems they hold, each stem weighted by its inverse document
/// frequency among the memories found (BM25's, without term frequency: a statement is
/// short). Best first; equal scores newest first. `postings[i]` are (memory id, created)
/// of stem `i`.
pub(crate) fn rank(postings: &[Vec<(String, u64)>]) -> Vec<(String, f32)> {
    let mut found: HashMap<&str, (f32, u64)> = HashMap::new();
    for list in postings {
        for (id, created) in list {
            found.entry(id.as_str()).or_insert((0.0, *created));
        }
    }
    let n = found.len() as f32;
    for list in postings {
        let df = list.len() as f32;
        let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
        for (id, _) in list {
            if let Some(entry) = found.get_mut(id.as_str()) {
                entry.0 += idf;
            }
        }
    }
    let mut ranked: Vec<(&str, f32, u64)> = found
        .into_iter()
        .map(|(id, (score, created))| (id, score, created))
        .collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.2.cmp(&a.2)).then(a.0.cmp(b.0)));
    ranked
        .into_iter()
        .map(|(id, score, _)| (id.to_owned(), score))
        .collect()
}

impl DynamoMemory {
    /// Full-text search (see the port).
    pub(crate) async fn search_text_memories(
        &self,
        principal: &Principal,
        query: &[String],
        filter: &MemoryFilter,
        limit: usize,
    ) -> Result<Vec<Scored>, StoreError> {
        let doing = "searching memories";
        let stems = query_stems(query);
        if stems.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let partition = keys::partition(principal.as_str());
        let lookups = stems.iter().map(|stem| {
            self.query_prefix(
                partition.clone(),
                keys::term_prefix(stem),
                &[keys::CREATED_MS],
                doing,
            )
        });
        let mut postings = Vec::with_capacity(stems.len());
        for found in futures::future::try_join_all(lookups).await? {
            let mut list = Vec::with_capacity(found.len().min(MAX_POSTINGS));
            for item in found.iter().take(MAX_POSTINGS) {
                let sk = items::string(item, keys::SK).unwrap_or_default();
                if let Some(id) = keys::posting_id(sk) {
                    let created = items::number(item, keys::CREATED_MS)?.unwrap_or(0);
                    list.push((id.to_owned(), created));
                }
            }
            postings.push(list);
        }
        let ranked = rank(&postings);
        let mut hits = Vec::new();
        for round in ranked.chunks(READ_ROUND) {
            let ids: Vec<&str> = round.iter().map(|(id, _)| id.as_str()).collect();
            let memories = self.memories(principal, &ids, doing).await?;
            for (id, score) in round {
                if let Some(memory) = memories.get(id.as_str()).filter(|m| filter.admits(m)) {
                    hits.push(Scored {
                        memory: memory.clone(),
                        score: *score,
                    });
                }
            }
            if hits.len() >= limit {
                break;
            }
        }
        hits.truncate(limit);
        Ok(hits)
    }

    /// Similarity search (see the port): at most [`MAX_TOP_K`] results.
    pub(crate) async fn search_vector_memories(
        &self,
        principal: &Principal,
        query: &Embedding,
        filter: &MemoryFilter,
        limit: usize,
    ) -> Result<Vec<Scored>, StoreError> {
        let doing = "searching memories by similarity";
        if limit == 0 || !self.fits_index(query) {
            // A vector the index cannot hold was never stored either: nothing is near.
            return Ok(Vec::new());
        }
        let pseudonym = keys::pseudonym(principal.as_str());
        // A few more than asked, for hits whose item no longer passes (a replaced memory
        // whose vector could not be marked, an erasure under way).
        let top_k = limit.saturating_add(limit / 2 + 2).min(MAX_TOP_K);
        let nearest = self.nearest(&pseudonym, query, filter, top_k).await?;
        let ids: Vec<&str> = nearest.iter().map(|(id, _)| id.as_str()).collect();
        let memories = self.memories_with_model(principal, &ids, doing).await?;
        let mut hits: Vec<Scored> = nearest
            .iter()
            .filter_map(|(id, score)| {
                let (memory, model) = memories.get(id.as_str())?;
                (model.as_deref() == Some(query.model.as_str()) && filter.admits(memory)).then(
                    || Scored {
                        memory: memory.clone(),
                        score: *score,
                    },
                )
            })
            .collect();
        hits.truncate(limit);
        Ok(hits)
    }

    /// The principal's memories of these ids that exist, by id.
    async fn memories(
        &self,
        principal: &Principal,
        ids: &[&str],
        doing: &'static str,
    ) -> Result<HashMap<String, Memory>, StoreError> {
        Ok(self
            .memories_with_model(principal, ids, doing)
            .await?
            .into_iter()
            .map(|(id, (memory, _))| (id, memory))
            .collect())
    }

    /// As [`DynamoMemory::memories`], with the model of each one's vector.
    async fn memories_with_model(
        &self,
        principal: &Principal,
        ids: &[&str],
        doing: &'static str,
    ) -> Result<HashMap<String, (Memory, Option<String>)>, StoreError> {
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        let wanted: Vec<Item> = ids
            .iter()
            .map(|id| items::key(principal, keys::item_sk(id)))
            .collect();
        let mut out = HashMap::new();
        for item in self.get_many(wanted, doing).await? {
            if let Some(stored) = items::stored(&item, principal)? {
                out.insert(
                    stored.memory.id.as_str().to_owned(),
                    (stored.memory, stored.model),
                );
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_terms_are_words_and_bounded() {
        let odd: Vec<String> = ["dog\" OR \"x", "*", "MEM#I#", "Dogs"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        assert_eq!(query_stems(&odd), ["dog", "or", "x", "mem", "i"]);
        let many: Vec<String> = (0..40).map(|i| format!("word{i}")).collect();
        assert_eq!(query_stems(&many).len(), MAX_TERMS);
    }

    #[test]
    fn rarer_terms_weigh_more_and_more_terms_beat_fewer() {
        let dog = vec![("m1".to_owned(), 1), ("m2".to_owned(), 2)];
        let call = vec![("m1".to_owned(), 1)];
        let ranked = rank(&[dog, call]);
        assert_eq!(ranked[0].0, "m1");
        assert!(ranked[0].1 > ranked[1].1);
        assert!(ranked[1].1 > 0.0);
    }
}
