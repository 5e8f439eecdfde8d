//! Reading a function's settings from its environment: the variables every Baton function
//! shares, and one error that names the variable.

use std::path::PathBuf;

/// A setting that is missing or not understood. The message names the variable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A required variable is not set.
    #[error("{0} is not set: the function needs it to start")]
    Missing(&'static str),
    /// A variable is set to something unusable.
    #[error("{name} is set to {value:?}, but it must be {expected}")]
    Invalid {
        /// The variable.
        name: &'static str,
        /// Its value.
        value: String,
        /// What it must be.
        expected: &'static str,
    },
}

/// The environment, read through a lookup (tests pass a map); blank values count as unset.
pub struct Env<F>(pub F);

impl<F: Fn(&str) -> Option<String>> Env<F> {
    /// The trimmed value, if set and not blank.
    pub fn get(&self, name: &str) -> Option<String> {
        (self.0)(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    }

    /// The value, or [`ConfigError::Missing`].
    ///
    /// # Errors
    /// The variable is not set.
    pub fn required(&self, name: &'static str) -> Result<String, ConfigError> {
        self.get(name).ok_or(ConfigError::Missing(name))
    }

    /// A positive whole number, `default` when unset.
    ///
    /// # Errors
    /// A value that is not a positive whole number.
    pub fn positive(&self, name: &'static str, default: u64) -> Result<u64, ConfigError> {
        match self.get(name) {
            None => Ok(default),
            Some(v) => v
                .parse::<u64>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or(ConfigError::Invalid {
                    name,
                    value: v,
                    expected: "a positive whole number",
                }),
        }
    }

    /// `BATON_REGISTRY` (default `registry`, beside the binary).
    pub fn registry(&self) -> PathBuf {
        PathBuf::from(
            self.get("BATON_REGISTRY")
                .unwrap_or_else(|| "registry".into()),
        )
    }

    /// `BATON_METRICS_NAMESPACE` (default `Baton`).
    pub fn metrics_namespace(&self) -> String {
        self.get("BATON_METRICS_NAMESPACE")
            .unwrap_or_else(|| "Baton".into())
    }

    /// `BATON_MODEL_IDS`: `key=model-id` pairs separated by commas.
    ///
    /// # Errors
    /// A value that is not such pairs.
    pub fn model_ids(&self) -> Result<Vec<(String, String)>, ConfigError> {
        match self.get("BATON_MODEL_IDS") {
            None => Ok(Vec::new()),
            Some(v) => parse_model_ids(&v).ok_or(ConfigError::Invalid {
                name: "BATON_MODEL_IDS",
                value: v,
                expected: "key=model-id pairs separated by commas",
            }),
        }
    }
}

/// Where long-term memory lives on AWS and how it is used (D-43), as the turn function
/// and the history writer both read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeployedMemory {
    /// `BATON_MEMORY_VECTOR_INDEX_ARN` with the journal's table: the items' table and the
    /// S3 Vectors index of their vectors.
    pub place: crate::recall::MemoryConfig,
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
            .filter(|d| crate::bedrock::embed::TITAN_V2_DIMENSIONS.contains(d))
            .ok_or(ConfigError::Invalid {
                name: "BATON_MEMORY_DIMENSIONS",
                value: dimensions.to_string(),
                expected: "256, 512 or 1024",
            })?;
        let place = crate::recall::MemoryConfig::from_index_arn(table, &arn, dimensions).ok_or(
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
                .unwrap_or_else(|| crate::bedrock::embed::TITAN_V2.to_owned()),
            on_by_default,
        }))
    }
}

/// `BATON_MODEL_IDS` (`key=model-id` pairs separated by commas) as pairs; `None` when an
/// entry has no `=` or an empty side.
pub fn parse_model_ids(text: &str) -> Option<Vec<(String, String)>> {
    text.split(',')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .map(|entry| {
            let (key, id) = entry.split_once('=')?;
            let (key, id) = (key.trim(), id.trim());
            (!key.is_empty() && !id.is_empty()).then(|| (key.to_owned(), id.to_owned()))
        })
        .collect()
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
