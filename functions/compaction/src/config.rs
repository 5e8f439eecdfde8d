//! The function's settings, read from its environment once during Init.

use std::path::PathBuf;
use std::time::Duration;

use baton_aws::journal::JournalConfig;
use baton_aws::settings::Env;

pub use baton_aws::settings::ConfigError;

/// Everything the function reads from its environment.
#[derive(Debug, Clone)]
pub struct Config {
    /// `BATON_TABLE`: the journal's DynamoDB table (required).
    pub table: String,
    /// `BATON_BUCKET`: the S3 bucket of large bodies (required).
    pub bucket: String,
    /// `BATON_REGISTRY`: the registry folder (default `registry`, beside the binary).
    pub registry: PathBuf,
    /// `BATON_MODEL_IDS`: the Bedrock model id for some registry models, as `key=id` pairs
    /// separated by commas (as the turn function reads it).
    pub model_ids: Vec<(String, String)>,
    /// `BATON_METRICS_NAMESPACE`: the CloudWatch namespace (default `Baton`).
    pub metrics_namespace: String,
    /// `BATON_ORCHESTRATOR`: the orchestrator whose memory settings apply (default: the
    /// registry's only top-level one).
    pub orchestrator: Option<String>,
    /// `BATON_COMPACTION_MAX_EPISODES`: episodes one run handles at most (default 100).
    pub max_episodes: usize,
    /// `BATON_SUMMARIZE_TIMEOUT_MS`: one summarizer call's limit (default 30 s).
    pub summarize_timeout_ms: u64,
    /// `BATON_COMPACTION_RESERVE_MS`: no episode is started this close to the invocation's
    /// deadline (default 20 s: one episode's summarizer calls and write fit in it).
    pub reserve: Duration,
}

impl Config {
    /// Reads the process environment.
    ///
    /// # Errors
    /// A required variable is missing, or a value is not understood.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads settings through `lookup` (tests pass a map).
    ///
    /// # Errors
    /// A required variable is missing, or a value is not understood.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let env = Env(lookup);
        let number = |name, default| env.positive(name, default);
        Ok(Config {
            table: env.required("BATON_TABLE")?,
            bucket: env.required("BATON_BUCKET")?,
            registry: env.registry(),
            model_ids: env.model_ids()?,
            metrics_namespace: env.metrics_namespace(),
            orchestrator: env.get("BATON_ORCHESTRATOR"),
            max_episodes: usize::try_from(number("BATON_COMPACTION_MAX_EPISODES", 100)?)
                .unwrap_or(usize::MAX),
            summarize_timeout_ms: number("BATON_SUMMARIZE_TIMEOUT_MS", 30_000)?,
            reserve: Duration::from_millis(number("BATON_COMPACTION_RESERVE_MS", 20_000)?),
        })
    }

    /// The journal's settings.
    pub fn journal(&self) -> JournalConfig {
        JournalConfig::new(&self.table, &self.bucket)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        Config::from_lookup(|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    #[test]
    fn the_table_and_bucket_are_required_and_the_rest_has_defaults() {
        assert_eq!(
            config(&[("BATON_BUCKET", "b")]).unwrap_err(),
            ConfigError::Missing("BATON_TABLE")
        );
        let c = config(&[("BATON_TABLE", "t"), ("BATON_BUCKET", "b")]).unwrap();
        assert_eq!((c.max_episodes, c.summarize_timeout_ms), (100, 30_000));
        assert_eq!(c.reserve, Duration::from_secs(20));
        assert_eq!(c.registry, PathBuf::from("registry"));
        assert!(c.model_ids.is_empty());
    }

    #[test]
    fn bad_values_name_their_variable() {
        let e = config(&[
            ("BATON_TABLE", "t"),
            ("BATON_BUCKET", "b"),
            ("BATON_COMPACTION_MAX_EPISODES", "lots"),
        ])
        .unwrap_err();
        assert!(
            e.to_string().contains("BATON_COMPACTION_MAX_EPISODES"),
            "{e}"
        );
        let e = config(&[
            ("BATON_TABLE", "t"),
            ("BATON_BUCKET", "b"),
            ("BATON_MODEL_IDS", "haiku"),
        ])
        .unwrap_err();
        assert!(e.to_string().contains("BATON_MODEL_IDS"), "{e}");
    }
}
