//! Diagnostics on stderr through `tracing`, either human-readable or as JSON lines that a
//! supervisor or log shipper can parse. Colour only on a terminal.

use std::io::IsTerminal;

use anyhow::Context;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer as _};

/// Starts logging with the configured filter, or `default` when none is set, and trace
/// export when the OTEL_* variables turned it on (its own filter: every span at `info`,
/// whatever the log level).
///
/// # Errors
/// The filter does not parse.
pub(crate) fn init(filter: Option<&str>, default: &str, json: bool) -> anyhow::Result<()> {
    let text = filter.unwrap_or(default);
    let filter = EnvFilter::try_new(text)
        .with_context(|| format!("invalid configuration: key \"log\" = {text:?}"))?;
    let fmt = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let fmt = if json {
        fmt.json().with_current_span(false).boxed()
    } else {
        fmt.with_ansi(std::io::stderr().is_terminal()).boxed()
    };
    // A second start (never expected) keeps the first subscriber.
    let _ = tracing_subscriber::registry()
        .with(fmt.with_filter(filter))
        .with(baton_otel::layer().map(|otel| otel.with_filter(baton_otel::spans_only())))
        .try_init();
    Ok(())
}

/// Whether a server should log JSON: when asked, or when nobody is watching a terminal.
pub(crate) fn server_wants_json(asked: bool) -> bool {
    asked || !std::io::stderr().is_terminal()
}
