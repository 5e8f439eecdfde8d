//! `baton compact`: compaction on demand, on whichever store is configured.

use std::process::ExitCode;

use anyhow::Context;
use baton_runtime::compaction::{EpisodeReport, Outcome, RunReport};

use crate::config::Settings;
use crate::{logging, setup};
use clap::Args;

/// `baton compact`.
#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("which").required(true).args(["due", "episode"]))]
pub(crate) struct CompactArgs {
    /// Every episode marked due, longest due first.
    #[arg(long)]
    pub(crate) due: bool,
    /// This episode of the principal's, due or not.
    #[arg(long, value_name = "ID")]
    pub(crate) episode: Option<String>,
    /// With `--due`: at most this many episodes.
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub(crate) max: usize,
    /// Print the report as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Runs `baton compact`: prints one line per episode (or the report as JSON). Fails when
/// an episode could not be compacted (still due: the summarizer failed or turns kept
/// coming), so a script notices.
///
/// # Errors
/// A runtime that cannot be assembled, an unknown episode, the store unavailable.
pub(crate) async fn run(settings: &Settings, args: &CompactArgs) -> anyhow::Result<ExitCode> {
    logging::init(settings.log.as_deref(), "warn", false)?;
    let runtime = setup::assemble(settings).await?.runtime;
    let report = match &args.episode {
        Some(episode) => RunReport {
            episodes: vec![
                runtime
                    .compact_episode(&settings.principal, episode)
                    .await
                    .with_context(|| format!("compacting episode {episode}"))?,
            ],
            left_for_next_run: 0,
        },
        None => runtime
            .compact_due(args.max, None)
            .await
            .context("compacting the due episodes")?,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        for e in &report.episodes {
            println!("{}", line(e));
        }
        let tokens = report.tokens();
        println!(
            "{} episode(s): {} compacted, {} with nothing to fold, {} conflict, {} failed; \
             summarizer {} tokens in, {} out, ${:.6}",
            report.episodes.len(),
            report.count(Outcome::Compacted),
            report.count(Outcome::Nothing),
            report.count(Outcome::Conflict),
            report.count(Outcome::Failed),
            tokens.input + tokens.cache_read + tokens.cache_write,
            tokens.output,
            report.cost_usd()
        );
    }
    let unfinished = report.count(Outcome::Failed) + report.count(Outcome::Conflict);
    Ok(if unfinished == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn line(e: &EpisodeReport) -> String {
    match e.outcome {
        Outcome::Compacted => format!(
            "{}: folded {} turn(s); the summary now covers turns 1–{}",
            e.episode_id, e.turns_folded, e.upto_seq
        ),
        Outcome::Nothing => format!(
            "{}: nothing to fold (the last turns are kept as they are)",
            e.episode_id
        ),
        Outcome::Conflict => format!(
            "{}: turns kept arriving; left as it was for the next run",
            e.episode_id
        ),
        Outcome::Failed => format!(
            "{}: the summarizer gave nothing usable; left as it was, still due",
            e.episode_id
        ),
    }
}
