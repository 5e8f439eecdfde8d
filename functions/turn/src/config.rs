//! The function's settings, read from its environment once during Init.

use std::path::PathBuf;
use std::time::Duration;

use baton_aws::journal::JournalConfig;
use baton_aws::recall::DeployedMemory;
use baton_aws::sdk::WarmUpTargets;
use baton_aws::settings::Env;
use baton_runtime::{BlindPictures, RuntimeConfig};

/// The largest request body Lambda accepts for a synchronous invocation (6 MB). A larger
/// `BATON_MAX_BODY_BYTES` could never take effect.
pub const LAMBDA_MAX_REQUEST_BYTES: usize = 6 * 1024 * 1024;

pub use baton_aws::settings::ConfigError;

/// Everything the function reads from its environment.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// `BATON_TABLE`: the journal's DynamoDB table (required).
    pub table: String,
    /// `BATON_BUCKET`: the S3 bucket for large bodies (required).
    pub bucket: String,
    /// `BATON_REGISTRY`: the registry folder (default `registry`, beside the binary's
    /// working directory, which is the package root on Lambda).
    pub registry: PathBuf,
    /// `BATON_INLINE_BODY_LIMIT`: bodies up to this many bytes stay in the table.
    pub inline_body_limit: usize,
    /// `BATON_METRICS_NAMESPACE`: the CloudWatch namespace of the EMF metrics (default
    /// `Baton`).
    pub metrics_namespace: String,
    /// `BATON_MAX_BODY_BYTES`: largest accepted request body (default 64 KiB, at most
    /// Lambda's 6 MB).
    pub max_body_bytes: usize,
    /// `BATON_MAX_MESSAGE_CHARS`: longest accepted user message.
    pub max_message_chars: usize,
    /// `BATON_HISTORY_TURNS`: recent turns loaded as history.
    pub history_turns: usize,
    /// `BATON_TURN_TIMEOUT_MS`: deadline of a whole turn; keep it under the function's
    /// timeout so that a turn always ends in its own words.
    pub turn_timeout_ms: u64,
    /// `BATON_ORCHESTRATOR`: the orchestrator turns start at (default: the registry's only
    /// top-level one).
    pub orchestrator: Option<String>,
    /// `BATON_BLIND_MODEL_PICTURES`: `describe` (default) or `refuse`, for pictures sent to
    /// an orchestrator whose model cannot see them (D-42).
    pub blind_pictures: BlindPictures,
    /// `BATON_WARM_UP_TIMEOUT_MS`: how long Init may spend opening connections.
    pub warm_up_timeout: Duration,
    /// `BIND`: where the function listens when it runs outside Lambda (local development).
    pub bind: String,
    /// `BATON_MODEL_IDS`: the Bedrock model id to use for some registry models, as
    /// `key=model-id` pairs separated by commas (the template passes the ids its IAM
    /// policy allows); other models keep the id in `models.yaml`.
    pub model_ids: Vec<(String, String)>,
    /// The account links' key (D-37): `BATON_LINK_KEY_KMS`, a KMS data key's ciphertext
    /// decrypted at Init, or `BATON_LINK_KEY`, the key itself (local runs and tests).
    /// Without either, tools that act with the user's own sign-in cannot be used.
    pub link_key: Option<LinkKeySetting>,
    /// Long-term memory (D-43): `BATON_MEMORY_VECTOR_INDEX_ARN`, `BATON_MEMORY`,
    /// `BATON_MEMORY_DIMENSIONS`, `BATON_EMBEDDING_MODEL`. Without the index, none is kept
    /// and the memory routes say so.
    pub memory: Option<DeployedMemory>,
}

/// Where the account links' key comes from.
#[derive(Clone, PartialEq, Eq)]
pub enum LinkKeySetting {
    /// A KMS data key's `CiphertextBlob`, in base64.
    Kms(String),
    /// The key itself: 32 bytes in base64.
    Plain(String),
}

