//! Hybrid retrieval's last step (D-43): the text search's ranking and the vector search's
//! ranking fused by reciprocal rank fusion, each memory scored `Σ 1 / (K + rank)` over the
//! lists it is in. Ranks, not scores, are fused: a full-text relevance and a cosine
//! similarity are on scales that do not compare.

use std::collections::HashMap;

use super::{Memory, MemoryId, Scored};

/// RRF's constant: how much the first ranks count over the later ones (60, as in the
/// method's paper and most engines since).
pub const RRF_K: f32 = 60.0;

/// A memory the fusion kept, with where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Fused {
    /// The memory.
    pub memory: Memory,
    /// Its fused score.
    pub score: f32,
    /// Its rank in the text search (1 is first), if it was found there.
    pub text_rank: Option<usize>,
    /// Its similarity in the vector search, if it was found there.
    pub similarity: Option<f32>,
}

/// Fuses a text search's hits and a vector search's, best first. A vector hit below
/// `min_similarity` counts only if the text search found it too: nearest neighbours are
/// always found, relevant or not, and an unrelated memory must not enter the prompt
/// because it was the least far away.
pub fn reciprocal_rank(text: &[Scored], vector: &[Scored], min_similarity: f32) -> Vec<Fused> {
    let mut fused: Vec<Fused> = Vec::with_capacity(text.len() + vector.len());
    let mut at: HashMap<MemoryId, usize> = HashMap::new();
    for (rank, hit) in text.iter().enumerate() {
        if at.contains_key(&hit.memory.id) {
            continue;
        }
        at.insert(hit.memory.id.clone(), fused.len());
        fused.push(Fused {
            memory: hit.memory.clone(),
            score: 1.0 / (RRF_K + rank as f32 + 1.0),
            text_rank: Some(rank + 1),
            similarity: None,
        });
    }
    for (rank, hit) in vector.iter().enumerate() {
        let gain = 1.0 / (RRF_K + rank as f32 + 1.0);
        match at.get(&hit.memory.id) {
            Some(&i) => {
                if let Some(entry) = fused.get_mut(i)
                    && entry.similarity.is_none()
                {
                    entry.score += gain;
                    entry.similarity = Some(hit.score);
                }
            }
            None if hit.score >= min_similarity => {
                at.insert(hit.memory.id.clone(), fused.len());
                fused.push(Fused {
                    memory: hit.memory.clone(),
                    score: gain,
                    text_rank: None,
                    similarity: Some(hit.score),
                });
            }
            None => {}
        }
    }
    // Ties go to the newer memory, then the id, so the order is stable.
    fused.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(b.memory.created_ms.cmp(&a.memory.created_ms))
            .then(a.memory.id.cmp(&b.memory.id))
    });
    fused
}
