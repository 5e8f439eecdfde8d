//! The history-writer Lambda: a DynamoDB Streams trigger on the journal table.

use anyhow::Context;
use baton_history_writer::{Config, HistoryWriter};
use lambda_runtime::service_fn;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    baton_aws::logs::init();
    let config = Config::from_env().context("reading the history writer's settings")?;
    let sdk = baton_aws::sdk::load_config().await;
    let writer = HistoryWriter::new(
        aws_sdk_dynamodb::Client::from_conf(baton_aws::journal::dynamodb_config(&sdk).build()),
        // Path-style addressing when S3 is an emulator or S3-compatible endpoint.
        aws_sdk_s3::Client::from_conf(baton_aws::journal::s3_config(&sdk).build()),
        config,
    );
    let writer = &writer;
    lambda_runtime::run(service_fn(move |event| writer.handle(event)))
        .await
        .map_err(anyhow::Error::from_boxed)
}
