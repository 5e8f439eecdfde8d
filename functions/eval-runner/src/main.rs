//! The eval-runner Lambda: invoked from CI (`aws lambda invoke`, `sam remote invoke`).

use anyhow::Context;
use baton_aws::sdk::Clients;
use baton_eval_runner::{Config, EvalRunner};
use lambda_runtime::service_fn;

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    baton_aws::logs::init();
    let config = Config::from_env().context("reading the eval runner's settings")?;
    let clients = Clients::from_env().await;
    let runner = EvalRunner::init(&config, &clients)
        .await
        .context("Init failed")?;
    let runner = &runner;
    lambda_runtime::run(service_fn(move |event| runner.handle(event)))
        .await
        .map_err(anyhow::Error::from_boxed)
}
