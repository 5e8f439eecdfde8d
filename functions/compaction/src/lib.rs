//! The compaction function (design.md §4): on an EventBridge schedule, it folds the older
//! turns of every episode marked due into its summary with the summarizer model on
//! Bedrock, a bounded batch of episodes per run and none started too close to the
//! invocation's deadline. The work itself is the runtime's (`baton_runtime::compaction`),
//! the same as `baton compact`'s; this crate reads the settings, assembles the adapters
//! and reports EMF metrics.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

mod config;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use baton_aws::bedrock::BedrockModel;
use baton_aws::emf::EmfMetrics;
use baton_aws::journal::DynamoStore;
use baton_aws::sdk::Clients;
use baton_core::ports::connector::Connector;
use baton_core::ports::model::Model;
use baton_core::ports::store::Store;
use baton_runtime::compaction::{Outcome, RunReport};
use baton_runtime::registry_folder::load_deployed;
use baton_runtime::{Runtime, RuntimeConfig};
use lambda_runtime::LambdaEvent;
use serde::Serialize;

pub use config::{Config, ConfigError};

/// Why Init failed: the registry or the runtime, as for every function.
pub use baton_runtime::registry_folder::DeployError as InitError;

/// The function after Init.
pub struct Compaction {
    runtime: Runtime,
    metrics: Arc<EmfMetrics>,
    max_episodes: usize,
    reserve: Duration,
}

/// What one scheduled run did: the function's response, and the log line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Episodes handled.
    pub episodes: usize,
    /// Given a new summary.
    pub compacted: usize,
    /// Due with nothing to fold (the mark was cleared).
    pub nothing_to_fold: usize,
    /// Left as they were because turns kept committing: still due.
    pub skipped_on_conflict: usize,
    /// Left as they were because the summarizer failed: still due.
    pub failed: usize,
    /// Due episodes not started because the deadline was near.
    pub left_for_next_run: usize,
    /// Turns folded into summaries.
    pub turns_folded: u64,
    /// The summarizer's input tokens.
    pub tokens_in: u64,
    /// The summarizer's output tokens.
    pub tokens_out: u64,
    /// The summarizer's cost, USD.
    pub cost_usd: f64,
}

impl From<&RunReport> for Summary {
    fn from(r: &RunReport) -> Self {
        let tokens = r.tokens();
        Summary {
            episodes: r.episodes.len(),
            compacted: r.count(Outcome::Compacted),
            nothing_to_fold: r.count(Outcome::Nothing),
            skipped_on_conflict: r.count(Outcome::Conflict),
            failed: r.count(Outcome::Failed),
            left_for_next_run: r.left_for_next_run,
            turns_folded: r.episodes.iter().map(|e| e.turns_folded).sum(),
            tokens_in: tokens.input + tokens.cache_read + tokens.cache_write,
            tokens_out: tokens.output,
            cost_usd: r.cost_usd(),
        }
    }
}

impl Compaction {
    /// Init on AWS: the registry checked, Bedrock, DynamoDB and S3 clients built.
    ///
    /// # Errors
    /// See [`InitError`].
    pub async fn init(config: &Config, clients: &Clients) -> Result<Compaction, InitError> {
        let connectors = baton_connectors::default_connectors(&config.registry);
        let registry =
            Arc::new(load_deployed(&config.registry, &connectors, &config.model_ids).await?);
        let model = BedrockModel::new(clients.bedrock.clone(), registry.models());
        let store = DynamoStore::new(
            clients.dynamodb.clone(),
            clients.s3.clone(),
            config.journal(),
        );
        Self::assemble(
            config,
            registry,
            connectors,
            Arc::new(model),
            Arc::new(store),
        )
    }

    /// Init over any model and store. The connectors only let the runtime accept the
    /// registry's tools: compaction calls none.
    ///
    /// # Errors
    /// See [`InitError`].
    pub fn assemble(
        config: &Config,
        registry: Arc<baton_core::registry::Registry>,
        connectors: BTreeMap<String, Arc<dyn Connector>>,
        bedrock: Arc<dyn Model>,
        store: Arc<dyn Store>,
    ) -> Result<Compaction, InitError> {
        let metrics = Arc::new(EmfMetrics::new(&config.metrics_namespace));
        let runtime = Runtime::builder(registry.clone())
            .provider(baton_aws::bedrock::PROVIDER, bedrock)
            .connectors(connectors)
            .store(store)
            .metrics(metrics.clone())
            .config(RuntimeConfig {
                orchestrator: config.orchestrator.clone(),
                summarize_timeout_ms: config.summarize_timeout_ms,
                ..RuntimeConfig::default()
            })
            .build()?;
        Ok(Compaction {
            runtime,
            metrics,
            max_episodes: config.max_episodes,
            reserve: config.reserve,
        })
    }

    /// One scheduled run: due episodes, longest due first, until none is left, the batch
    /// is full, or the deadline (less the reserve) is near. Metrics go to stdout as EMF.
    ///
    /// # Errors
    /// The journal unavailable: the run fails (and is retried by the schedule); summaries
    /// already written stay.
    pub async fn handle(
        &self,
        event: LambdaEvent<serde_json::Value>,
    ) -> Result<Summary, lambda_runtime::Error> {
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let remaining = Duration::from_millis(event.context.deadline.saturating_sub(now_ms));
        let deadline = tokio::time::Instant::now() + remaining.saturating_sub(self.reserve);
        let outcome = self
            .runtime
            .compact_due(self.max_episodes, Some(deadline))
            .await;
        let request_id = event.context.request_id.as_str();
        if let Err(e) = self
            .metrics
            .flush(std::io::stdout().lock(), &[("RequestId", request_id)])
        {
            tracing::warn!(error = %e, "could not write the metrics");
        }
        let report = outcome.map_err(|e| {
            tracing::error!(error = %e, "compaction run stopped: the journal is unavailable");
            lambda_runtime::Error::from(format!("the journal is unavailable: {e}"))
        })?;
        for e in report
            .episodes
            .iter()
            .filter(|e| e.outcome != Outcome::Compacted)
        {
            tracing::warn!(episode_id = %e.episode_id, outcome = e.outcome.as_str(), "episode not compacted");
        }
        let summary = Summary::from(&report);
        tracing::info!(
            episodes = summary.episodes,
            compacted = summary.compacted,
            skipped_on_conflict = summary.skipped_on_conflict,
            failed = summary.failed,
            left_for_next_run = summary.left_for_next_run,
            tokens_in = summary.tokens_in,
            tokens_out = summary.tokens_out,
            cost_usd = summary.cost_usd,
            "compaction run done"
        );
        Ok(summary)
    }
}
