//! Header secrets: named in `tools.yaml` by reference (`{env: VAR}`, `{arn: ...}`), resolved
//! through a [`SecretSource`] once per process, and never shown (Debug, errors, logs).

use std::collections::BTreeSet;
use std::fmt;

use serde_json::Value;

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

/// Resolves secret references to their values. The `http` connector asks once per
/// reference and keeps the answer for the life of the process.
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

/// The ARNs that the `http` tools of a registry's `tools.yaml` (the whole document, parsed)
/// name as header secrets (`headers: {Name: {arn: ...}}`), sorted, each once: what a
/// deployment must fetch before the connector can resolve them. Tools of other kinds, and
/// anything not shaped like an `http` tool, are skipped (the registry's checks report those).
pub fn arns_in(tools_yaml: &Value) -> Vec<String> {
    let mut arns = BTreeSet::new();
    let tools = tools_yaml.get("tools").and_then(Value::as_object);
    for tool in tools.into_iter().flatten().map(|(_, tool)| tool) {
        let Some(connector) = tool.get("connector") else {
            continue;
        };
        if connector.get("kind").and_then(Value::as_str) != Some(super::HttpConnector::KIND) {
            continue;
        }
        let headers = connector.get("headers").and_then(Value::as_object);
        for value in headers.into_iter().flatten().map(|(_, value)| value) {
            if let Some(arn) = value.get("arn").and_then(Value::as_str) {
                arns.insert(arn.to_owned());
            }
        }
    }
    arns.into_iter().collect()
}

/// A resolved secret value: its Debug output never shows it.
#[derive(Clone)]
pub(super) struct Secret(String);

impl Secret {
    pub(super) fn new(value: String) -> Self {
        Secret(value)
    }

    pub(super) fn expose(&self) -> &str {
        &self.0
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
    fn the_arns_of_http_headers_are_listed_once() {
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
            "c": {"connector": {"kind": "mcp", "headers": {"X": {"arn": "arn:aws:ssm:r:1:parameter/c"}}}},
            "d": {"description": "no connector"},
        }});
        assert_eq!(
            arns_in(&tools),
            vec![
                "arn:aws:secretsmanager:r:1:secret:a-AbCdEf".to_owned(),
                "arn:aws:ssm:r:1:parameter/b".to_owned(),
            ]
        );
        assert!(arns_in(&serde_json::json!({"tools": []})).is_empty());
        assert!(arns_in(&Value::Null).is_empty());
    }

    #[test]
    fn debug_hides_the_value() {
        let s = Secret::new("hunter2".into());
        assert!(!format!("{s:?}").contains("hunter2"));
        assert_eq!(s.expose(), "hunter2");
    }
}
