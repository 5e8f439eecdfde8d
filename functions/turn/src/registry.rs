//! Reading the registry at Init: the same checks as `baton validate`, with the
//! deployment's Bedrock model ids (`BATON_MODEL_IDS`) in place of those in `models.yaml`.
//!
//! The ids replace those of `models.yaml` as it is loaded, so that every card, the cost
//! table and the Bedrock adapter's capabilities all see the id the IAM policy allows.

use std::collections::BTreeMap;
use std::sync::Arc;

use baton_core::ports::connector::Connector;
use baton_core::registry::{LoadErrors, Registry};
use baton_runtime::registry_files::load_registry;

use crate::config::Config;
use crate::init::InitError;

/// The connectors by kind.
pub(crate) type Connectors = BTreeMap<String, Arc<dyn Connector>>;

/// Reads and checks the registry named by the settings.
pub(crate) fn load(config: &Config) -> Result<(Arc<Registry>, Connectors), InitError> {
    let root = &config.registry;
    if !root.is_dir() {
        return Err(InitError::NoRegistry(root.display().to_string()));
    }
    let invalid = |e: LoadErrors| InitError::InvalidRegistry {
        path: root.display().to_string(),
        problems: e.to_string(),
    };
    let connectors = baton_connectors::default_connectors(root);
    let model_ids = config.model_ids.iter().cloned().collect();
    let registry = load_registry(root, &connectors, &model_ids).map_err(invalid)?;
    // A key that names no model would leave the deployment's id unused: say which.
    for (key, _) in &config.model_ids {
        if registry.model(key).is_none() {
            return Err(InitError::ModelIds(format!(
                "it names model {key:?}, which models.yaml does not define"
            )));
        }
    }
    for warning in registry.warnings() {
        tracing::warn!(%warning, "registry");
    }
    for (key, id) in &config.model_ids {
        tracing::info!(model = %key, model_id = %id, "model id from BATON_MODEL_IDS");
    }
    Ok((Arc::new(registry), connectors))
}
