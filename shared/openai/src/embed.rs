//! Vectors for memory search (D-43) from any server speaking OpenAI's embeddings API
//! (`POST {base_url}/embeddings`): OpenAI itself, Ollama, vLLM, llama.cpp's server started
//! with embeddings on.
//!
//! Every vector is normalised here (cosine similarity is then a dot product), answers are
//! put back in input order by their `index`, and a reply is refused whole when it has
//! another count of vectors, vectors of unequal lengths, or values that are not finite.
//! A server that answers one vector per token (llama.cpp's Python server with a generative
//! model does) has them averaged into one, the mean pooling sentence embedders use.

use std::time::Duration;

use async_trait::async_trait;
use baton_core::ports::memory::{EmbedError, Embedder};
use baton_core::recall::embed::{Embedding, normalise};
use serde::Deserialize;
use serde_json::json;

use crate::SetupError;

/// How long one embeddings call may take.
const TIMEOUT: Duration = Duration::from_secs(30);
/// The largest reply read: 64 texts of 4,096 dimensions as JSON numbers fit well within.
const MAX_REPLY_BYTES: usize = 16 << 20;

/// An embedding model behind an OpenAI-compatible server.
#[derive(Debug, Clone)]
pub struct OpenAiEmbedder {
    client: reqwest::Client,
    /// `{base_url}/embeddings`.
    url: String,
    /// The id the server knows the model by.
    server_model: String,
    /// The id kept with each vector: the server's model id, prefixed.
    model: String,
    api_key: Option<String>,
    min_similarity: f32,
}

#[derive(Deserialize)]
struct Reply {
    data: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    #[serde(default)]
    index: Option<usize>,
    embedding: Vectors,
}

/// One vector, or one a token.
#[derive(Deserialize)]
#[serde(untagged)]
enum Vectors {
    One(Vec<f64>),
    PerToken(Vec<Vec<f64>>),
}

impl Vectors {
    /// The vector, token vectors averaged; `None` when empty or uneven.
    fn pooled(self) -> Option<Vec<f64>> {
        match self {
            Vectors::One(v) => (!v.is_empty()).then_some(v),
            Vectors::PerToken(tokens) => {
                let dims = tokens.first()?.len();
                if dims == 0 || tokens.iter().any(|t| t.len() != dims) {
                    return None;
                }
                let mut sum = vec![0.0; dims];
                for token in &tokens {
                    for (s, x) in sum.iter_mut().zip(token) {
                        *s += x;
                    }
                }
                let n = tokens.len() as f64;
                Some(sum.into_iter().map(|s| s / n).collect())
            }
        }
    }
}

impl OpenAiEmbedder {
    /// The model `model` at `base_url` (e.g. `http://127.0.0.1:11434/v1`), with a bearer
    /// key when the server wants one; `min_similarity` is the model's floor of relevance
    /// (see [`Embedder::min_similarity`]).
    ///
    /// # Errors
    /// The HTTP client could not be built.
    pub fn new(
        base_url: &str,
        model: &str,
        api_key: Option<String>,
        min_similarity: f32,
    ) -> Result<Self, SetupError> {
        Ok(OpenAiEmbedder {
            client: crate::client()?,
            url: format!("{}/embeddings", base_url.trim_end_matches('/')),
            server_model: model.to_owned(),
            model: format!("openai:{model}"),
            api_key,
            min_similarity,
        })
    }

    async fn call(&self, texts: &[&str]) -> Result<Vec<Embedding>, EmbedError> {
        let mut request = self
            .client
            .post(&self.url)
            .timeout(TIMEOUT)
            .json(&json!({ "model": self.server_model, "input": texts }));
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let mut response = request
            .send()
            .await
            .map_err(|e| EmbedError::Unavailable(format!("{}: {e}", self.url)))?;
        let status = response.status();
        if !status.is_success() {
            return Err(EmbedError::Unavailable(format!(
                "{} answered {status}",
                self.url
            )));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| EmbedError::Unavailable(format!("{}: {e}", self.url)))?
        {
            body.extend_from_slice(&chunk);
            if body.len() > MAX_REPLY_BYTES {
                return Err(EmbedError::Malformed(format!(
                    "the reply is over {MAX_REPLY_BYTES} bytes"
                )));
            }
        }
        let reply: Reply = serde_json::from_slice(&body)
            .map_err(|e| EmbedError::Malformed(format!("not an embeddings reply: {e}")))?;
        self.vectors(reply, texts.len())
    }

    /// The reply's vectors in input order, checked and normalised.
    fn vectors(&self, reply: Reply, expected: usize) -> Result<Vec<Embedding>, EmbedError> {
        if reply.data.len() != expected {
            return Err(EmbedError::Malformed(format!(
                "{} vectors for {expected} texts",
                reply.data.len()
            )));
        }
        let mut slots: Vec<Option<Vec<f32>>> = vec![None; expected];
        for (position, item) in reply.data.into_iter().enumerate() {
            let at = item.index.unwrap_or(position);
            let slot = slots
                .get_mut(at)
                .filter(|s| s.is_none())
                .ok_or_else(|| EmbedError::Malformed(format!("index {at} is out of place")))?;
            let Some(values) = item
                .embedding
                .pooled()
                .filter(|v| v.iter().all(|x| x.is_finite()))
            else {
                return Err(EmbedError::Malformed(
                    "a vector is empty, uneven or holds a value that is not a number".into(),
                ));
            };
            let mut vector: Vec<f32> = values.iter().map(|x| *x as f32).collect();
            normalise(&mut vector);
            *slot = Some(vector);
        }
        let vectors: Vec<Vec<f32>> = slots.into_iter().flatten().collect();
        if vectors.windows(2).any(|w| w[0].len() != w[1].len()) {
            return Err(EmbedError::Malformed("vectors of unequal lengths".into()));
        }
        Ok(vectors
            .into_iter()
            .map(|vector| Embedding {
                model: self.model.clone(),
                vector,
            })
            .collect())
    }
}

#[async_trait]
impl Embedder for OpenAiEmbedder {
    fn model(&self) -> &str {
        &self.model
    }

    fn min_similarity(&self) -> f32 {
        self.min_similarity
    }

    async fn embed(&self, texts: &[&str]) -> Result<Vec<Embedding>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        self.call(texts).await
    }
}
