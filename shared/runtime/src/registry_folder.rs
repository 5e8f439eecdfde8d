//! Reads a registry directory into sources for the (pure) loader, then checks each
//! tool's connector configuration against the connectors this program has.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use baton_core::ports::connector::{Connector, DiscoveredTool};
use baton_core::registry::{
    LoadError, LoadErrors, LoadOptions, Registry, RegistrySources, SourceFile,
};

/// Reads `agents/*.yaml`, `blocks/*.md`, `models.yaml` and `tools.yaml` under `root`.
///
/// # Errors
/// A missing directory or an unreadable file, as a load error naming the path.
pub fn read_sources(root: &Path) -> Result<RegistrySources, LoadErrors> {
    let mut errors = Vec::new();
    let mut sources = RegistrySources::default();
    if !root.is_dir() {
        return Err(LoadErrors(vec![LoadError {
            file: root.display().to_string(),
            field: "(registry)".into(),
            value: String::new(),
            problem: "no such directory".into(),
        }]));
    }
    sources.agents = read_dir(root, "agents", &["yaml", "yml"], &mut errors);
    sources.blocks = read_dir(root, "blocks", &["md"], &mut errors);
    sources.models = read_one(root, "models.yaml", &mut errors);
    sources.tools = read_one(root, "tools.yaml", &mut errors);
    if errors.is_empty() {
        Ok(sources)
    } else {
        Err(LoadErrors(errors))
    }
}

/// Reads and validates a registry directory, including each tool's connector config, after
/// asking the connectors that list their tools (MCP servers) how they describe them: the
/// one way every program loads its registry. `model_ids` replace the provider model ids of
/// `models.yaml` by model key, after parsing (a deployment's own ids; usually none).
///
/// # Errors
/// Every problem found, including a tool backend that cannot be reached.
pub async fn load_registry(
    root: &Path,
    connectors: &BTreeMap<String, Arc<dyn Connector>>,
    model_ids: &BTreeMap<String, String>,
) -> Result<Registry, LoadErrors> {
    let sources = read_sources(root)?;
    let settings = connector_configs(&sources);
    let (discovered, mut problems) = discover(&sources, &settings, connectors).await;
    // Every problem at once: the backends that could not be asked, then the rest of the
    // registry's (leaving out what follows from those tools' missing descriptions).
    let failed: Vec<String> = problems
        .iter()
        .map(|p| p.field.replace(".connector", "."))
        .collect();
    match check(&sources, &settings, connectors, model_ids, discovered) {
        Ok(registry) if problems.is_empty() => Ok(registry),
        Ok(_) => Err(LoadErrors(problems)),
        Err(LoadErrors(more)) => {
            problems.extend(
                more.into_iter()
                    .filter(|p| !failed.iter().any(|f| p.field.starts_with(f.as_str()))),
            );
            Err(LoadErrors(problems))
        }
    }
}

/// Asks each tool's connector how its backend describes the tool (see
/// [`Connector::discover`]), one tool after another, so that servers shared by several
/// tools are started once.
///
/// # Errors
/// Each tool whose backend could not be reached or does not have it.
pub async fn discover_tools(
    sources: &RegistrySources,
    connectors: &BTreeMap<String, Arc<dyn Connector>>,
) -> Result<BTreeMap<String, DiscoveredTool>, LoadErrors> {
    let (discovered, errors) = discover(sources, &connector_configs(sources), connectors).await;
    if errors.is_empty() {
        Ok(discovered)
    } else {
        Err(LoadErrors(errors))
    }
}

/// [`discover_tools`] over the tools' settings already read: what was found, and the
/// tools whose backends could not be asked.
async fn discover(
    sources: &RegistrySources,
    settings: &[ToolSettings],
    connectors: &BTreeMap<String, Arc<dyn Connector>>,
) -> (BTreeMap<String, DiscoveredTool>, Vec<LoadError>) {
    let mut discovered = BTreeMap::new();
    let mut errors = Vec::new();
    let file = sources
        .tools
        .as_ref()
        .map_or("tools.yaml", |f| f.path.as_str());
    for (id, kind, config) in settings {
        let Some(connector) = connectors.get(kind) else {
            continue;
        };
        match connector.discover(id, config).await {
            Ok(Some(found)) => {
                discovered.insert(id.clone(), found);
            }
            Ok(None) => {}
            Err(problem) => errors.push(LoadError {
                file: file.to_owned(),
                field: format!("tools.{id}.connector"),
                value: kind.clone(),
                problem,
            }),
        }
    }
    (discovered, errors)
}

