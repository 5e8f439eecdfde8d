//! Assembling the runtime from settings: the registry (with the same checks as
//! `baton validate`), the model, the local store, the connectors and metrics.
//!
//! Bedrock and the DynamoDB journal are compiled in only with the `aws` feature
//! (`cargo build --release -p baton-cli --features aws`); without it, asking for either is
//! a plain error that says how to build them in.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
#[cfg(feature = "aws")]
use baton_aws::bedrock::BedrockModel;
#[cfg(feature = "aws")]
use baton_aws::journal::{DynamoStore, JournalConfig};
use baton_core::ports::connector::Connector;
use baton_core::ports::memory::{Embedder, HashedWordsEmbedder, MemoryStore};
use baton_core::ports::metrics::{Metrics, Tee};
use baton_core::ports::model::Model;
use baton_core::ports::store::Store;
use baton_core::registry::Registry;
use baton_inproc::scripted::ScriptedModel;
use baton_inproc::{HeapMemory, HeapStore};
use baton_local::embedded_store::{DATABASE_FILE, EmbeddedStore};
use baton_local::offline::OfflineModel;
use baton_openai::OpenAiCompatible;
use baton_runtime::metrics::LocalMetrics;
use baton_runtime::{Runtime, RuntimeConfig, Sealer};

use crate::config::{EmbedderChoice, ModelChoice, Settings, StoreChoice};

/// A loaded registry and the connectors that serve its tools.
pub(crate) struct Loaded {
    pub(crate) registry: Arc<Registry>,
    pub(crate) connectors: BTreeMap<String, Arc<dyn Connector>>,
}

/// A runtime ready for turns, its store and its counters.
pub(crate) struct Assembled {
    pub(crate) runtime: Runtime,
    pub(crate) store: Arc<dyn Store>,
    pub(crate) metrics: Arc<LocalMetrics>,
}

/// What a runtime is assembled for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Purpose {
    /// Conversations, on the configured store.
    Turns,
    /// An eval run: a store in memory (cases never touch the journal), no compaction, and
    /// with `routing_only` turns that stop after the orchestrator's decision.
    Eval { routing_only: bool },
}

/// Reads and checks the registry at `root`: every reference, schema and connector setting.
///
/// Every model is served through an override (offline or scripted), so any provider name
/// is accepted here; connector kinds must be ones this program ships.
///
/// # Errors
/// Every problem found, each naming file, field and value.
pub(crate) async fn load(root: &Path) -> anyhow::Result<Loaded> {
    if !root.is_dir() {
        anyhow::bail!(
            "there is no registry folder at {}: run baton from the repository root, or give one \
             with --registry DIR (or BATON_REGISTRY, or `registry` in baton.toml)",
            root.display()
        );
    }
    let connectors = baton_connectors::default_connectors(root);
    let registry =
        baton_runtime::registry_folder::load_registry(root, &connectors, &Default::default())
            .await
            .with_context(|| format!("the registry {} is not valid", root.display()))?;
    // Only the kinds the registry's tools use are served.
    let connectors = baton_connectors::used_by(connectors, &registry);
    Ok(Loaded {
        registry: Arc::new(registry),
        connectors,
    })
}

/// Prints the registry's non-fatal findings to stderr.
pub(crate) fn print_warnings(registry: &Registry) {
    for warning in registry.warnings() {
        eprintln!("warning: {warning}");
    }
}

/// Builds the runtime the settings describe.
///
/// # Errors
/// An invalid registry, an unreadable script, a store that cannot be opened (locked,
/// damaged, not writable), or a registry the runtime cannot serve.
pub(crate) async fn assemble(settings: &Settings) -> anyhow::Result<Assembled> {
    assemble_for(settings, Purpose::Turns).await
}

