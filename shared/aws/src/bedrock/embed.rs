//! The `Embedder` port over Bedrock InvokeModel with Amazon Titan Text Embeddings V2
//! (D-43): [`BedrockEmbedder`].
//!
//! Titan V2 embeds one text per call: `{"inputText", "dimensions", "normalize": true}`
//! answers `{"embedding": [...], "inputTextTokenCount": n}`. The texts of one call are
//! embedded at once, one request each. Throttling, an unavailable or unready model, a
//! timeout and a refused request all mean no vector now (`Unavailable`); an answer that is
//! not a vector of the asked dimensions is `Malformed`.

use async_trait::async_trait;
use aws_sdk_bedrockruntime::Client;
use aws_sdk_bedrockruntime::error::{DisplayErrorContext, ProvideErrorMetadata};
use aws_sdk_bedrockruntime::primitives::Blob;
use baton_core::ports::memory::{EmbedError, Embedder};
use baton_core::recall::embed::{Embedding, normalise};
use serde::Deserialize;

/// Titan Text Embeddings V2's model id.
pub const TITAN_V2: &str = "amazon.titan-embed-text-v2:0";
/// The dimensions Titan V2 can answer with.
pub const TITAN_V2_DIMENSIONS: [usize; 3] = [256, 512, 1024];
/// Titan V2 takes at most 50,000 characters (and 8,192 tokens); a longer text is cut.
const MAX_INPUT_CHARS: usize = 50_000;

/// Why an embedder cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EmbedderError {
    /// Titan V2 answers only in 256, 512 or 1,024 dimensions.
    #[error("Titan Text Embeddings V2 answers in 256, 512 or 1024 dimensions, not {0}")]
    Dimensions(usize),
}

/// Titan Text Embeddings V2 on Bedrock as an [`Embedder`].
#[derive(Debug, Clone)]
pub struct BedrockEmbedder {
    client: Client,
    model_id: String,
    dimensions: usize,
    /// The id kept with every vector: the model id and the dimensions, since vectors of
    /// one model in two sizes never compare.
    model: String,
}

#[derive(Deserialize)]
struct Answer {
    embedding: Vec<f32>,
}

impl BedrockEmbedder {
    /// Titan V2 in `dimensions` dimensions over `client` (built with
    /// [`super::client`]: the SDK's retries are off, a caller decides whether to wait).
    ///
    /// # Errors
    /// Dimensions Titan V2 does not offer.
    pub fn new(client: Client, dimensions: usize) -> Result<Self, EmbedderError> {
        Self::with_model_id(client, TITAN_V2, dimensions)
    }

    /// As [`BedrockEmbedder::new`] with another model id of the same wire (a regional
    /// inference profile of Titan V2, say).
    ///
    /// # Errors
    /// Dimensions Titan V2 does not offer.
    pub fn with_model_id(
        client: Client,
        model_id: &str,
        dimensions: usize,
    ) -> Result<Self, EmbedderError> {
        if !TITAN_V2_DIMENSIONS.contains(&dimensions) {
            return Err(EmbedderError::Dimensions(dimensions));
        }
        Ok(BedrockEmbedder {
            client,
            model_id: model_id.to_owned(),
            dimensions,
            model: format!("{model_id}/{dimensions}"),
        })
    }

    /// The dimensions of its vectors.
    pub fn dimensions(&self) -> usize {
        self.dimensions
    }

    async fn embed_one(&self, text: &str) -> Result<Embedding, EmbedError> {
        let input: String = text.chars().take(MAX_INPUT_CHARS).collect();
        let body = serde_json::json!({
            "inputText": input,
            "dimensions": self.dimensions,
            "normalize": true,
        });
        let body = serde_json::to_vec(&body).map_err(|e| EmbedError::Malformed(e.to_string()))?;
        let out = self
            .client
            .invoke_model()
            .model_id(&self.model_id)
            .content_type("application/json")
            .accept("application/json")
            .body(Blob::new(body))
            .send()
            .await
            .map_err(|e| {
                let code = e.as_service_error().and_then(ProvideErrorMetadata::code);
                tracing::warn!(
                    error = %DisplayErrorContext(&e),
                    model = %self.model_id,
                    "bedrock: an embedding failed"
                );
                EmbedError::Unavailable(match code {
                    Some(code) => format!("{} answered {code}", self.model_id),
                    None => format!("{} cannot be reached", self.model_id),
                })
            })?;
        let answer: Answer = serde_json::from_slice(out.body().as_ref())
            .map_err(|e| EmbedError::Malformed(format!("{}: {e}", self.model_id)))?;
        let mut vector = answer.embedding;
        if vector.len() != self.dimensions || !vector.iter().all(|x| x.is_finite()) {
            return Err(EmbedError::Malformed(format!(
                "{} answered {} values, not {} finite ones",
                self.model_id,
                vector.len(),
                self.dimensions
            )));
        }
        // Asked normalised already; again, so that cosine is the dot product whatever
        // the rounding on the wire.
        normalise(&mut vector);
        Ok(Embedding {
            model: self.model.clone(),
            vector,
        })
    }
}

#[async_trait]
impl Embedder for BedrockEmbedder {
    fn model(&self) -> &str {
        &self.model
    }

    async fn embed(&self, texts: &[&str]) -> Result<Vec<Embedding>, EmbedError> {
        futures::future::try_join_all(texts.iter().map(|t| self.embed_one(t))).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client() -> Client {
        let conf = aws_sdk_bedrockruntime::Config::builder()
            .behavior_version(aws_sdk_bedrockruntime::config::BehaviorVersion::latest())
            .region(aws_sdk_bedrockruntime::config::Region::new("us-east-1"))
            .build();
        Client::from_conf(conf)
    }

    #[test]
    fn only_titans_dimensions_are_taken_and_named_in_the_model() {
        let e = BedrockEmbedder::new(client(), 256).unwrap();
        assert_eq!(e.model(), "amazon.titan-embed-text-v2:0/256");
        assert_eq!(
            BedrockEmbedder::new(client(), 300).unwrap_err(),
            EmbedderError::Dimensions(300)
        );
    }
}