/// Validates registry sources already read, including each tool's connector config; for
/// registries whose tools all declare their schemas (nothing is discovered).
///
/// # Errors
/// Every problem found.
pub fn load_sources(
    sources: &RegistrySources,
    connectors: &BTreeMap<String, Arc<dyn Connector>>,
    model_ids: &BTreeMap<String, String>,
) -> Result<Registry, LoadErrors> {
    load_discovered(sources, connectors, model_ids, BTreeMap::new())
}

/// Validates registry sources with what their tools' backends said (see
/// [`discover_tools`]).
///
/// # Errors
/// Every problem found.
pub fn load_discovered(
    sources: &RegistrySources,
    connectors: &BTreeMap<String, Arc<dyn Connector>>,
    model_ids: &BTreeMap<String, String>,
    discovered: BTreeMap<String, DiscoveredTool>,
) -> Result<Registry, LoadErrors> {
    let settings = connector_configs(sources);
    check(sources, &settings, connectors, model_ids, discovered)
}

/// [`load_discovered`] over the tools' settings already read.
fn check(
    sources: &RegistrySources,
    settings: &[ToolSettings],
    connectors: &BTreeMap<String, Arc<dyn Connector>>,
    model_ids: &BTreeMap<String, String>,
    discovered: BTreeMap<String, DiscoveredTool>,
) -> Result<Registry, LoadErrors> {
    // The memory domain's kind is the runtime's own (D-43).
    let mut kinds: Vec<String> = connectors.keys().cloned().collect();
    if !kinds.is_empty() && !connectors.contains_key(crate::recall::connector::KIND) {
        kinds.push(crate::recall::connector::KIND.to_owned());
    }
    let options = LoadOptions {
        connector_kinds: kinds,
        model_ids: model_ids.clone(),
        discovered,
        ..LoadOptions::default()
    };
    // The connectors' own checks run whatever the loader finds, so that one run names
    // every problem.
    let (loaded, mut errors) = match Registry::load(sources, &options) {
        Ok(registry) => (Some(registry), Vec::new()),
        Err(LoadErrors(problems)) => (None, problems),
    };
    for (id, kind, config) in settings {
        let checked = match connectors.get(kind) {
            Some(connector) => connector.check_config(id, config),
            None if kind == crate::recall::connector::KIND => {
                crate::recall::connector::check_config(id, config)
            }
            None => Ok(()),
        };
        if let Err(problem) = checked {
            errors.push(LoadError {
                file: "tools.yaml".into(),
                field: format!("tools.{id}.connector"),
                value: config.to_string(),
                problem,
            });
        }
    }
    match loaded {
        Some(registry) if errors.is_empty() => Ok(registry),
        _ => Err(LoadErrors(errors)),
    }
}

/// A tool's id, connector kind and connector settings.
type ToolSettings = (String, String, serde_json::Value);

/// Each tool's id, connector kind and connector settings (without `kind`, as the
/// connector gets them), read from `tools.yaml` as written; nothing when it does not
/// parse (the loader reports that).
fn connector_configs(sources: &RegistrySources) -> Vec<ToolSettings> {
    let Some(file) = &sources.tools else {
        return Vec::new();
    };
    let Ok(value) = serde_norway::from_str::<serde_json::Value>(&file.text) else {
        return Vec::new();
    };
    let tools = value.get("tools").and_then(serde_json::Value::as_object);
    tools
        .into_iter()
        .flatten()
        .filter_map(|(id, tool)| {
            let mut config = tool.get("connector")?.as_object()?.clone();
            let kind = config.remove("kind")?.as_str()?.to_owned();
            Some((id.clone(), kind, serde_json::Value::Object(config)))
        })
        .collect()
}