/// Builds the runtime the settings describe, for `purpose`.
///
/// # Errors
/// As [`assemble`].
pub(crate) async fn assemble_for(
    settings: &Settings,
    purpose: Purpose,
) -> anyhow::Result<Assembled> {
    let Loaded {
        registry,
        connectors,
    } = load(&settings.registry).await?;
    print_warnings(&registry);

    // The AWS settings (region, credentials, endpoints) are loaded once, when a part first
    // needs them.
    #[cfg(feature = "aws")]
    let aws = tokio::sync::OnceCell::new();
    #[cfg(feature = "aws")]
    let aws = || aws.get_or_init(baton_aws::sdk::Clients::from_env);

    let metrics = Arc::new(LocalMetrics::default());
    // Beside the local registry, metrics go over OTLP when the OTEL_* variables say so.
    let sink: Arc<dyn Metrics> = match baton_otel::metrics() {
        Some(otlp) => Arc::new(Tee(metrics.clone(), Arc::new(otlp))),
        None => metrics.clone(),
    };
    let mut builder = Runtime::builder(registry.clone())
        .metrics(sink)
        .config(RuntimeConfig {
            max_message_chars: settings.max_message_chars,
            pictures: settings.pictures,
            blind_pictures: settings.blind_pictures,
            history_turns: settings.history_turns,
            turn_timeout_ms: settings.turn_timeout_ms,
            lease_ms: settings.lease_ms,
            orchestrator: settings.orchestrator.clone(),
            output: settings.output,
            // No scheduled compaction runs on a laptop: a turn that leaves its episode due
            // compacts it once its answer has been sent (unless turned off).
            compact_after_turn: settings.compact_after_turn && purpose == Purpose::Turns,
            // Extraction runs after the turn here; nothing else would run it (D-43).
            memory: baton_runtime::MemorySettings {
                extract_after_turn: purpose == Purpose::Turns,
                // Eval cases that say what was said earlier need memory on (D-43); each
                // case is a user of its own.
                on_by_default: settings.memory.on_by_default
                    || matches!(purpose, Purpose::Eval { .. }),
                ..settings.memory.clone()
            },
            routing_only: purpose == Purpose::Eval { routing_only: true },
            capture_content: baton_otel::captures_content(),
            ..RuntimeConfig::default()
        });
    builder = match &settings.model {
        ModelChoice::Offline => {
            builder.model_override(Arc::new(OfflineModel::new(registry.clone())))
        }
        ModelChoice::Scripted(path) => builder
            .model_override(Arc::new(ScriptedModel::from_file(path).with_context(
                || format!("loading the scripted model {}", path.display()),
            )?)),
        ModelChoice::Key(key) => builder.model_override(serving_every_card(&registry, key)?),
        #[cfg_attr(feature = "aws", allow(unused_variables))]
        choice @ (ModelChoice::Registry | ModelChoice::Bedrock) => {
            #[cfg(not(feature = "aws"))]
            {
                if *choice == ModelChoice::Bedrock {
                    return Err(without_aws("model \"bedrock\""));
                }
                if let Some(a) = registry.agents().find(|a| &*a.model.provider == "bedrock") {
                    return Err(without_aws(&format!(
                        "agent {}'s model {} (provider bedrock)",
                        a.id, a.model.key
                    )));
                }
            }
            let openai = OpenAiCompatible::new(registry.models())
                .context("setting up the openai_compatible models of models.yaml")?;
            let builder = builder
                .provider(baton_openai::PROVIDER, Arc::new(openai))
                .provider("offline", Arc::new(OfflineModel::new(registry.clone())));
            #[cfg(feature = "aws")]
            let builder = {
                let bedrock = BedrockModel::new(aws().await.bedrock.clone(), registry.models());
                builder.provider("bedrock", Arc::new(bedrock))
            };
            builder
        }
    };
    // Memory across conversations lives beside the journal: in the local store's file
    // (none yet on DynamoDB).
    let (store, memory): (Arc<dyn Store>, Option<Arc<dyn MemoryStore>>) = match &settings.store {
        _ if matches!(purpose, Purpose::Eval { .. }) => (
            Arc::new(HeapStore::new()),
            Some(Arc::new(HeapMemory::new())),
        ),
        StoreChoice::Embedded => {
            let embedded =
                Arc::new(EmbeddedStore::open(&settings.data_dir).with_context(|| {
                    format!(
                        "opening the local store {}",
                        settings.data_dir.join(DATABASE_FILE).display()
                    )
                })?);
            (embedded.clone(), Some(embedded))
        }
        #[cfg(not(feature = "aws"))]
        StoreChoice::DynamoDb { .. } => return Err(without_aws("store \"dynamodb\"")),
        #[cfg(feature = "aws")]
        StoreChoice::DynamoDb { table, bucket } => {
            let aws = aws().await;
            check_table(&aws.dynamodb, table, settings.create_table).await?;
            let journal = Arc::new(DynamoStore::new(
                aws.dynamodb.clone(),
                aws.s3.clone(),
                JournalConfig::new(table.clone(), bucket.clone()),
            ));
            (journal, None)
        }
    };
    builder = builder.store(store.clone());
    if let Some(memory) = memory {
        let embedder: Arc<dyn Embedder> = match &settings.embedder {
            EmbedderChoice::HashedWords => Arc::new(HashedWordsEmbedder::default()),
            EmbedderChoice::OpenAi {
                url,
                model,
                api_key,
                min_similarity,
            } => Arc::new(
                baton_openai::OpenAiEmbedder::new(url, model, api_key.clone(), *min_similarity)
                    .context("setting up the embedding model")?,
            ),
            EmbedderChoice::MiniLm {
                dir,
                min_similarity,
            } => minilm(dir.clone(), *min_similarity).await?,
        };
        builder = builder.memory(memory, embedder);
    }
    builder = match purpose {
        // A partial-failure case makes a specialist's services unavailable for its turn.
        Purpose::Eval { .. } => builder.connectors(baton_evals::with_outages(connectors)),
        _ => builder.connectors(connectors),
    };
    if !matches!(purpose, Purpose::Eval { .. }) {
        builder = builder.link_key(link_key(settings)?);
    }
    if baton_otel::exporting() {
        // Tool calls pass the trace on (D-33).
        builder = builder
            .trace_context(baton_otel::traceparent)
            .trace_link(baton_otel::link_to);
    }
    let runtime = builder.build()?;
    Ok(Assembled {
        runtime,
        store,
        metrics,
    })
}

