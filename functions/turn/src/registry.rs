//! Reading the registry at Init: the same checks as `baton validate`, with the
//! deployment's Bedrock model ids (`BATON_MODEL_IDS`) in place of those in `models.yaml`.
//!
//! The ids are replaced in the source before it is loaded, so that every card, the cost
//! table and the Bedrock adapter's capabilities all see the id the IAM policy allows.

use std::collections::BTreeMap;
use std::sync::Arc;

use baton_core::ports::connector::Connector;
use baton_core::registry::{LoadErrors, Registry, RegistrySources};
use serde_norway::Value;

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
    let mut sources = baton_runtime::registry_files::read_sources(root).map_err(invalid)?;
    if !config.model_ids.is_empty() {
        replace_model_ids(&mut sources, &config.model_ids)?;
    }
    let registry =
        baton_runtime::registry_files::load_sources(&sources, &connectors, &[]).map_err(invalid)?;
    for warning in registry.warnings() {
        tracing::warn!(%warning, "registry");
    }
    for (key, id) in &config.model_ids {
        tracing::info!(model = %key, model_id = %id, "model id from BATON_MODEL_IDS");
    }
    Ok((Arc::new(registry), connectors))
}

/// Sets `models.<key>.model_id` in `models.yaml` for each pair.
fn replace_model_ids(
    sources: &mut RegistrySources,
    ids: &[(String, String)],
) -> Result<(), InitError> {
    let Some(file) = sources.models.as_mut() else {
        return Err(InitError::ModelIds(
            "the registry has no models.yaml to apply them to".into(),
        ));
    };
    // A models.yaml that does not parse is left as it is: the loader reports it properly.
    let Ok(mut doc) = serde_norway::from_str::<Value>(&file.text) else {
        return Ok(());
    };
    let Some(models) = doc.get_mut("models").and_then(Value::as_mapping_mut) else {
        return Ok(());
    };
    for (key, id) in ids {
        let Some(model) = models.get_mut(key.as_str()).and_then(Value::as_mapping_mut) else {
            return Err(InitError::ModelIds(format!(
                "it names model {key:?}, which models.yaml does not define"
            )));
        };
        model.insert(Value::from("model_id"), Value::from(id.as_str()));
    }
    file.text = serde_norway::to_string(&doc).map_err(|e| InitError::ModelIds(e.to_string()))?;
    Ok(())
}
