//! Memory as a deployed function keeps it: its settings from the environment, and
//! [`DynamoMemory`] over the function's clients with Titan V2 on Bedrock for its vectors.

use std::sync::Arc;

use baton_core::ports::memory::{Embedder, MemoryStore};

use super::{DynamoMemory, MemoryConfig};
use crate::bedrock::embed::{BedrockEmbedder, EmbedderError, TITAN_V2, TITAN_V2_DIMENSIONS};
use crate::sdk::Clients;
use crate::settings::{ConfigError, Env};

/// Where long-term memory lives on AWS and how it is used (D-43), as the turn function
/// and the history writer both read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeployedMemory {
    /// `BATON_MEMORY_VECTOR_INDEX_ARN` with the journal's table: the items' table and the
    /// S3 Vectors index of their vectors.
    pub place: MemoryConfig,
    /// `BATON_EMBEDDING_MODEL`: the Bedrock embedding model (default Titan Text
    /// Embeddings V2).
    pub embedding_model: String,
    /// `BATON_MEMORY`: `true` or `false` (default), for principals who chose nothing.
    pub on_by_default: bool,
}

impl<F: Fn(&str) -> Option<String>> Env<F> {
    /// Long-term memory's settings, its items in `table`; `None` (no memory kept) when
    /// `BATON_MEMORY_VECTOR_INDEX_ARN` is not set.
    ///
    /// # Errors
    /// A value not understood.
    pub fn memory(&self, table: &str) -> Result<Option<DeployedMemory>, ConfigError> {
        let Some(arn) = self.get("BATON_MEMORY_VECTOR_INDEX_ARN") else {
            return Ok(None);
        };
        let on_by_default = match self.get("BATON_MEMORY").as_deref() {
            None | Some("false" | "off") => false,
            Some("true" | "on") => true,
            Some(other) => {
                return Err(ConfigError::Invalid {
                    name: "BATON_MEMORY",
                    value: other.to_owned(),
                    expected: "true or false",
                });
            }
        };
        let dimensions = self.positive("BATON_MEMORY_DIMENSIONS", 256)?;
        let dimensions = usize::try_from(dimensions)
            .ok()
            .filter(|d| TITAN_V2_DIMENSIONS.contains(d))
            .ok_or(ConfigError::Invalid {
                name: "BATON_MEMORY_DIMENSIONS",
                value: dimensions.to_string(),
                expected: "256, 512 or 1024",
            })?;
        let place = MemoryConfig::from_index_arn(table, &arn, dimensions).ok_or(
            ConfigError::Invalid {
                name: "BATON_MEMORY_VECTOR_INDEX_ARN",
                value: arn,
                expected: "an S3 Vectors index ARN (arn:aws:s3vectors:<region>:<account>:bucket/<bucket>/index/<index>)",
            },
        )?;
        Ok(Some(DeployedMemory {
            place,
            embedding_model: self
                .get("BATON_EMBEDDING_MODEL")
                .unwrap_or_else(|| TITAN_V2.to_owned()),
            on_by_default,
        }))
    }
}

/// Long-term memory's two ports.
#[derive(Clone)]
pub struct MemoryParts {
    /// Where memories are kept and searched.
    pub store: Arc<dyn MemoryStore>,
    /// What makes their vectors.
    pub embedder: Arc<dyn Embedder>,
}

/// The store and the embedder of long-term memory, as `memory` places them.
///
/// # Errors
/// An embedding model that cannot answer in the index's dimensions.
pub fn deployed(clients: &Clients, memory: &DeployedMemory) -> Result<MemoryParts, EmbedderError> {
    let embedder = BedrockEmbedder::with_model_id(
        clients.bedrock.clone(),
        &memory.embedding_model,
        memory.place.dimensions(),
    )?;
    let store = DynamoMemory::new(
        clients.dynamodb.clone(),
        clients.s3vectors.clone(),
        memory.place.clone(),
    );
    Ok(MemoryParts {
        store: Arc::new(store),
        embedder: Arc::new(embedder),
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Env<impl Fn(&str) -> Option<String>> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Env(move |name: &str| map.get(name).cloned())
    }

    const ARN: &str = "arn:aws:s3vectors:eu-west-1:123456789012:bucket/b/index/i";

    #[test]
    fn memory_is_kept_only_where_its_vectors_can_live() {
        assert_eq!(env(&[]).memory("t"), Ok(None));
        let set = env(&[
            ("BATON_MEMORY_VECTOR_INDEX_ARN", ARN),
            ("BATON_MEMORY", "true"),
        ])
        .memory("t")
        .unwrap()
        .unwrap();
        assert_eq!(
            (
                set.place.vector_bucket(),
                set.place.vector_index(),
                set.place.dimensions(),
                set.on_by_default
            ),
            ("b", "i", 256, true)
        );
        assert_eq!(set.embedding_model, "amazon.titan-embed-text-v2:0");
        let bad = |name: &str, value: &str| {
            let mut pairs = vec![("BATON_MEMORY_VECTOR_INDEX_ARN", ARN)];
            pairs.push((name, value));
            env(&pairs).memory("t").unwrap_err().to_string()
        };
        assert!(bad("BATON_MEMORY", "yes").contains("true or false"));
        assert!(bad("BATON_MEMORY_DIMENSIONS", "300").contains("256, 512 or 1024"));
        assert!(bad("BATON_MEMORY_DIMENSIONS", "-1").contains("positive whole number"));
        assert!(bad("BATON_MEMORY_VECTOR_INDEX_ARN", "memories").contains("S3 Vectors index ARN"));
    }
}