impl std::fmt::Debug for LinkKeySetting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.write_str(match self {
            LinkKeySetting::Kms(_) => "Kms(..)",
            LinkKeySetting::Plain(_) => "Plain(..)",
        })
    }
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
        let defaults = RuntimeConfig::default();
        let max_body_bytes = number(
            "BATON_MAX_BODY_BYTES",
            baton_http::DEFAULT_MAX_BODY_BYTES as u64,
        )?;
        if max_body_bytes > LAMBDA_MAX_REQUEST_BYTES as u64 {
            return Err(ConfigError::Invalid {
                name: "BATON_MAX_BODY_BYTES",
                value: max_body_bytes.to_string(),
                expected: "at most 6291456 (Lambda's request limit)",
            });
        }
        let inline = number(
            "BATON_INLINE_BODY_LIMIT",
            JournalConfig::DEFAULT_INLINE_BODY_LIMIT as u64,
        )?;
        if inline > JournalConfig::MAX_INLINE_BODY_LIMIT as u64 {
            return Err(ConfigError::Invalid {
                name: "BATON_INLINE_BODY_LIMIT",
                value: inline.to_string(),
                expected: "at most 358400 (a table item must stay under 400 KB)",
            });
        }
        let blind_pictures = match env.get("BATON_BLIND_MODEL_PICTURES") {
            None => BlindPictures::default(),
            Some(text) => BlindPictures::parse(&text).ok_or(ConfigError::Invalid {
                name: "BATON_BLIND_MODEL_PICTURES",
                value: text,
                expected: "describe or refuse",
            })?,
        };
        let table = env.required("BATON_TABLE")?;
        Ok(Config {
            blind_pictures,
            memory: env.memory(&table)?,
            table,
            bucket: env.required("BATON_BUCKET")?,
            registry: env.registry(),
            inline_body_limit: inline as usize,
            metrics_namespace: env.metrics_namespace(),
            max_body_bytes: max_body_bytes as usize,
            max_message_chars: number("BATON_MAX_MESSAGE_CHARS", defaults.max_message_chars as u64)?
                as usize,
            history_turns: number("BATON_HISTORY_TURNS", defaults.history_turns as u64)? as usize,
            turn_timeout_ms: number("BATON_TURN_TIMEOUT_MS", defaults.turn_timeout_ms)?,
            orchestrator: env.get("BATON_ORCHESTRATOR"),
            warm_up_timeout: Duration::from_millis(number("BATON_WARM_UP_TIMEOUT_MS", 2_000)?),
            bind: env.get("BIND").unwrap_or_else(|| "127.0.0.1:3000".into()),
            model_ids: env.model_ids()?,
            link_key: link_key(&env)?,
        })
    }

    /// The runtime settings these settings imply.
    pub fn runtime(&self) -> RuntimeConfig {
        RuntimeConfig {
            max_message_chars: self.max_message_chars,
            history_turns: self.history_turns,
            turn_timeout_ms: self.turn_timeout_ms,
            orchestrator: self.orchestrator.clone(),
            blind_pictures: self.blind_pictures,
            memory: baton_runtime::MemorySettings {
                on_by_default: self.memory.as_ref().is_some_and(|m| m.on_by_default),
                // The history writer extracts from the journal's stream: Lambda freezes
                // this function once its answer is sent.
                extract_after_turn: false,
                ..baton_runtime::MemorySettings::default()
            },
            ..RuntimeConfig::default()
        }
    }

    /// What Init warms: the table, the bucket and Bedrock.
    pub fn warm_up_targets(&self) -> WarmUpTargets {
        WarmUpTargets {
            table: Some(self.table.clone()),
            bucket: Some(self.bucket.clone()),
            bedrock: true,
        }
    }

    /// The journal's settings.
    pub fn journal(&self) -> JournalConfig {
        JournalConfig::new(&self.table, &self.bucket).with_inline_body_limit(self.inline_body_limit)
    }
}

