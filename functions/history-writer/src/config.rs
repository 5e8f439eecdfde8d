//! The function's settings, read once during Init.

use crate::error::{Error, Result};

/// Where the journal lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The journal table (D-24).
    pub table: String,
    /// The bucket holding large bodies and the archive.
    pub bucket: String,
}

impl Config {
    /// Reads `BATON_TABLE` and `BATON_BUCKET`.
    ///
    /// # Errors
    ///
    /// A missing table or bucket.
    pub fn from_env() -> Result<Self> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the same settings through `lookup` (tests pass a map).
    ///
    /// # Errors
    ///
    /// As [`Config::from_env`].
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let required = |variable: &'static str| {
            lookup(variable)
                .filter(|v| !v.trim().is_empty())
                .ok_or(Error::MissingSetting { variable })
        };
        Ok(Config {
            table: required("BATON_TABLE")?,
            bucket: required("BATON_BUCKET")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn table_and_bucket_are_read() {
        let config =
            Config::from_lookup(lookup(&[("BATON_TABLE", "t"), ("BATON_BUCKET", "b")])).unwrap();
        assert_eq!(config.table, "t");
        assert_eq!(config.bucket, "b");
    }

    #[test]
    fn missing_table_is_named() {
        let err = Config::from_lookup(lookup(&[("BATON_BUCKET", "b")])).unwrap_err();
        assert!(err.to_string().contains("BATON_TABLE"), "{err}");
    }

    #[test]
    fn a_blank_bucket_is_missing() {
        let err = Config::from_lookup(lookup(&[("BATON_TABLE", "t"), ("BATON_BUCKET", " ")]))
            .unwrap_err();
        assert!(err.to_string().contains("BATON_BUCKET"), "{err}");
    }
}
