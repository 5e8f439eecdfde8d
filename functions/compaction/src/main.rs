//! The compaction Lambda: invoked by an EventBridge schedule.

use anyhow::Context;
use baton_aws::sdk::Clients;
use baton_compaction::{Compaction, Config};
use lambda_runtime::service_fn;

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    baton_aws::logs::init();
    let config = Config::from_env().context("reading the compaction function's settings")?;
    let clients = Clients::from_env().await;
    let function = Compaction::init(&config, &clients)
        .await
        .context("Init failed")?;
    let function = &function;
    lambda_runtime::run(service_fn(move |event| function.handle(event)))
        .await
        .map_err(anyhow::Error::from_boxed)
}
