//! Diagnostics on stderr through `tracing`, either human-readable or as JSON lines that a
//! supervisor or log shipper can parse. Colour only on a terminal.

use std::io::IsTerminal;

use anyhow::Context;
use tracing_subscriber::EnvFilter;

/// Starts logging with the configured filter, or `default` when none is set.
///
/// # Errors
/// The filter does not parse.
pub(crate) fn init(filter: Option<&str>, default: &str, json: bool) -> anyhow::Result<()> {
    let text = filter.unwrap_or(default);
    let filter = EnvFilter::try_new(text)
        .with_context(|| format!("invalid configuration: key \"log\" = {text:?}"))?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // A second start (never expected) keeps the first subscriber.
    if json {
        let _ = builder.json().with_current_span(false).try_init();
    } else {
        let _ = builder
            .with_ansi(std::io::stderr().is_terminal())
            .try_init();
    }
    Ok(())
}

/// Whether a server should log JSON: when asked, or when nobody is watching a terminal.
pub(crate) fn server_wants_json(asked: bool) -> bool {
    asked || !std::io::stderr().is_terminal()
}
