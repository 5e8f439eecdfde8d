//! Vectors for similarity search: the vector type, cosine similarity, and the embedder
//! that needs no model (D-43).
//!
//! [`HashedWords`] puts a text's content-word stems and their character trigrams into a
//! fixed number of dimensions by hashing (the "hashing trick"), signed so that collisions
//! cancel rather than add up, and normalises the result. It knows no meaning: "bike" is
//! near "bikes" and "biking" (shared trigrams), never near "bicycle". It is what a build
//! without a model uses; a real embedding model (a local one behind the `minilm` feature,
//! Bedrock's or an OpenAI-compatible server's) replaces it by configuration.

use serde::{Deserialize, Serialize};

use super::terms;

/// A text's vector and the model that made it: vectors of two models are never compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Embedding {
    /// The model's id (e.g. `hashed-words-256`, `amazon.titan-embed-text-v2:0`).
    pub model: String,
    /// The vector, of unit length.
    pub vector: Vec<f32>,
}

/// Cosine similarity of two unit vectors (their dot product); 0 when their lengths differ.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() {
        return 0.0;
    }
    let mut lanes = Lanes::default();
    for (x, y) in a.chunks(LANES).zip(b.chunks(LANES)) {
        lanes.add(x, y);
    }
    lanes.sum()
}

/// How many partial sums a dot product keeps.
pub const LANES: usize = 8;

/// A dot product's partial sums, one per lane: independent additions the processor can
/// run side by side (a single running sum waits on each addition before the next, several
/// times slower over a scan of thousands of vectors). Every store sums in this order, so
/// the same vectors score the same wherever they are compared.
#[derive(Debug, Clone, Copy, Default)]
pub struct Lanes([f32; LANES]);

impl Lanes {
    /// Adds the products of one chunk (at most [`LANES`] long) of each vector.
    #[inline]
    pub fn add(&mut self, x: &[f32], y: &[f32]) {
        for ((acc, a), b) in self.0.iter_mut().zip(x).zip(y) {
            *acc += a * b;
        }
    }

    /// The dot product.
    #[inline]
    pub fn sum(&self) -> f32 {
        self.0.iter().sum()
    }
}

/// Scales `vector` to unit length (a zero vector stays zero).
pub fn normalise(vector: &mut [f32]) {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        for x in vector.iter_mut() {
            *x /= norm;
        }
    }
}

/// The model-free embedder: hashed content words and trigrams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HashedWords {
    dims: usize,
}

impl Default for HashedWords {
    fn default() -> Self {
        HashedWords { dims: 256 }
    }
}

/// A word's weight against one of its trigrams': whole words say more.
const WORD_WEIGHT: f32 = 1.0;
const TRIGRAM_WEIGHT: f32 = 0.35;

impl HashedWords {
    /// An embedder of `dims` dimensions (at least 16).
    pub fn new(dims: usize) -> HashedWords {
        HashedWords { dims: dims.max(16) }
    }

    /// Its model id, which names its dimensions.
    pub fn model_id(&self) -> String {
        format!("hashed-words-{}", self.dims)
    }

    /// The vector of `text`.
    pub fn embed(&self, text: &str) -> Embedding {
        let mut vector = vec![0.0f32; self.dims];
        for word in terms::content_words(text) {
            let stem = terms::stem(&word);
            self.add(&mut vector, stem.as_bytes(), WORD_WEIGHT);
            let padded: Vec<char> = format!("^{stem}$").chars().collect();
            for gram in padded.windows(3) {
                let gram: String = gram.iter().collect();
                self.add(&mut vector, gram.as_bytes(), TRIGRAM_WEIGHT);
            }
        }
        normalise(&mut vector);
        Embedding {
            model: self.model_id(),
            vector,
        }
    }

    fn add(&self, vector: &mut [f32], feature: &[u8], weight: f32) {
        let hash = fnv1a(feature);
        // usize is at least 32 bits on every target Baton builds for; the modulus keeps
        // the index inside the vector.
        let index = (hash % self.dims as u64) as usize;
        let sign = if hash >> 63 == 0 { 1.0 } else { -1.0 };
        if let Some(slot) = vector.get_mut(index) {
            *slot += sign * weight;
        }
    }
}

/// FNV-1a, 64 bits: stable across builds and platforms, which a stored vector needs.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}
