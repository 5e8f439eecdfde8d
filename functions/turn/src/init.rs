//! Init: the registry loaded and validated, the adapters chosen, the runtime and the router
//! built — once per process, before the first invocation.

use std::sync::Arc;

use axum::Router;
use baton_aws::bedrock::BedrockModel;
use baton_aws::emf::EmfMetrics;
use baton_aws::journal::DynamoStore;
use baton_aws::recall::MemoryParts;
use baton_aws::sdk::Clients;
use baton_connectors::EnvSecretSource;
use baton_core::ports::metrics::{Metrics, Tee};
use baton_core::ports::model::Model;
use baton_core::ports::store::Store;
use baton_core::registry::Registry;
use baton_http::{AllowedHosts, AppState, PrincipalSource};
use baton_runtime::{Runtime, RuntimeConfig, Sealer};

use crate::config::{Config, LinkKeySetting};
use crate::deployed::{self, Connectors};
use crate::error::InitError;
use crate::tracker::{TrackedStore, TurnTracker};
use crate::{incoming, outgoing};

/// Which model serves the cards.
pub enum ModelServing {
    /// Bedrock serves every card whose model has provider `bedrock`; a card with any other
    /// provider fails Init.
    Bedrock(Arc<dyn Model>),
    /// This model serves every card, whatever its provider (tests and benchmarks).
    Override(Arc<dyn Model>),
}

/// The adapters behind the runtime's ports.
pub struct Adapters {
    /// The model.
    pub model: ModelServing,
    /// The journal.
    pub store: Arc<dyn Store>,
    /// Who is calling: [`LambdaPrincipal`](crate::LambdaPrincipal) on Lambda.
    pub principals: Arc<dyn PrincipalSource>,
    /// Long-term memory's store and embedder (D-43); `None`: no memory is kept.
    pub memory: Option<MemoryParts>,
}

/// The function after Init: everything an invocation needs, built once.
#[derive(Clone)]
pub struct Function {
    /// The turn engine.
    pub runtime: Runtime,
    /// The HTTP app every invocation is served by.
    pub router: Router,
    /// Metrics waiting for the end of the invocation.
    pub metrics: Arc<EmfMetrics>,
    /// Turns claimed and not yet committed.
    pub tracker: TurnTracker,
}

/// Init on AWS: clients from the SDK's standard settings, Bedrock, DynamoDB and S3, and the
/// `http` tools' header secrets by ARN read once (Secrets Manager, SSM).
///
/// # Errors
/// See [`InitError`].
pub async fn init(
    config: &Config,
    principals: Arc<dyn PrincipalSource>,
) -> Result<(Function, Clients), InitError> {
    let clients = Clients::from_env().await;
    let function = init_with(config, &clients, principals).await?;
    Ok((function, clients))
}

/// Init over given clients (tests point them at emulators).
///
/// The header secrets `tools.yaml` names by ARN are read first, once, with
/// `clients.config` (each in the region its ARN names); a registry without any sends no
/// request. See `registry` for the details.
///
/// # Errors
/// See [`InitError`]; a secret that cannot be read is [`InitError::Secrets`], naming its
/// ARN.
pub async fn init_with(
    config: &Config,
    clients: &Clients,
    principals: Arc<dyn PrincipalSource>,
) -> Result<Function, InitError> {
    let secrets = deployed::secret_source(config, &clients.config).await?;
    let link_key = match &config.link_key {
        Some(LinkKeySetting::Kms(ciphertext)) => {
            let key = baton_aws::link_key::decrypt(&clients.config, ciphertext)
                .await
                .map_err(|e| InitError::LinkKey(e.to_string()))?;
            Some(Sealer::new(&key).map_err(|e| InitError::LinkKey(e.to_string()))?)
        }
        Some(LinkKeySetting::Plain(key)) => Some(plain_key(key)?),
        None => None,
    };
    let (registry, connectors) = deployed::load(config, secrets).await?;
    let model = BedrockModel::new(clients.bedrock.clone(), registry.models());
    let store = DynamoStore::new(
        clients.dynamodb.clone(),
        clients.s3.clone(),
        config.journal(),
    );
    let memory = match &config.memory {
        Some(memory) => Some(
            baton_aws::recall::deployed(clients, memory)
                .map_err(|e| InitError::Memory(e.to_string()))?,
        ),
        None => None,
    };
    let adapters = Adapters {
        model: ModelServing::Bedrock(Arc::new(model)),
        store: Arc::new(store),
        principals,
        memory,
    };
    build(config, registry, connectors, adapters, link_key)
}

