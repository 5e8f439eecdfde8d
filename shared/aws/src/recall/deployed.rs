//! Memory as a deployed function keeps it: [`DynamoMemory`] over the function's clients
//! and Titan V2 on Bedrock for its vectors, as its settings say.

use std::sync::Arc;

use baton_core::ports::memory::{Embedder, MemoryStore};

use super::DynamoMemory;
use crate::bedrock::embed::{BedrockEmbedder, EmbedderError};
use crate::sdk::Clients;
use crate::settings::DeployedMemory;

/// Long-term memory's two ports.
#[derive(Clone)]
pub struct MemoryParts {
    /// Where memories are kept and searched.
    pub store: Arc<dyn MemoryStore>,
    /// What makes their vectors.
    pub embedder: Arc<dyn Embedder>,
}

/// The store and the embedder of long-term memory, as `memory` places them.
///
/// # Errors
/// An embedding model that cannot answer in the index's dimensions.
pub fn deployed(clients: &Clients, memory: &DeployedMemory) -> Result<MemoryParts, EmbedderError> {
    let embedder = BedrockEmbedder::with_model_id(
        clients.bedrock.clone(),
        &memory.embedding_model,
        memory.place.dimensions(),
    )?;
    let store = DynamoMemory::new(
        clients.dynamodb.clone(),
        clients.s3vectors.clone(),
        memory.place.clone(),
    );
    Ok(MemoryParts {
        store: Arc::new(store),
        embedder: Arc::new(embedder),
    })
}
