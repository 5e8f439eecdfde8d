//! `baton eval capture EPISODE [TURN]`: a stored turn as a case, printed as a YAML list
//! item to add under a suite's `cases:` (`>> evals/captured.yaml`).

use std::process::ExitCode;

use anyhow::anyhow;
use baton_evals::capture;

use super::CaptureArgs;
use crate::config::Settings;
use crate::setup;

/// Runs `baton eval capture`.
///
/// # Errors
/// An unknown episode or turn, the store unavailable.
pub(super) async fn run(settings: &Settings, args: &CaptureArgs) -> anyhow::Result<ExitCode> {
    let runtime = setup::assemble(settings).await?.runtime;
    let replay = runtime
        .replay(&settings.principal, &args.episode, false)
        .await
        .map_err(|r| anyhow!("{}", r.message))?;
    let at = match args.turn {
        None => replay.turns.len().checked_sub(1),
        Some(seq) => replay.turns.iter().position(|t| t.seq == seq),
    }
    .ok_or_else(|| {
        anyhow!(
            "conversation {} has no turn {} (it has {})",
            args.episode,
            args.turn
                .map_or_else(|| "to capture".to_owned(), |t| t.to_string()),
            replay.turns.len()
        )
    })?;
    let case = capture(&replay.turns, at, args.history)
        .ok_or_else(|| anyhow!("the turn could not be read"))?;
    print!("{}", serde_norway::to_string(&[case])?);
    Ok(ExitCode::SUCCESS)
}