/// The key account links are sealed with (D-37): the configured one, else the one kept in
/// `data_dir/link.key`, made on first use (readable by its owner only). Machines that share
/// a store must share the key: configure it.
///
/// # Errors
/// The key file cannot be read or written, or holds no key.
fn link_key(settings: &Settings) -> anyhow::Result<Sealer> {
    if let Some(key) = &settings.link_key {
        return Ok(Sealer::from_base64(key)?);
    }
    let path = settings.data_dir.join(LINK_KEY_FILE);
    let shown = path.display();
    std::fs::create_dir_all(&settings.data_dir)
        .with_context(|| format!("creating {}", settings.data_dir.display()))?;
    let key = Sealer::new_key()?;
    let made = {
        use std::io::Write as _;
        use std::os::unix::fs::OpenOptionsExt as _;
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .and_then(|mut file| {
                file.write_all(key.as_bytes())
                    .and_then(|()| file.sync_all())
            })
    };
    match made {
        Ok(()) => Ok(Sealer::from_base64(&key)?),
        // Made before (or by another process just now): that one is the key.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let text =
                std::fs::read_to_string(&path).with_context(|| format!("reading {shown}"))?;
            Sealer::from_base64(&text).with_context(|| format!("the link key in {shown}"))
        }
        Err(e) => Err(e).with_context(|| format!("writing {shown}")),
    }
}

/// The file in `data_dir` that holds the link key when none is configured.
pub(crate) const LINK_KEY_FILE: &str = "link.key";

/// The model that serves every card for `--model KEY`.
///
/// # Errors
/// No such model in models.yaml, or one that is not served over HTTP.
pub(crate) fn serving_every_card(
    registry: &Arc<Registry>,
    key: &str,
) -> anyhow::Result<Arc<dyn Model>> {
    let Some(spec) = registry.model(key) else {
        let keys: Vec<&str> = registry
            .models()
            .filter(|m| &*m.provider == baton_openai::PROVIDER)
            .map(|m| &*m.key)
            .collect();
        anyhow::bail!(
            "invalid configuration: key \"model\" = {key:?}: models.yaml has no model {key:?}; \
             use \"offline\", \"scripted:PATH\", \"registry\", \"bedrock\" or one of its \
             openai_compatible models ({})",
            if keys.is_empty() {
                "none".to_owned()
            } else {
                keys.join(", ")
            }
        );
    };
    match &*spec.provider {
        "offline" => Ok(Arc::new(OfflineModel::new(registry.clone()))),
        baton_openai::PROVIDER => Ok(Arc::new(
            OpenAiCompatible::serving_every_card(spec)
                .with_context(|| format!("setting up model {key}"))?,
        )),
        other => anyhow::bail!(
            "invalid configuration: key \"model\" = {key:?}: that model is served by \
             {other}; --model KEY serves every card with an openai_compatible model (for each \
             card's own model, use --model registry or bedrock)"
        ),
    }
}

