//! The deployed registry, read at Init: the same checks as `baton validate`, with the
//! deployment's Bedrock model ids (`BATON_MODEL_IDS`) in place of those in `models.yaml`
//! (see `baton_runtime::registry_folder::load_deployed`), and the connectors' secrets
//! (the `http`, `mcp` and `a2a` tools' header values and OAuth client credentials).
//!
//! Secrets: `tools.yaml` names them as environment variables (`{env: VAR}`) or by ARN
//! (`{arn: ...}`, a Secrets Manager secret or an SSM parameter). On AWS
//! ([`crate::init_with`]) the ARNs are listed from `tools.yaml` and each is read once,
//! before the registry is checked ([`secret_source`]); the connectors then resolve them
//! from memory. A registry without ARNs sends no request. [`crate::assemble`] (tests,
//! local runs over other adapters) keeps the environment-only source, which refuses ARNs.

use std::collections::BTreeMap;
use std::sync::Arc;

use aws_config::SdkConfig;
use baton_aws::secrets::{PrefetchedSecrets, prefetch};
use baton_connectors::{EnvSecretSource, SecretRef, SecretSource};
use baton_core::ports::connector::Connector;
use baton_core::registry::Registry;
use baton_runtime::registry_folder::load_deployed;

use crate::config::Config;
use crate::error::InitError;

/// The connectors by kind.
pub(crate) type Connectors = BTreeMap<String, Arc<dyn Connector>>;

/// Reads and checks the registry named by the settings; the `http`, `mcp` and `a2a`
/// tools' secrets come from `secrets`.
pub(crate) async fn load(
    config: &Config,
    secrets: Arc<dyn SecretSource>,
) -> Result<(Arc<Registry>, Connectors), InitError> {
    let connectors = baton_connectors::connectors(&config.registry, Some(secrets));
    let registry = load_deployed(&config.registry, &connectors, &config.model_ids).await?;
    // Only the kinds the registry's tools use are served: no demo `fixture` data on a
    // deployment whose registry has none.
    let connectors = baton_connectors::used_by(connectors, &registry);
    Ok((Arc::new(registry), connectors))
}

/// The secret source of the `http` and `mcp` tools on AWS: every ARN the registry's `tools.yaml`
/// names, read once through `sdk` (no request when there is none), and the environment.
///
/// # Errors
/// An ARN that cannot be read, named ([`InitError::Secrets`]).
pub(crate) async fn secret_source(
    config: &Config,
    sdk: &SdkConfig,
) -> Result<Arc<dyn SecretSource>, InitError> {
    let arns = secret_arns(config);
    if arns.is_empty() {
        return Ok(Arc::new(EnvSecretSource));
    }
    let secrets = prefetch(sdk, arns).await?;
    Ok(Arc::new(Prefetched(secrets)))
}

/// The ARNs `tools.yaml` names as secrets. Nothing when the file is absent, cannot
/// be read or does not parse: the registry's checks report those right after.
fn secret_arns(config: &Config) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(config.registry.join("tools.yaml")) else {
        return Vec::new();
    };
    match serde_norway::from_str::<serde_json::Value>(&text) {
        Ok(tools) => baton_connectors::arns_in(&tools),
        Err(_) => Vec::new(),
    }
}

/// The secrets read at Init, as the connectors ask for them: ARNs from memory, environment
/// variables from the environment.
struct Prefetched(PrefetchedSecrets);

impl SecretSource for Prefetched {
    fn resolve(&self, reference: &SecretRef) -> Result<String, String> {
        match reference {
            SecretRef::Env(_) => EnvSecretSource.resolve(reference),
            SecretRef::Arn(arn) => self.0.get(arn).map(str::to_owned).ok_or_else(|| {
                format!("the secret {arn} was not read at Init (only the ARNs in tools.yaml are)")
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use aws_config::{BehaviorVersion, Region};
    use baton_aws::secrets::SecretsError;

    use super::*;

    fn config(registry: &std::path::Path) -> Config {
        let vars = HashMap::from([
            ("BATON_TABLE", "t".to_owned()),
            ("BATON_BUCKET", "b".to_owned()),
            ("BATON_REGISTRY", registry.display().to_string()),
        ]);
        Config::from_lookup(|name| vars.get(name).cloned()).unwrap()
    }

    /// Settings whose every request fails to connect (port 9 is closed).
    async fn unreachable() -> SdkConfig {
        aws_config::defaults(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .no_credentials()
            .endpoint_url("http://127.0.0.1:9")
            .retry_config(aws_config::retry::RetryConfig::disabled())
            .load()
            .await
    }

    fn registry_with_tools(tools: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("tools.yaml"), tools).unwrap();
        dir
    }

    #[tokio::test]
    async fn a_registry_without_arns_reads_nothing() {
        let dir = registry_with_tools(
            "tools:\n  t:\n    connector:\n      kind: http\n      url: http://h/x\n      headers:\n        X-Key: {env: SOME_VAR}\n",
        );
        // Any request would fail: the source is built without one.
        let source = secret_source(&config(dir.path()), &unreachable().await)
            .await
            .unwrap();
        let e = source
            .resolve(&SecretRef::Arn("arn:aws:ssm:r:1:parameter/p".into()))
            .unwrap_err();
        assert!(e.contains("AWS secret source"), "{e}");
    }

    #[tokio::test]
    async fn an_arn_that_cannot_be_read_fails_init_naming_it() {
        let arn = "arn:aws:ssm:us-east-1:123456789012:parameter/baton/key";
        let dir = registry_with_tools(&format!(
            "tools:\n  t:\n    connector:\n      kind: http\n      url: http://h/x\n      headers:\n        X-Key: {{arn: \"{arn}\"}}\n",
        ));
        let Err(e) = secret_source(&config(dir.path()), &unreachable().await).await else {
            panic!("an unreachable service must fail Init");
        };
        assert!(
            matches!(&e, InitError::Secrets(SecretsError::Unreadable { .. })),
            "{e}"
        );
        assert!(e.to_string().contains(arn), "{e}");
    }

    #[test]
    fn the_prefetched_source_answers_from_memory_and_the_environment() {
        let source = Prefetched(PrefetchedSecrets::default());
        let e = source
            .resolve(&SecretRef::Arn("arn:aws:ssm:r:1:parameter/p".into()))
            .unwrap_err();
        assert!(
            e.contains("arn:aws:ssm:r:1:parameter/p was not read at Init"),
            "{e}"
        );
        let e = source
            .resolve(&SecretRef::Env("BATON_TURN_UNIT_TEST_SURELY_UNSET".into()))
            .unwrap_err();
        assert!(
            e.contains("BATON_TURN_UNIT_TEST_SURELY_UNSET is not set"),
            "{e}"
        );
        let path = std::env::var("PATH").unwrap();
        assert_eq!(source.resolve(&SecretRef::Env("PATH".into())), Ok(path));
    }
}
