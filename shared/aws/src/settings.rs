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