/// all-MiniLM-L6-v2 from `dir`, else from where `./infra/minilm.sh` puts it; its 87 MiB
/// of weights are read on a blocking thread.
#[cfg(feature = "minilm")]
async fn minilm(dir: Option<PathBuf>, min_similarity: f32) -> anyhow::Result<Arc<dyn Embedder>> {
    let dir = match dir {
        Some(dir) => dir,
        None => baton_minilm::default_dir().context(
            "embedding \"minilm\": HOME is not set, so set \"embedding_model_dir\" to the model's folder",
        )?,
    };
    let model = tokio::task::spawn_blocking(move || baton_minilm::MiniLm::load(&dir))
        .await
        .context("loading the embedding model")?
        .context("loading the embedding model")?;
    Ok(Arc::new(model.with_min_similarity(min_similarity)))
}

/// Without the `minilm` feature: refused, saying how to build it in.
#[cfg(not(feature = "minilm"))]
async fn minilm(_dir: Option<PathBuf>, _min_similarity: f32) -> anyhow::Result<Arc<dyn Embedder>> {
    Err(without_minilm())
}

/// The plain error for `embedding = "minilm"` in a `baton` built without it.
#[cfg(any(test, not(feature = "minilm")))]
fn without_minilm() -> anyhow::Error {
    anyhow::anyhow!(
        "embedding \"minilm\" runs all-MiniLM-L6-v2 in baton, and this baton was built \
         without it: build it with the `minilm` feature, e.g. `cargo build --release -p \
         baton-cli --features minilm` (the model itself: ./infra/minilm.sh)"
    )
}

/// The plain error for a setting that needs AWS support in a `baton` built without it.
#[cfg(any(test, not(feature = "aws")))]
fn without_aws(setting: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "{setting} needs AWS support, and this baton was built without it: build it with \
         the `aws` feature, e.g. `cargo build --release -p baton-cli --features aws` (or \
         `cargo run --release -p baton-cli --features aws -- ...`)"
    )
}

