//! `baton validate`: the registry checks that run at start-up, on their own.

use std::process::ExitCode;

use anyhow::anyhow;

use crate::config::Settings;
use crate::setup;

/// Runs `baton validate`: problems and warnings, then a one-line summary.
///
/// # Errors
/// Every load problem (file, field, value), or no orchestrator to start turns at.
pub(crate) fn run(settings: &Settings) -> anyhow::Result<ExitCode> {
    let root = &settings.registry;
    let loaded = setup::load(root)?;
    let registry = &loaded.registry;
    setup::print_warnings(registry);
    // The runtime refuses to start without one entry orchestrator; so does validation.
    registry
        .entry(settings.orchestrator.as_deref())
        .map_err(|e| anyhow!("the registry {} is not valid: {e}", root.display()))?;
    let warnings = registry.warnings().len();
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
