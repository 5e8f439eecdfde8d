//! Header secrets: named in `tools.yaml` by reference (`{env: VAR}`, `{arn: ...}`), resolved
//! through a [`SecretSource`] once per process, and never shown (Debug, errors, logs).

use std::fmt;

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
    fn debug_hides_the_value() {
        let s = Secret::new("hunter2".into());
        assert!(!format!("{s:?}").contains("hunter2"));
        assert_eq!(s.expose(), "hunter2");
    }
}