/// `BATON_LINK_KEY_KMS` or `BATON_LINK_KEY`, at most one (their values never repeated in a
/// message).
fn link_key(
    env: &Env<impl Fn(&str) -> Option<String>>,
) -> Result<Option<LinkKeySetting>, ConfigError> {
    match (env.get("BATON_LINK_KEY_KMS"), env.get("BATON_LINK_KEY")) {
        (Some(_), Some(_)) => Err(ConfigError::Invalid {
            name: "BATON_LINK_KEY",
            value: "(hidden)".to_owned(),
            expected: "not set beside BATON_LINK_KEY_KMS: give one of them",
        }),
        (Some(ciphertext), None) => Ok(Some(LinkKeySetting::Kms(ciphertext))),
        (None, Some(key)) => match baton_runtime::Sealer::from_base64(&key) {
            Ok(_) => Ok(Some(LinkKeySetting::Plain(key))),
            Err(_) => Err(ConfigError::Invalid {
                name: "BATON_LINK_KEY",
                value: "(hidden)".to_owned(),
                expected: "32 bytes in base64",
            }),
        },
        (None, None) => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Config::from_lookup(|name| map.get(name).cloned())
    }

    #[test]
    fn pictures_for_a_blind_model_are_described_unless_refused() {
        let base = [("BATON_TABLE", "journal"), ("BATON_BUCKET", "bodies")];
        let described = config(&base).unwrap();
        assert_eq!(described.runtime().blind_pictures, BlindPictures::Describe);
        let mut refusing = base.to_vec();
        refusing.push(("BATON_BLIND_MODEL_PICTURES", "refuse"));
        let refused = config(&refusing).unwrap();
        assert_eq!(refused.runtime().blind_pictures, BlindPictures::Refuse);
        let mut bad = base.to_vec();
        bad.push(("BATON_BLIND_MODEL_PICTURES", "drop"));
        assert!(matches!(
            config(&bad),
            Err(ConfigError::Invalid {
                name: "BATON_BLIND_MODEL_PICTURES",
                ..
            })
        ));
    }

    #[test]
    fn the_link_key_is_one_of_two_settings_and_never_shown() {
        let base = [("BATON_TABLE", "journal"), ("BATON_BUCKET", "bodies")];
        assert_eq!(config(&base).unwrap().link_key, None);
        let key = "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=";
        let with = |extra: &[(&'static str, &'static str)]| {
            let mut vars = base.to_vec();
            vars.extend_from_slice(extra);
            config(&vars)
        };
        let plain = with(&[("BATON_LINK_KEY", key)]).unwrap();
        assert_eq!(plain.link_key, Some(LinkKeySetting::Plain(key.to_owned())));
        assert!(!format!("{plain:?}").contains(key));
        let kms = with(&[("BATON_LINK_KEY_KMS", "AQIDAHh")]).unwrap();
        assert_eq!(
            kms.link_key,
            Some(LinkKeySetting::Kms("AQIDAHh".to_owned()))
        );
        let both = with(&[("BATON_LINK_KEY", key), ("BATON_LINK_KEY_KMS", "AQIDAHh")]);
        assert!(both.unwrap_err().to_string().contains("BATON_LINK_KEY_KMS"));
        let short = with(&[("BATON_LINK_KEY", "AQEB")]).unwrap_err().to_string();
        assert!(
            short.contains("32 bytes") && !short.contains("AQEB"),
            "{short}"
        );
    }

    #[test]
    fn table_and_bucket_are_enough() {
        let c = config(&[("BATON_TABLE", "journal"), ("BATON_BUCKET", "bodies")]).unwrap();
        assert_eq!(c.table, "journal");
        assert_eq!(c.registry, PathBuf::from("registry"));
        assert_eq!(c.metrics_namespace, "Baton");
        assert_eq!(c.max_body_bytes, baton_http::DEFAULT_MAX_BODY_BYTES);
        assert_eq!(
            c.inline_body_limit,
            JournalConfig::DEFAULT_INLINE_BODY_LIMIT
        );
    }

    #[test]
    fn a_missing_table_names_the_variable() {
        let err = config(&[("BATON_BUCKET", "bodies")]).unwrap_err();
        assert_eq!(err, ConfigError::Missing("BATON_TABLE"));
        assert!(err.to_string().contains("BATON_TABLE"));
    }

    #[test]
    fn a_blank_value_counts_as_missing() {
        let err = config(&[("BATON_TABLE", "t"), ("BATON_BUCKET", "  ")]).unwrap_err();
        assert_eq!(err, ConfigError::Missing("BATON_BUCKET"));
    }

    #[test]
    fn a_bad_number_names_variable_and_value() {
        let err = config(&[
            ("BATON_TABLE", "t"),
            ("BATON_BUCKET", "b"),
            ("BATON_TURN_TIMEOUT_MS", "soon"),
        ])
        .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("BATON_TURN_TIMEOUT_MS") && text.contains("soon"),
            "{text}"
        );
    }

    #[test]
    fn a_body_limit_over_lambdas_is_refused() {
        let err = config(&[
            ("BATON_TABLE", "t"),
            ("BATON_BUCKET", "b"),
            ("BATON_MAX_BODY_BYTES", "7000000"),
        ])
        .unwrap_err();
        assert!(matches!(
            err,
            ConfigError::Invalid {
                name: "BATON_MAX_BODY_BYTES",
                ..
            }
        ));
    }

    #[test]
    fn model_ids_are_key_id_pairs() {
        let c = config(&[
            ("BATON_TABLE", "t"),
            ("BATON_BUCKET", "b"),
            (
                "BATON_MODEL_IDS",
                "claude-haiku=us.anthropic.claude-haiku-4-5-20251001-v1:0, nova-micro=us.amazon.nova-micro-v1:0",
            ),
        ])
        .unwrap();
        assert_eq!(
            c.model_ids,
            vec![
                (
                    "claude-haiku".to_owned(),
                    "us.anthropic.claude-haiku-4-5-20251001-v1:0".to_owned()
                ),
                (
                    "nova-micro".to_owned(),
                    "us.amazon.nova-micro-v1:0".to_owned()
                ),
            ]
        );
        let err = config(&[
            ("BATON_TABLE", "t"),
            ("BATON_BUCKET", "b"),
            ("BATON_MODEL_IDS", "claude-haiku"),
        ])
        .unwrap_err();
        assert!(err.to_string().contains("BATON_MODEL_IDS"), "{err}");
    }

    #[test]
    fn limits_reach_the_runtime() {
        let c = config(&[
            ("BATON_TABLE", "t"),
            ("BATON_BUCKET", "b"),
            ("BATON_MAX_MESSAGE_CHARS", "100"),
            ("BATON_ORCHESTRATOR", "orchestrator"),
        ])
        .unwrap();
        let r = c.runtime();
        assert_eq!(r.max_message_chars, 100);
        assert_eq!(r.orchestrator.as_deref(), Some("orchestrator"));
    }
}
