//! The `turn` binary: Init, then invocations from the Lambda Runtime API (or plain HTTP on
//! `BIND` when started outside Lambda, for local development).

use std::sync::Arc;
use std::time::Instant;

use anyhow::Context as _;
use baton_http::{LocalPrincipal, PrincipalSource};
use baton_turn::{Config, LambdaPrincipal, under_lambda};

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let started = Instant::now();
    baton_aws::logs::init();
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
        let stopped = function.run_lambda().await.map_err(|e| anyhow::anyhow!(e));
        return stopped.context("the Lambda runtime stopped");
    }
    tracing::warn!(bind = %config.bind, "not under Lambda: serving plain HTTP; the x-baton-principal header names the caller");
    let listener = tokio::net::TcpListener::bind(&config.bind)
        .await
        .with_context(|| format!("binding {}", config.bind))?;
    function.serve(listener).await.context("serving HTTP")
}
