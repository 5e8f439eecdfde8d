//! Long-term memory's extraction on AWS (D-43): a turn folded into the aggregates for the
//! first time is handed, after its batch is projected, to whatever remembers. The turn
//! function does not extract (Lambda freezes it once the answer is sent); this consumer
//! runs off the turn's path anyway.
//!
//! At most once per turn: only a record applied for the first time is handed over, so a
//! redelivered batch asks the summarizer nothing again, and an extraction that fails is
//! not retried (the memory is a convenience; the turn stands without it).

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use baton_aws::bedrock::BedrockModel;
use baton_aws::journal::{DynamoStore, JournalConfig};
use baton_aws::recall::DeployedMemory;
use baton_aws::sdk::Clients;
use baton_aws::settings::{ConfigError, Env};
use baton_core::Principal;
use baton_core::turn::TurnRecord;
use baton_runtime::registry_folder::{DeployError, load_deployed};
use baton_runtime::{MemorySettings, Runtime, RuntimeConfig};

/// Extractions run at the same time within one batch: each is a model call.
pub(crate) const EXTRACTIONS_IN_FLIGHT: usize = 4;

/// Keeps what a committed turn says worth remembering.
#[async_trait]
pub trait Remember: Send + Sync {
    /// Extracts from `record` of `owner`'s episode; failures are the implementation's to
    /// log and count: the batch goes on.
    async fn after_turn(&self, owner: &Principal, record: &TurnRecord);
}

/// What extraction needs besides the journal's table: where memory lives, and the
/// registry whose summarizer (and its prices) extraction uses, with the Bedrock ids the
/// role may call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemorySetup {
    /// Where memory lives and the deployment's default.
    pub memory: DeployedMemory,
    /// `BATON_REGISTRY`.
    pub registry: PathBuf,
    /// `BATON_ORCHESTRATOR`: whose summarizer extracts.
    pub orchestrator: Option<String>,
    /// `BATON_MODEL_IDS`.
    pub model_ids: Vec<(String, String)>,
}

impl MemorySetup {
    /// Reads the settings through `lookup`; `None` when the deployment keeps no memory
    /// (`BATON_MEMORY_VECTOR_INDEX_ARN` unset).
    ///
    /// # Errors
    /// A value not understood, naming its variable.
    pub fn from_lookup(
        lookup: impl Fn(&str) -> Option<String>,
        table: &str,
    ) -> Result<Option<MemorySetup>, ConfigError> {
        let env = Env(lookup);
        let Some(memory) = env.memory(table)? else {
            return Ok(None);
        };
        Ok(Some(MemorySetup {
            memory,
            registry: env.registry(),
            orchestrator: env.get("BATON_ORCHESTRATOR"),
            model_ids: env.model_ids()?,
        }))
    }
}

/// The runtime's own extraction ([`baton_runtime::recall::MemoryControl::extract`]): the
/// summarizer through Bedrock, the policy, the privacy guard, the principal's setting.
pub struct RuntimeMemory(pub Runtime);

impl RuntimeMemory {
    /// A runtime that only extracts: the registry as deployed, its models on Bedrock,
    /// memory where `setup` places it. The journal is the runtime's required store; no
    /// turn is run.
    ///
    /// # Errors
    /// The registry or runtime refused, or an embedding model that cannot fill the index.
    pub async fn init(
        setup: &MemorySetup,
        clients: &Clients,
        bucket: &str,
    ) -> Result<RuntimeMemory, MemoryInitError> {
        let connectors = baton_connectors::default_connectors(&setup.registry);
        let registry =
            Arc::new(load_deployed(&setup.registry, &connectors, &setup.model_ids).await?);
        let memory = baton_aws::recall::deployed(clients, &setup.memory)
            .map_err(|e| MemoryInitError::Embedder(e.to_string()))?;
        let journal = DynamoStore::new(
            clients.dynamodb.clone(),
            clients.s3.clone(),
            JournalConfig::new(setup.memory.place.table(), bucket),
        );
        let runtime = Runtime::builder(registry.clone())
            .provider(
                baton_aws::bedrock::PROVIDER,
                Arc::new(BedrockModel::new(
                    clients.bedrock.clone(),
                    registry.models(),
                )),
            )
            .connectors(connectors)
            .store(Arc::new(journal))
            .memory(memory.store, memory.embedder)
            .config(RuntimeConfig {
                orchestrator: setup.orchestrator.clone(),
                memory: MemorySettings {
                    on_by_default: setup.memory.on_by_default,
                    extract_after_turn: false,
                    ..MemorySettings::default()
                },
                ..RuntimeConfig::default()
            })
            .build()
            .map_err(DeployError::from)?;
        Ok(RuntimeMemory(runtime))
    }
}

/// Why the memory side of the history writer could not start.
#[derive(Debug, thiserror::Error)]
pub enum MemoryInitError {
    /// The registry or the runtime.
    #[error(transparent)]
    Deploy(#[from] DeployError),
    /// The embedding model and the index do not fit.
    #[error("long-term memory: {0}")]
    Embedder(String),
}

impl From<baton_runtime::registry_folder::DeployedRegistryError> for MemoryInitError {
    fn from(e: baton_runtime::registry_folder::DeployedRegistryError) -> Self {
        MemoryInitError::Deploy(e.into())
    }
}

#[async_trait]
impl Remember for RuntimeMemory {
    async fn after_turn(&self, owner: &Principal, record: &TurnRecord) {
        match self.0.memory().extract(owner, record).await {
            Ok(done) => tracing::debug!(
                turn_id = %record.turn_id,
                asked = done.asked,
                saved = done.saved,
                "memory extraction"
            ),
            Err(e) => {
                tracing::warn!(turn_id = %record.turn_id, error = %e, "memory extraction failed")
            }
        }
    }
}
