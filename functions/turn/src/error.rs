//! Why the turn function's Init failed.

use baton_aws::secrets::SecretsError;
use baton_runtime::registry_folder::{DeployError, DeployedRegistryError};

/// Why Init failed. Each message says what to fix.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    /// The registry or the runtime, as for every function.
    #[error(transparent)]
    Deploy(#[from] DeployError),
    /// A card names a model this function cannot serve (only Bedrock models run on Lambda).
    #[error(
        "these cards name models that are not served on AWS Lambda (only provider \"bedrock\" is): {0}; point them at a Bedrock model in models.yaml"
    )]
    ModelNotServed(String),
    /// A header secret of an `http` tool, named by ARN in `tools.yaml`, could not be read.
    #[error("a header secret of tools.yaml cannot be read: {0}")]
    Secrets(#[from] SecretsError),
    /// The account links' key could not be had (D-37).
    #[error("the account links' key: {0}")]
    LinkKey(String),
    /// Long-term memory's embedding model cannot fill its index.
    #[error("long-term memory: {0}")]
    Memory(String),
}

impl From<DeployedRegistryError> for InitError {
    fn from(e: DeployedRegistryError) -> Self {
        InitError::Deploy(e.into())
    }
}

impl From<baton_runtime::BuildError> for InitError {
    fn from(e: baton_runtime::BuildError) -> Self {
        InitError::Deploy(e.into())
    }
}