fn plain_key(key: &str) -> Result<Sealer, InitError> {
    Sealer::from_base64(key).map_err(|e| InitError::LinkKey(e.to_string()))
}

/// Init over any adapters: the same registry checks, runtime and router as on AWS, except
/// that the `http` tools' header secrets come from environment variables only (no AWS
/// client here: a header secret by ARN fails the registry's checks, naming it).
///
/// # Errors
/// See [`InitError`].
pub async fn assemble(config: &Config, adapters: Adapters) -> Result<Function, InitError> {
    let (registry, connectors) = deployed::load(config, Arc::new(EnvSecretSource)).await?;
    let link_key = match &config.link_key {
        Some(LinkKeySetting::Plain(key)) => Some(plain_key(key)?),
        Some(LinkKeySetting::Kms(_)) => {
            return Err(InitError::LinkKey(
                "BATON_LINK_KEY_KMS needs KMS, which this assembly has no client for: give BATON_LINK_KEY"
                    .to_owned(),
            ));
        }
        None => None,
    };
    build(config, registry, connectors, adapters, link_key)
}

fn build(
    config: &Config,
    registry: Arc<Registry>,
    connectors: Connectors,
    adapters: Adapters,
    link_key: Option<Sealer>,
) -> Result<Function, InitError> {
    let tracker = TurnTracker::new();
    let metrics = Arc::new(EmfMetrics::new(&config.metrics_namespace));
    // Beside the EMF lines, metrics go over OTLP when the OTEL_* variables say so.
    let sink: Arc<dyn Metrics> = match baton_otel::metrics() {
        Some(otlp) => Arc::new(Tee(metrics.clone(), Arc::new(otlp))),
        None => metrics.clone(),
    };
    let store: Arc<dyn Store> = Arc::new(TrackedStore::new(adapters.store, tracker.clone()));
    let mut builder = Runtime::builder(registry.clone())
        .store(store)
        .metrics(sink.clone())
        .config(RuntimeConfig {
            capture_content: baton_otel::captures_content(),
            ..config.runtime()
        });
    match adapters.model {
        ModelServing::Override(model) => builder = builder.model_override(model),
        ModelServing::Bedrock(model) => {
            let unserved: Vec<String> = registry
                .agents()
                .filter(|a| &*a.model.provider != baton_aws::bedrock::PROVIDER)
                .map(|a| {
                    format!(
                        "{} (model {}, provider {})",
                        a.id, a.model.key, a.model.provider
                    )
                })
                .collect();
            if !unserved.is_empty() {
                return Err(InitError::ModelNotServed(unserved.join(", ")));
            }
            builder = builder.provider(baton_aws::bedrock::PROVIDER, model);
        }
    }
    builder = builder.connectors(connectors);
    if let Some(memory) = adapters.memory {
        builder = builder.memory(memory.store, memory.embedder);
    }
    if let Some(key) = link_key {
        builder = builder.link_key(key);
    }
    if baton_otel::exporting() {
        // Tool calls and remote agents pass the trace on (D-33).
        builder = builder
            .trace_context(baton_otel::traceparent)
            .trace_link(baton_otel::link_to);
    }
    let runtime = builder.build()?;
    // Every request reaches the function through its URL's or API's authentication, under
    // a host only AWS names, so every route answers any host: the DNS-rebinding protection
    // is for servers listening on a machine's loopback (`baton serve`).
    let mut state = AppState::new(runtime.clone(), adapters.principals)
        .with_max_body_bytes(config.max_body_bytes)
        // A turn's pictures make its request larger, up to what Lambda takes.
        .with_max_request_bytes(crate::config::LAMBDA_MAX_REQUEST_BYTES)
        .with_hosts(AllowedHosts::Any);
    if baton_otel::exporting() {
        // A request's `traceparent` continues the caller's trace.
        state = state.with_trace_continuation(baton_otel::continuing);
    }
    let router = incoming::by_event_path(baton_http::app(state).layer(
        axum::middleware::from_fn_with_state(sink, outgoing::guard_stream),
    ));
    Ok(Function {
        runtime,
        router,
        metrics,
        tracker,
    })
}
