//! `baton serve`: the HTTP app over the local runtime, until Ctrl-C.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use baton_http::{AppState, LocalPrincipal};
use tokio::net::TcpListener;

use crate::config::Settings;
use crate::{logging, setup};
use clap::Args;

/// `baton serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Address to listen on [default: 127.0.0.1:8787]
    #[arg(long, value_name = "HOST:PORT")]
    pub(crate) addr: Option<String>,
    /// Log as JSON lines even on a terminal.
    #[arg(long)]
    pub(crate) log_json: bool,
}

/// Runs `baton serve`.
///
/// # Errors
/// A runtime that cannot be assembled, an address that cannot be bound, a failing listener.
pub(crate) async fn run(settings: &Settings, args: &ServeArgs) -> anyhow::Result<ExitCode> {
    logging::init(
        settings.log.as_deref(),
        "info",
        logging::server_wants_json(args.log_json),
    )?;
    #[cfg(feature = "jemalloc")]
    {
        crate::allocator::return_freed_memory_soon();
        tokio::spawn(crate::allocator::give_back_when_quiet());
    }
    let setup::Assembled {
        runtime, metrics, ..
    } = setup::assemble(settings).await?;
    let principals = Arc::new(LocalPrincipal::new(Some(settings.principal.clone())));
    let state = AppState::new(runtime.clone(), principals)
        .with_metrics(metrics)
        .with_max_body_bytes(settings.max_body_bytes)
        .with_hosts(settings.allowed_hosts.clone())
        .with_public_url(settings.public_url.clone())
        .with_console();
    // A request's `traceparent` continues the caller's trace (D-33).
    let state = if baton_otel::exporting() {
        state.with_trace_continuation(baton_otel::continuing)
    } else {
        state
    };
    let listener = TcpListener::bind(settings.addr)
        .await
        .with_context(|| format!("listening on {}", settings.addr))?;
    let addr = listener.local_addr().context("reading the bound address")?;
    tracing::info!(%addr, url = %format!("http://{addr}"), principal = %settings.principal, "baton serve listening");
    let limits = connection_limits(settings.server);
    let served = baton_http::serve(listener, state, limits, shutdown_signal())
        .await
        .context("serving");
    runtime.settle().await;
    served?;
    tracing::info!("baton serve stopped");
    Ok(ExitCode::SUCCESS)
}

/// Descriptors kept free for the store, log files and the like when connections are capped
/// by the process's descriptor limit.
const SPARE_DESCRIPTORS: u64 = 64;

/// The configured limits, with the connection cap lowered to what the process's descriptor
/// limit allows: past it `accept` fails for every client, health checks included.
fn connection_limits(mut limits: baton_http::ServerLimits) -> baton_http::ServerLimits {
    #[cfg(unix)]
    {
        let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
        if let Some(soft) = soft {
            let room = usize::try_from(soft.saturating_sub(SPARE_DESCRIPTORS).max(1))
                .unwrap_or(usize::MAX);
            if room < limits.max_connections {
                tracing::warn!(
                    configured = limits.max_connections,
                    allowed = room,
                    descriptor_limit = soft,
                    "max_connections lowered to fit the descriptor limit"
                );
                limits.max_connections = room;
            }
        }
    }
    limits
}

/// Ctrl-C, or SIGTERM on Unix (how service managers and containers ask a process to stop).
async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %e, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
    tracing::info!("shutting down: finishing open requests");
}