/// Why a deployed function's Init failed, in the ways every function shares: its registry,
/// or the runtime built over it. Each message says what to fix.
#[derive(Debug, thiserror::Error)]
pub enum DeployError {
    /// The registry is missing, invalid, or does not fit `BATON_MODEL_IDS`.
    #[error(transparent)]
    Registry(#[from] DeployedRegistryError),
    /// The runtime refused the registry and adapters (a model no adapter serves).
    #[error("{0}")]
    Runtime(#[from] crate::BuildError),
}

/// Why a deployed function cannot use its registry. Each message says what to fix.
#[derive(Debug, thiserror::Error)]
pub enum DeployedRegistryError {
    /// There is no registry folder where the settings say.
    #[error(
        "there is no registry folder at {0}: package it with the function, or set BATON_REGISTRY"
    )]
    NoFolder(String),
    /// The registry does not load; every problem is listed.
    #[error("the registry {path} is not valid: {problems}")]
    Invalid {
        /// The folder.
        path: String,
        /// Every problem, each naming file, field and value.
        problems: String,
    },
    /// A deployment model id names a model key `models.yaml` does not define, so the id
    /// would go unused.
    #[error(
        "BATON_MODEL_IDS cannot be applied: it names model {0:?}, which models.yaml does not define"
    )]
    UnknownModelKey(String),
}

/// A deployed function's registry (`BATON_REGISTRY`), loaded with the deployment's model
/// ids (`BATON_MODEL_IDS`) in place of those in `models.yaml`, so
/// that every card, the cost table and the model adapter see the id the IAM policy allows.
///
/// # Errors
/// See [`DeployedRegistryError`].
pub async fn load_deployed(
    root: &Path,
    connectors: &BTreeMap<String, Arc<dyn Connector>>,
    model_ids: &[(String, String)],
) -> Result<Registry, DeployedRegistryError> {
    if !root.is_dir() {
        return Err(DeployedRegistryError::NoFolder(root.display().to_string()));
    }
    let ids = model_ids.iter().cloned().collect();
    let registry = load_registry(root, connectors, &ids).await.map_err(|e| {
        DeployedRegistryError::Invalid {
            path: root.display().to_string(),
            problems: e.to_string(),
        }
    })?;
    if let Some((key, _)) = model_ids.iter().find(|(k, _)| registry.model(k).is_none()) {
        return Err(DeployedRegistryError::UnknownModelKey(key.clone()));
    }
    for warning in registry.warnings() {
        tracing::warn!(%warning, "registry");
    }
    for (key, id) in model_ids {
        tracing::info!(model = %key, model_id = %id, "model id from BATON_MODEL_IDS");
    }
    Ok(registry)
}

fn read_one(root: &Path, name: &str, errors: &mut Vec<LoadError>) -> Option<SourceFile> {
    let path = root.join(name);
    if !path.exists() {
        return None;
    }
    match std::fs::read_to_string(&path) {
        Ok(text) => Some(SourceFile {
            path: name.to_owned(),
            text,
        }),
        Err(e) => {
            errors.push(unreadable(name, &e));
            None
        }
    }
}

fn read_dir(root: &Path, dir: &str, exts: &[&str], errors: &mut Vec<LoadError>) -> Vec<SourceFile> {
    let mut out = Vec::new();
    let entries = match std::fs::read_dir(root.join(dir)) {
        Ok(entries) => entries,
        Err(_) => return out,
    };
    let mut paths: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| exts.contains(&e))
        })
        .collect();
    paths.sort();
    for path in paths {
        let name = format!(
            "{dir}/{}",
            path.file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
        );
        match std::fs::read_to_string(&path) {
            Ok(text) => out.push(SourceFile { path: name, text }),
            Err(e) => errors.push(unreadable(&name, &e)),
        }
    }
    out
}

fn unreadable(name: &str, e: &std::io::Error) -> LoadError {
    LoadError {
        file: name.to_owned(),
        field: "(file)".into(),
        value: String::new(),
        problem: format!("cannot read: {e}"),
    }
}