/// Checks that the journal table exists before any turn runs, so that a wrong name is
/// reported as such instead of as storage being unavailable; with `create`, creates it
/// when missing (local emulators; on AWS the template owns it).
#[cfg(feature = "aws")]
async fn check_table(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
    create: bool,
) -> anyhow::Result<()> {
    let region = client
        .config()
        .region()
        .map_or_else(|| "the configured region".to_owned(), ToString::to_string);
    let error = match client.describe_table().table_name(table).send().await {
        Ok(_) => return Ok(()),
        Err(e) => e,
    };
    if error
        .as_service_error()
        .is_some_and(|e| e.is_resource_not_found_exception())
    {
        if !create {
            anyhow::bail!(
                "the journal table {table} does not exist in {region}: check --table (or \
                 `table` in baton.toml) and the AWS region, or pass --create-table to create \
                 it (meant for DynamoDB Local; on AWS the SAM template creates it)"
            );
        }
        baton_aws::journal::create_table(client, table)
            .await
            .map_err(|e| {
                tracing::debug!(table, error = %e, "creating the journal table failed");
                anyhow::anyhow!(
                    "the journal table {table} could not be created in {region} (run with --log \
                     debug for details)"
                )
            })?;
        tracing::info!(table, "created the journal table");
        return Ok(());
    }
    let detail = aws_sdk_dynamodb::error::DisplayErrorContext(&error);
    if error.raw_response().is_none() {
        // No answer at all: wrong endpoint, no network, no credentials.
        tracing::debug!(table, error = %detail, "DynamoDB could not be reached");
        anyhow::bail!(
            "DynamoDB could not be reached in {region} to read the journal table {table}: \
             check the AWS endpoint, region and credentials (run with --log debug for details)"
        );
    }
    if create {
        tracing::debug!(table, error = %detail, "reading the journal table failed");
        anyhow::bail!(
            "the journal table {table} could not be read in {region}, so it was not created \
             (run with --log debug for details)"
        );
    }
    // Refused (say, no permission to describe tables): the journal's own reads and writes
    // may still be allowed, so let the turn find out.
    tracing::debug!(table, error = %detail, "the journal table could not be described");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_aws_refusal_says_how_to_build_it_in() {
        let message = without_aws("model \"bedrock\"").to_string();
        assert!(
            message.starts_with("model \"bedrock\" needs AWS support"),
            "{message}"
        );
        assert!(
            message.contains("cargo build --release -p baton-cli --features aws"),
            "{message}"
        );
    }

    #[test]
    fn the_minilm_refusal_says_how_to_build_it_in() {
        let message = without_minilm().to_string();
        assert!(message.starts_with("embedding \"minilm\""), "{message}");
        assert!(
            message.contains("cargo build --release -p baton-cli --features minilm"),
            "{message}"
        );
    }

    /// Without the `minilm` feature, `embedding = "minilm"` is refused before a turn runs.
    #[cfg(not(feature = "minilm"))]
    #[tokio::test]
    async fn minilm_is_refused_without_minilm() {
        let data = tempfile::tempdir().unwrap();
        let config = data.path().join("baton.toml");
        std::fs::write(&config, "embedding = \"minilm\"\n").unwrap();
        let settings = crate::config::load(&crate::config::Overrides {
            config: Some(config.clone()),
            registry: Some(baton_testkit::crate_dir().join("../registry")),
            data_dir: Some(data.path().to_owned()),
            ..Default::default()
        })
        .unwrap();
        let Err(err) = assemble(&settings).await else {
            panic!("minilm was assembled without the minilm feature");
        };
        let message = format!("{err:#}");
        assert!(message.contains("--features minilm"), "{message}");
    }

    /// A configured folder that does not hold the model is a plain error naming it.
    #[cfg(feature = "minilm")]
    #[tokio::test]
    async fn a_missing_minilm_folder_is_named() {
        let data = tempfile::tempdir().unwrap();
        let config = data.path().join("baton.toml");
        let missing = data.path().join("no-model-here");
        std::fs::write(
            &config,
            format!(
                "embedding = \"minilm\"\nembedding_model_dir = {:?}\n",
                missing.display().to_string()
            ),
        )
        .unwrap();
        let settings = crate::config::load(&crate::config::Overrides {
            config: Some(config.clone()),
            registry: Some(baton_testkit::crate_dir().join("../registry")),
            data_dir: Some(data.path().to_owned()),
            ..Default::default()
        })
        .unwrap();
        let Err(err) = assemble(&settings).await else {
            panic!("a folder without the model was loaded");
        };
        let message = format!("{err:#}");
        assert!(
            message.contains("no-model-here") && message.contains("./infra/minilm.sh"),
            "{message}"
        );
    }

    /// Without the `aws` feature, Bedrock and DynamoDB are refused before anything is
    /// opened or sent.
    #[cfg(not(feature = "aws"))]
    #[tokio::test]
    async fn bedrock_and_dynamodb_are_refused_without_aws() {
        let data = tempfile::tempdir().unwrap();
        let registry = baton_testkit::crate_dir().join("../registry");
        let config = data.path().join("baton.toml");
        std::fs::write(&config, "").unwrap();
        for (model, store, refused) in [
            ("bedrock", "embedded", "model \"bedrock\""),
            ("offline", "dynamodb", "store \"dynamodb\""),
        ] {
            let settings = crate::config::load(&crate::config::Overrides {
                config: Some(config.clone()),
                registry: Some(registry.clone()),
                data_dir: Some(data.path().to_owned()),
                model: Some(model.into()),
                store: Some(store.into()),
                table: Some("t".into()),
                bucket: Some("b".into()),
                ..Default::default()
            })
            .unwrap();
            let Err(err) = assemble(&settings).await else {
                panic!("{model}/{store} was assembled without AWS support");
            };
            let message = format!("{err:#}");
            assert!(message.starts_with(refused), "{message}");
            assert!(message.contains("--features aws"), "{message}");
        }
        assert!(!data.path().join(DATABASE_FILE).exists());
    }
}
