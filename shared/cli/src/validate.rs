//! `baton validate`: the registry checks that run at start-up, on their own.

use std::collections::BTreeSet;
use std::process::ExitCode;

use anyhow::anyhow;
use baton_core::eval::coverage;

use crate::cli::ValidateArgs;
use crate::config::Settings;
use crate::{eval, setup};

/// Runs `baton validate`: problems and warnings, then a one-line summary.
///
/// # Errors
/// Every load problem (file, field, value), or no orchestrator to start turns at.
pub(crate) fn run(settings: &Settings, args: &ValidateArgs) -> anyhow::Result<ExitCode> {
    let root = &settings.registry;
    let loaded = setup::load(root)?;
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
        let suites = eval::load_suites(&eval::suite_files(root)?, &specialists)?;
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
    let warnings = registry.warnings().len() + missing.len();
    println!(
        "registry OK: {} agents, {} tools, {} models{}",
        registry.agents().count(),
        registry.tools().count(),
        registry.models().count(),
        match warnings {
            0 => String::new(),
            1 => " (1 warning)".to_owned(),
            n => format!(" ({n} warnings)"),
        }
    );
    Ok(ExitCode::SUCCESS)
}
