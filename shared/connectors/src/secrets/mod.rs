//! Secrets of the connectors (header values, OAuth client credentials): named in
//! `tools.yaml` by reference (`{env: VAR}`, `{arn: ...}`), resolved through a
//! [`SecretSource`] once per process, and never shown (Debug, errors, logs). One mechanism
//! for every connector that sends credentials: `http` and `mcp` both use it (D-34).

mod headers;

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;

pub(crate) use headers::{HeaderSpec, parse_headers};

/// Where a header's secret value lives, as `tools.yaml` names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SecretRef {
    /// An environment variable, by name (`{env: VAR_NAME}`).
    Env(String),
    /// An AWS Secrets Manager secret or SSM parameter, by ARN (`{arn: ...}`).
    Arn(String),
}

impl fmt::Display for SecretRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SecretRef::Env(name) => write!(f, "the environment variable {name}"),
            SecretRef::Arn(arn) => write!(f, "the secret {arn}"),
        }
    }
}

impl SecretRef {
    /// The reference written at `field` (`{env: VAR}` or `{arn: ...}`), checked. `extra`
    /// names the other keys the mapping may hold (read by the caller).
    ///
    /// # Errors
    /// A message naming `field` (never a value).
    pub(crate) fn parse(field: &str, value: &Value, extra: &[&str]) -> Result<Self, String> {
        let Some(map) = value.as_object() else {
            return Err(format!(
                "{field}: a secret by reference, {{env: VAR_NAME}} or {{arn: ...}}"
            ));
        };
        if let Some(unknown) = map
            .keys()
            .find(|k| !matches!(k.as_str(), "env" | "arn") && !extra.contains(&k.as_str()))
        {
            return Err(format!("{field}: unknown key {unknown:?} (env, arn{})", {
                extra.iter().map(|k| format!(", {k}")).collect::<String>()
            }));
        }
        match (map.get("env"), map.get("arn")) {
            (Some(Value::String(var)), None) => {
                let valid = var.chars().next().is_some_and(|c| !c.is_ascii_digit())
                    && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if !valid {
                    return Err(format!(
                        "{field}.env: {var:?} is not an environment variable name"
                    ));
                }
                Ok(SecretRef::Env(var.clone()))
            }
            (None, Some(Value::String(arn))) => {
                if !arn.starts_with("arn:") {
                    return Err(format!("{field}.arn: {arn:?} is not an ARN"));
                }
                Ok(SecretRef::Arn(arn.clone()))
            }
            _ => Err(format!(
                "{field}: give exactly one of env (a variable name) or arn"
            )),
        }
    }
}

/// Resolves secret references to their values. The connectors ask once per reference
/// and keep the answer for the life of the process.
pub trait SecretSource: Send + Sync {
    /// The value behind `reference`.
    ///
    /// # Errors
    /// A plain description naming the reference (never a value) when it cannot be read.
    fn resolve(&self, reference: &SecretRef) -> Result<String, String>;
}

/// The default [`SecretSource`]: environment variables. ARNs are refused (they need the
/// AWS source, which only a Lambda deployment wires in).
#[derive(Debug, Clone, Copy, Default)]
pub struct EnvSecretSource;

impl SecretSource for EnvSecretSource {
    fn resolve(&self, reference: &SecretRef) -> Result<String, String> {
        match reference {
            SecretRef::Env(name) => match std::env::var(name) {
                Ok(value) if value.is_empty() => {
                    Err(format!("the environment variable {name} is empty"))
                }
                Ok(value) => Ok(value),
                Err(std::env::VarError::NotPresent) => {
                    Err(format!("the environment variable {name} is not set"))
                }
                Err(std::env::VarError::NotUnicode(_)) => Err(format!(
                    "the environment variable {name} is not valid UTF-8"
                )),
            },
            SecretRef::Arn(_) => {
                Err("secrets by ARN need the AWS secret source (on Lambda)".to_owned())
            }
        }
    }
}

/// The ARNs that the connector settings of a registry's `tools.yaml` (the whole document,
/// parsed) name as secrets (`{arn: ...}` anywhere in a tool's `connector:` block: headers,
/// OAuth client credentials), sorted, each once: what a deployment must fetch before the
/// connectors can resolve them. Anything not shaped like a tool is skipped (the registry's
/// checks report those).
pub fn arns_in(tools_yaml: &Value) -> Vec<String> {
    fn walk(value: &Value, arns: &mut BTreeSet<String>) {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(arn)) = map.get("arn") {
                    arns.insert(arn.clone());
                }
                map.values().for_each(|v| walk(v, arns));
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, arns)),
            _ => {}
        }
    }
    let mut arns = BTreeSet::new();
    let tools = tools_yaml.get("tools").and_then(Value::as_object);
    for tool in tools.into_iter().flatten().map(|(_, tool)| tool) {
        if let Some(connector) = tool.get("connector") {
            walk(connector, &mut arns);
        }
    }
    arns.into_iter().collect()
}

/// A resolved secret value: its Debug output never shows it.
#[derive(Clone)]
pub(crate) struct Secret(Arc<str>);

impl Secret {
    pub(crate) fn new(value: impl Into<Arc<str>>) -> Self {
        Secret(value.into())
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

/// A connector's secrets: its source, and each value it gave, kept for the life of the
/// process (a reference is read once).
pub(crate) struct Secrets {
    source: Arc<dyn SecretSource>,
    resolved: Mutex<HashMap<SecretRef, Secret>>,
}

impl fmt::Debug for Secrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A count only: neither a secret nor its reference is shown.
        f.debug_struct("Secrets")
            .field("resolved", &self.lock().len())
            .finish_non_exhaustive()
    }
}

