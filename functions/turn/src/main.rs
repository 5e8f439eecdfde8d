//! The `turn` binary: Init, then invocations from the Lambda Runtime API (or plain HTTP on
//! `BIND` when started outside Lambda, for local development).

use std::sync::Arc;
use std::time::Instant;

use anyhow::Context as _;
use baton_http::{LocalPrincipal, PrincipalSource};
use baton_turn::{Config, LambdaPrincipal, under_lambda};
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

fn main() -> anyhow::Result<()> {
    let started = Instant::now();
    // https everywhere (connectors, the trace exporter) runs on one crypto provider.
    baton_connectors::install_tls_provider();
    // Spans and metrics go over OTLP when the OTEL_* variables name a receiver (on Lambda: the
    // collector extension at localhost). Built before the async runtime: the exporter's
    // client blocks.
    let telemetry = match baton_otel::Telemetry::from_env("baton-turn") {
        Ok(telemetry) => telemetry,
        Err(e) => {
            eprintln!("traces and metrics are not exported: {e}");
            None
        }
    };
    let _ = tracing_subscriber::registry()
        .with(baton_aws::logs::layer())
        .with(baton_otel::layer().map(|otel| otel.with_filter(baton_otel::spans_only())))
        .try_init();
    let outcome = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?
        .block_on(run(started, telemetry.clone()));
    if let Some(telemetry) = telemetry
        && let Err(e) = telemetry.shutdown()
    {
        tracing::warn!(error = %e, "the last spans and metrics were not sent");
    }
    outcome
}

async fn run(started: Instant, telemetry: Option<baton_otel::Telemetry>) -> anyhow::Result<()> {
    let lambda = under_lambda();
    let config = Config::from_env().context("reading the function's settings")?;
    // Outside Lambda there is no auth context: local runs name the caller in a header.
    let principals: Arc<dyn PrincipalSource> = if lambda {
        Arc::new(LambdaPrincipal)
    } else {
        Arc::new(LocalPrincipal::new(None))
    };
    let (function, clients) = baton_turn::init(&config, principals)
        .await
        .context("Init failed")?;
    let init_us = started.elapsed().as_micros() as u64;
    tracing::info!(init_us, "ready: registry validated, clients built");
    let targets = config.warm_up_targets();
    clients
        .warm_up(&targets, config.warm_up_timeout)
        .await
        .log();
    if lambda {
        let stopped = function
            .run_lambda(telemetry)
            .await
            .map_err(|e| anyhow::anyhow!(e));
        return stopped.context("the Lambda runtime stopped");
    }
    tracing::warn!(bind = %config.bind, "not under Lambda: serving plain HTTP; the x-baton-principal header names the caller");
    let listener = tokio::net::TcpListener::bind(&config.bind)
        .await
        .with_context(|| format!("binding {}", config.bind))?;
    function.serve(listener).await.context("serving HTTP")
}
