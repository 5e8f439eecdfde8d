//! `baton validate`: the registry checks that run at start-up, on their own.

use std::collections::BTreeSet;
use std::process::ExitCode;

use std::sync::Arc;

use anyhow::{Context as _, anyhow};
use baton_core::registry::{ModelSpec, Registry};
use baton_evals::coverage;
use baton_openai::{OpenAiCompatible, ProbeVerdict};

use crate::config::{ModelChoice, Settings};
use crate::{eval, setup};
use clap::Args;
use std::path::PathBuf;

/// `baton validate`.
#[derive(Debug, Args)]
pub(crate) struct ValidateArgs {
    /// Registry folder [default: the configured registry]
    #[arg(value_name = "DIR")]
    pub(crate) dir: Option<PathBuf>,
    /// Fail when the eval suites miss a specialist's cases (a warning otherwise).
    #[arg(long)]
    pub(crate) strict: bool,
}

/// Runs `baton validate`: problems and warnings, then a one-line summary.
///
/// # Errors
/// Every load problem (file, field, value), or no orchestrator to start turns at.
pub(crate) async fn run(settings: &Settings, args: &ValidateArgs) -> anyhow::Result<ExitCode> {
    let root = &settings.registry;
    let loaded = setup::load(root).await?;
    let registry = &loaded.registry;
    setup::print_warnings(registry);
    // The runtime refuses to start without one entry orchestrator; so does validation.
    let entry = registry
        .entry(settings.orchestrator.as_deref())
        .map_err(|e| anyhow!("the registry {} is not valid: {e}", root.display()))?;
    // The eval suites: well formed, and covering every specialist (a warning, or with
    // --strict an error, so a specialist added without its cases shows).
    let specialists: BTreeSet<String> = entry
        .orchestration
        .as_ref()
        .map(|o| o.sub_agents.iter().map(|s| s.to_string()).collect())
        .unwrap_or_default();
    let missing = if root.join("evals").is_dir() {
        let suites = eval::load_suites(&eval::suite_files(root)?, &entry.id, &specialists)?;
        coverage(&suites, &specialists)
    } else {
        vec![format!(
            "no eval suites: add cases under {} (see docs/evals.md)",
            root.join("evals").display()
        )]
    };
    if args.strict && !missing.is_empty() {
        return Err(anyhow!(
            "the eval suites do not cover the specialists:\n  {}",
            missing.join("\n  ")
        ));
    }
    for m in &missing {
        eprintln!("warning: {m}");
    }
    let unusable = probe_backends(&loaded).await;
    if args.strict && !unusable.is_empty() {
        return Err(anyhow!(
            "the registry's backends cannot all be used:\n  {}",
            unusable.join("\n  ")
        ));
    }
    for u in &unusable {
        eprintln!("warning: {u}");
    }
    let probed = probe_models(settings, registry).await?;
    let warnings = registry.warnings().len() + missing.len() + unusable.len();
    println!(
        "registry OK: {} agents, {} tools, {} models{}{}",
        registry.agents().count(),
        registry.tools().count(),
        registry.models().count(),
        match probed {
            0 => String::new(),
            1 => ", 1 model server checked".to_owned(),
            n => format!(", {n} model servers checked"),
        },
        match warnings {
            0 => String::new(),
            1 => " (1 warning)".to_owned(),
            n => format!(" ({n} warnings)"),
        }
    );
    Ok(ExitCode::SUCCESS)
}

/// Asks each tool's connector whether its backend can be used now (a remote agent: its
/// card fetched and checked), and says which cannot: starting does not fail for a backend
/// that is down (its specialist says plainly that it is unavailable), so this is a
/// warning, and with `--strict` an error.
async fn probe_backends(loaded: &setup::Loaded) -> Vec<String> {
    let mut problems = Vec::new();
    for tool in loaded.registry.tools() {
        let Some(connector) = loaded.connectors.get(&*tool.connector_kind) else {
            continue;
        };
        if let Err(why) = connector.probe(&tool.id, &tool.connector_config).await {
            problems.push(format!("tools.yaml: tools.{}.connector: {why}", tool.id));
        }
    }
    problems
}

/// Checks the servers of the `openai_compatible` models that would serve turns with these
/// settings (`--model KEY`, or each card's own model with `--model registry`/`bedrock`):
/// reachable, and honouring a forced tool choice where models.yaml says they take one.
/// Returns how many were checked.
///
/// # Errors
/// A server that cannot be reached or does not do what models.yaml says, named.
async fn probe_models(settings: &Settings, registry: &Arc<Registry>) -> anyhow::Result<usize> {
    let specs: Vec<Arc<ModelSpec>> = match &settings.model {
        ModelChoice::Key(key) => {
            // The same checks as serving turns: a known key, a provider that can serve.
            setup::serving_every_card(registry, key)?;
            registry.model(key).cloned().into_iter().collect()
        }
        ModelChoice::Registry | ModelChoice::Bedrock => {
            let mut used: Vec<Arc<ModelSpec>> =
                registry.agents().map(|a| a.model.clone()).collect();
            used.sort_by(|a, b| a.key.cmp(&b.key));
            used.dedup_by(|a, b| a.key == b.key);
            used
        }
        ModelChoice::Offline | ModelChoice::Scripted(_) => Vec::new(),
    };
    let mut checked = 0;
    for spec in specs
        .iter()
        .filter(|s| &*s.provider == baton_openai::PROVIDER)
    {
        let model =
            OpenAiCompatible::new([spec.clone()]).with_context(|| format!("model {}", spec.key))?;
        let server = spec.endpoint.as_ref().map_or("", |e| &*e.base_url);
        match model.probe(&spec.model_id).await {
            Ok(ProbeVerdict::Capable) => {
                println!("model {}: {server} answers", spec.key);
                checked += 1;
            }
            Ok(ProbeVerdict::CannotForceToolChoice(message)) => {
                return Err(anyhow!("model {}: {message}", spec.key));
            }
            Err(e) => {
                return Err(anyhow!(
                    "model {}: the server at {server} did not answer a test call: {e} (is it \
                     running? for the shipped llama-cpp model: ./infra/local-model.sh serve)",
                    spec.key
                ));
            }
        }
    }
    Ok(checked)
}