impl Secrets {
    pub(crate) fn new(source: Arc<dyn SecretSource>) -> Self {
        Secrets {
            source,
            resolved: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SecretRef, Secret>> {
        // Each change is one insert: the map stays consistent even if a holder panicked.
        self.resolved.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The value behind `reference`, resolved once.
    ///
    /// # Errors
    /// The source's plain description (naming the reference, never a value).
    pub(crate) fn get(&self, reference: &SecretRef) -> Result<Secret, String> {
        if let Some(secret) = self.lock().get(reference) {
            return Ok(secret.clone());
        }
        let secret = Secret::new(self.source.resolve(reference)?);
        self.lock()
            .entry(reference.clone())
            .or_insert_with(|| secret.clone());
        Ok(secret)
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_arn_needs_the_aws_source() {
        let e = EnvSecretSource
            .resolve(&SecretRef::Arn(
                "arn:aws:secretsmanager:eu-west-1:1:secret:x".into(),
            ))
            .unwrap_err();
        assert_eq!(e, "secrets by ARN need the AWS secret source (on Lambda)");
    }

    #[test]
    fn an_unset_variable_is_named() {
        let e = EnvSecretSource
            .resolve(&SecretRef::Env(
                "BATON_HTTP_UNIT_TEST_SURELY_UNSET_VAR".into(),
            ))
            .unwrap_err();
        assert!(
            e.contains("BATON_HTTP_UNIT_TEST_SURELY_UNSET_VAR is not set"),
            "{e}"
        );
    }

    #[test]
    fn the_arns_of_every_connector_are_listed_once() {
        let tools = serde_json::json!({"tools": {
            "a": {"connector": {"kind": "http", "url": "http://h/a", "headers": {
                "Authorization": {"arn": "arn:aws:ssm:r:1:parameter/b", "prefix": "Bearer "},
                "X-Key": {"arn": "arn:aws:secretsmanager:r:1:secret:a-AbCdEf"},
                "X-Env": {"env": "SOME_VAR"},
                "Accept": "application/json",
            }}},
            "b": {"connector": {"kind": "http", "url": "http://h/b", "headers": {
                "X-Same": {"arn": "arn:aws:ssm:r:1:parameter/b"},
            }}},
            "c": {"connector": {"kind": "mcp", "server": {
                "url": "https://h/mcp",
                "headers": {"X": {"arn": "arn:aws:ssm:r:1:parameter/c"}},
                "oauth": {"client_id": "baton", "client_secret": {"arn": "arn:aws:ssm:r:1:parameter/d"}},
            }}},
            "d": {"description": "no connector"},
        }});
        assert_eq!(
            arns_in(&tools),
            vec![
                "arn:aws:secretsmanager:r:1:secret:a-AbCdEf".to_owned(),
                "arn:aws:ssm:r:1:parameter/b".to_owned(),
                "arn:aws:ssm:r:1:parameter/c".to_owned(),
                "arn:aws:ssm:r:1:parameter/d".to_owned(),
            ]
        );
        assert!(arns_in(&serde_json::json!({"tools": []})).is_empty());
        assert!(arns_in(&Value::Null).is_empty());
    }

    #[test]
    fn references_are_checked_without_echoing_values() {
        let ok = SecretRef::parse("k", &serde_json::json!({"env": "A_B1"}), &[]).unwrap();
        assert_eq!(ok, SecretRef::Env("A_B1".into()));
        let arn = serde_json::json!({"arn": "arn:aws:ssm:r:1:parameter/x", "prefix": "B "});
        assert!(SecretRef::parse("k", &arn, &["prefix"]).is_ok());
        for (bad, why) in [
            (serde_json::json!("literal"), "a secret by reference"),
            (
                serde_json::json!({"env": "1X"}),
                "not an environment variable name",
            ),
            (serde_json::json!({"arn": "nope"}), "is not an ARN"),
            (
                serde_json::json!({"env": "A", "arn": "arn:x"}),
                "exactly one of",
            ),
            (
                serde_json::json!({"env": "A", "value": "hunter2"}),
                "unknown key \"value\"",
            ),
        ] {
            let e = SecretRef::parse("k", &bad, &[]).unwrap_err();
            assert!(e.contains(why), "{e}");
            assert!(!e.contains("hunter2"), "{e}");
        }
    }

    #[test]
    fn a_secret_is_read_once() {
        struct Counting(std::sync::atomic::AtomicUsize);
        impl SecretSource for Counting {
            fn resolve(&self, _: &SecretRef) -> Result<String, String> {
                self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                Ok("hunter2".into())
            }
        }
        let source = Arc::new(Counting(Default::default()));
        let secrets = Secrets::new(source.clone());
        let r = SecretRef::Env("X".into());
        assert_eq!(secrets.get(&r).unwrap().expose(), "hunter2");
        assert_eq!(secrets.get(&r).unwrap().expose(), "hunter2");
        assert_eq!(source.0.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert!(!format!("{secrets:?}").contains("hunter2"));
    }

    #[test]
    fn debug_hides_the_value() {
        let s = Secret::new("hunter2");
        assert!(!format!("{s:?}").contains("hunter2"));
        assert_eq!(s.expose(), "hunter2");
    }
}
