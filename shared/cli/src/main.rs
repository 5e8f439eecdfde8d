//! The `baton` command: chat with the assistant, serve it over HTTP, validate a registry,
//! compact conversations, replay one, run the eval suites.
//!
//! Exit status: 0 success, 1 a failure the user can fix (printed as `error: ...`), 2 a
//! usage error, 3 an eval run with failing cases, 4 an eval run the baseline gate refuses.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

mod account_links;
#[cfg(feature = "jemalloc")]
mod allocator;
mod chat;
mod cli;
mod compact;
mod config;
mod eval;
mod logging;
mod mcp;
mod memory;
mod render;
mod replay;
mod serve;
mod setup;
mod validate;

use std::io::{Error, ErrorKind};
use std::process::ExitCode;

use clap::Parser;

// jemalloc gives memory back to the system soon after a burst of large answers; glibc's
// allocator kept hundreds of MiB after the turns that used it were gone.
#[cfg(feature = "jemalloc")]
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// How long the last traces and metrics may take to send when the program ends.
const EXPORT_AT_EXIT: std::time::Duration = std::time::Duration::from_secs(2);

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    // Test builds only: arms the fault injection points the FAILPOINTS variable names
    // (D-39), e.g. `FAILPOINTS=store.summary.before=sleep(60000)` to kill a compaction there.
    #[cfg(feature = "failpoints")]
    let _faults = fail::FailScenario::setup();
    // https everywhere (connectors, models, the trace exporter) runs on one crypto provider.
    baton_connectors::install_tls_provider();
    // Traces and metrics go to an OTLP receiver when the OTEL_* variables name one. Built before the
    // async runtime and shut down after it: the exporter's client blocks.
    let telemetry = match baton_otel::Telemetry::from_env("baton") {
        Ok(t) => t,
        Err(e) => {
            eprintln!("warning: traces and metrics are not exported: {e}");
            None
        }
    };
    // One thread serves every turn: a turn is microseconds of CPU between waits, so a
    // single thread carries thousands of turns a second without hand-offs between cores;
    // SQLite work and the line editor run on the blocking pool.
    let outcome = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(anyhow::Error::from)
        .and_then(|rt| rt.block_on(cli.run()));
    // A receiver that never answers must not hold the exit for the exporter's timeout.
    if let Some(telemetry) = telemetry
        && let Err(e) = telemetry.shutdown_within(EXPORT_AT_EXIT)
    {
        eprintln!("warning: {e}");
    }
    match outcome {
        Ok(code) => code,
        // The reader went away (`baton chat ... | head`): nothing left to say.
        Err(e)
            if e.chain().any(|c| {
                c.downcast_ref::<Error>()
                    .is_some_and(|io| io.kind() == ErrorKind::BrokenPipe)
            }) =>
        {
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
