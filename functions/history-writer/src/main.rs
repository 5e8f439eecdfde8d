//! The history-writer Lambda: a DynamoDB Streams trigger on the journal table.

use std::sync::Arc;

use anyhow::Context;
use baton_history_writer::{Config, HistoryWriter, MemorySetup, RuntimeMemory};
use lambda_runtime::service_fn;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    baton_aws::logs::init();
    let config = Config::from_env().context("reading the history writer's settings")?;
    let memory = MemorySetup::from_lookup(|name| std::env::var(name).ok(), &config.table)
        .context("reading long-term memory's settings")?;
    let sdk = baton_aws::sdk::load_config().await;
    let clients = baton_aws::sdk::Clients::new(&sdk);
    let mut writer = HistoryWriter::new(clients.dynamodb.clone(), clients.s3.clone(), config);
    if let Some(setup) = &memory {
        let extractor = RuntimeMemory::init(setup, &clients, &writer.config().bucket)
            .await
            .context("starting long-term memory's extraction")?;
        writer = writer.with_memory(Arc::new(extractor));
    }
    let writer = &writer;
    lambda_runtime::run(service_fn(move |event| writer.handle(event)))
        .await
        .map_err(anyhow::Error::from_boxed)
}
