//! Reading the registry at Init: the same checks as `baton validate`, with the
//! deployment's Bedrock model ids (`BATON_MODEL_IDS`) in place of those in `models.yaml`
//! (see `baton_runtime::registry_files::load_deployed`).

use std::collections::BTreeMap;
use std::sync::Arc;

use baton_core::ports::connector::Connector;
use baton_core::registry::Registry;
use baton_runtime::registry_files::load_deployed;

use crate::config::Config;
use crate::init::InitError;

/// The connectors by kind.
pub(crate) type Connectors = BTreeMap<String, Arc<dyn Connector>>;

/// Reads and checks the registry named by the settings.
pub(crate) async fn load(config: &Config) -> Result<(Arc<Registry>, Connectors), InitError> {
    let connectors = baton_connectors::default_connectors(&config.registry);
    let registry = load_deployed(&config.registry, &connectors, &config.model_ids).await?;
    Ok((Arc::new(registry), connectors))
}
