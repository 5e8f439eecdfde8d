//! `baton links`: the principal's account links (D-37) on whichever store is configured —
//! each server and when it was connected or renewed — and revoking one.

use std::io::{self, Write};
use std::process::ExitCode;

use serde_json::json;

use crate::config::Settings;
use crate::{logging, setup};
use clap::{Args, Subcommand};

/// `baton links`.
#[derive(Debug, Args)]
pub(crate) struct LinksArgs {
    /// What to do (default: list them).
    #[command(subcommand)]
    pub(crate) action: Option<LinksAction>,
    /// Print as JSON.
    #[arg(long, global = true)]
    pub(crate) json: bool,
}

/// `baton links revoke`.
#[derive(Debug, Subcommand)]
pub(crate) enum LinksAction {
    /// List your links.
    List,
    /// Remove your link to a server (its URL, as `baton links` lists it).
    Revoke {
        /// The server's URL.
        #[arg(value_name = "SERVER")]
        server: String,
    },
}

/// Runs `baton links`.
///
/// # Errors
/// A runtime that cannot be assembled, the store unavailable, or output that cannot be
/// written.
pub(crate) async fn run(settings: &Settings, args: &LinksArgs) -> anyhow::Result<ExitCode> {
    logging::init(settings.log.as_deref(), "error", false)?;
    let runtime = setup::assemble(settings).await?.runtime;
    let principal = &settings.principal;
    let mut out = io::BufWriter::new(io::stdout().lock());
    match &args.action {
        None | Some(LinksAction::List) => {
            let links = runtime.links(principal).await?;
            if args.json {
                let links: Vec<_> = links
                    .iter()
                    .map(|(server, at)| json!({ "server": server, "updated_ms": at }))
                    .collect();
                writeln!(out, "{}", json!({ "links": links }))?;
            } else if links.is_empty() {
                writeln!(out, "No account links for {}.", principal.as_str())?;
            } else {
                for (server, at) in &links {
                    let when = i64::try_from(*at)
                        .ok()
                        .and_then(chrono::DateTime::from_timestamp_millis)
                        .map_or_else(String::new, |t| t.format("%Y-%m-%d %H:%M UTC").to_string());
                    writeln!(out, "{server}  (connected or renewed {when})")?;
                }
            }
        }
        Some(LinksAction::Revoke { server }) => {
            let revoked = runtime.revoke_link(principal, server).await?;
            if args.json {
                writeln!(out, "{}", json!({ "server": server, "revoked": revoked }))?;
            } else if revoked {
                writeln!(out, "Revoked your link to {server}.")?;
            } else {
                writeln!(out, "You have no link to {server}.")?;
            }
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
