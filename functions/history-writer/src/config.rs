//! The function's settings, read once during Init.

use crate::error::{Error, Result};

/// Turns since the last rolling summary that make an episode due for compaction, unless
/// `BATON_COMPACTION_THRESHOLD` says otherwise.
pub const DEFAULT_COMPACTION_THRESHOLD: u64 = 20;

/// Where the journal lives and when an episode needs compacting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The journal table (D-24).
    pub table: String,
    /// The bucket holding large bodies and the archive.
    pub bucket: String,
    /// Turns since the last summary at which the compaction mark is set.
    pub compaction_threshold: u64,
}

impl Config {
    /// Reads `BATON_TABLE`, `BATON_BUCKET` and `BATON_COMPACTION_THRESHOLD` (optional).
    ///
    /// # Errors
    ///
    /// A missing table or bucket, or a threshold that is not a positive integer.
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
        let compaction_threshold = match lookup("BATON_COMPACTION_THRESHOLD") {
            None => DEFAULT_COMPACTION_THRESHOLD,
            Some(value) => match value.trim().parse::<u64>() {
                Ok(n) if n > 0 => n,
                _ => {
                    return Err(Error::BadSetting {
                        variable: "BATON_COMPACTION_THRESHOLD",
                        value,
                        expected: "a whole number of turns, at least 1",
                    });
                }
            },
        };
        Ok(Config {
            table: required("BATON_TABLE")?,
            bucket: required("BATON_BUCKET")?,
            compaction_threshold,
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
    fn threshold_defaults_to_twenty_turns() {
        let config =
            Config::from_lookup(lookup(&[("BATON_TABLE", "t"), ("BATON_BUCKET", "b")])).unwrap();
        assert_eq!(config.compaction_threshold, 20);
        assert_eq!(config.table, "t");
        assert_eq!(config.bucket, "b");
    }

    #[test]
    fn missing_table_is_named() {
        let err = Config::from_lookup(lookup(&[("BATON_BUCKET", "b")])).unwrap_err();
        assert!(err.to_string().contains("BATON_TABLE"), "{err}");
    }

    #[test]
    fn zero_or_garbage_threshold_is_refused() {
        for bad in ["0", "twenty", "-3"] {
            let err = Config::from_lookup(lookup(&[
                ("BATON_TABLE", "t"),
                ("BATON_BUCKET", "b"),
                ("BATON_COMPACTION_THRESHOLD", bad),
            ]))
            .unwrap_err();
            assert!(
                err.to_string().contains("BATON_COMPACTION_THRESHOLD"),
                "{err}"
            );
        }
    }
}
