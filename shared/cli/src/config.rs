//! Settings: built-in defaults, then `baton.toml`, then `BATON_*` variables, then flags.
//!
//! [`Config`] is the raw form any layer may set; [`Settings`] is the checked form the
//! commands use. Every problem names the key it is about.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use baton_core::Principal;
use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::{Deserialize, Serialize};

/// The file read from the working directory when `--config` is not given.
pub(crate) const DEFAULT_FILE: &str = "baton.toml";

/// Prefix of the environment variables that set keys (`BATON_DATA_DIR` sets `data_dir`).
const ENV_PREFIX: &str = "BATON_";

/// Every key, as a file or the environment may set it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct Config {
    /// Registry folder.
    #[serde(deserialize_with = "text")]
    pub(crate) registry: String,
    /// Where the local store and the chat history live.
    #[serde(deserialize_with = "text")]
    pub(crate) data_dir: String,
    /// `offline`, `scripted:PATH` or `bedrock`.
    #[serde(deserialize_with = "text")]
    pub(crate) model: String,
    /// `embedded` or `dynamodb`.
    #[serde(deserialize_with = "text")]
    pub(crate) store: String,
    /// The journal's DynamoDB table (store `dynamodb`).
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "optional_text"
    )]
    pub(crate) table: Option<String>,
    /// The bodies bucket (store `dynamodb`).
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "optional_text"
    )]
    pub(crate) bucket: Option<String>,
    /// Address `baton serve` listens on.
    #[serde(deserialize_with = "text")]
    pub(crate) addr: String,
    /// `baton serve`: hosts it answers besides the loopback names and its own address,
    /// comma-separated (`*`: any host and any page's origin).
    #[serde(deserialize_with = "text")]
    pub(crate) allowed_hosts: String,
    /// `baton serve`: where clients reach it (behind a proxy), which the A2A card names.
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "optional_text"
    )]
    pub(crate) public_url: Option<String>,
    /// Who local turns run as.
    #[serde(deserialize_with = "text")]
    pub(crate) principal: String,
    /// Orchestrator to start turns at (default: the registry's only top-level one).
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "optional_text"
    )]
    pub(crate) orchestrator: Option<String>,
    /// Longest accepted message, in characters.
    pub(crate) max_message_chars: usize,
    /// Largest accepted HTTP request body without pictures, in bytes.
    pub(crate) max_body_bytes: usize,
    /// Pictures one message may carry (0: none).
    pub(crate) max_pictures: usize,
    /// Bytes of one picture, as sent.
    pub(crate) max_picture_bytes: usize,
    /// Bytes of all of a message's pictures together, as sent.
    pub(crate) max_pictures_bytes: usize,
    /// Pixels of one picture (width × height).
    pub(crate) max_picture_pixels: u64,
    /// Pixels on a picture's longer side.
    pub(crate) max_picture_side: u32,
    /// `describe` or `refuse`: pictures sent to an orchestrator whose model cannot see.
    #[serde(deserialize_with = "text")]
    pub(crate) blind_model_pictures: String,
    /// Recent turns the orchestrator sees.
    pub(crate) history_turns: usize,
    /// Compact a conversation right after the turn that makes it due (no scheduled
    /// compaction runs locally; `baton compact` also does it on demand).
    pub(crate) compact_after_turn: bool,
    /// Memory across conversations for principals who have not set their own (D-43).
    pub(crate) memory: bool,
    /// Current memories one principal keeps at most.
    pub(crate) max_memories: usize,
    /// What makes memory vectors: `hashed` (hashed words, no model), `openai` (an
    /// OpenAI-compatible server: `embedding_url`) or `minilm` (all-MiniLM-L6-v2 in process:
    /// a baton built with the `minilm` feature). Default: `openai` when `embedding_url` is
    /// set, else `hashed`.
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "optional_text"
    )]
    pub(crate) embedding: Option<String>,
    /// The folder of all-MiniLM-L6-v2 for `embedding = "minilm"` (default: where
    /// `./infra/minilm.sh` puts it, `~/.cache/baton/minilm/all-MiniLM-L6-v2`).
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "optional_text"
    )]
    pub(crate) embedding_model_dir: Option<String>,
    /// An OpenAI-compatible server's API root whose `/embeddings` makes memory vectors
    /// (default: none, vectors of hashed words).
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "optional_text"
    )]
    pub(crate) embedding_url: Option<String>,
    /// The embedding model's id on that server.
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "optional_text"
    )]
    pub(crate) embedding_model: Option<String>,
    /// The environment variable holding that server's API key, if it wants one.
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "optional_text"
    )]
    pub(crate) embedding_api_key_env: Option<String>,
    /// The similarity below which that model's nearest neighbour is unrelated.
    pub(crate) embedding_min_similarity: f32,
    /// Deadline of a whole turn, in ms.
    pub(crate) turn_timeout_ms: u64,
    /// How long a started turn holds its conversation, in ms: a turn whose process died
    /// is freed after this on a shared store (DynamoDB). Longer than `turn_timeout_ms`.
    pub(crate) lease_ms: u64,
    /// `baton serve`: time to receive a request head, after opening or after the previous
    /// response (idle keep-alive), in ms.
    pub(crate) header_timeout_ms: u64,
    /// `baton serve`: time to receive a request body, in ms.
    pub(crate) body_timeout_ms: u64,
    /// `baton serve`: time a client may leave a write untaken before it is disconnected, in ms.
    pub(crate) send_timeout_ms: u64,
    /// `baton serve`: connections served at once.
    pub(crate) max_connections: usize,
    /// Output of one turn that may wait for a slow reader, in bytes.
    pub(crate) stream_buffer_bytes: usize,
    /// How long a turn waits for a reader that makes no room before cutting it off, in ms.
    pub(crate) stream_stall_ms: u64,
    /// Log filter (`info`, `baton=debug,warn`, ...).
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "optional_text"
    )]
    pub(crate) log: Option<String>,
    /// The key account links are sealed with: 32 bytes in base64 (default: a key made on
    /// first use in `data_dir/link.key`). Never printed.
    #[serde(skip_serializing, deserialize_with = "optional_text")]
    pub(crate) link_key: Option<String>,
}

/// Every key, for picking `BATON_*` variables: others are left to other programs.
const KEYS: &[&str] = &[
    "registry",
    "link_key",
    "data_dir",
    "model",
    "store",
    "table",
    "bucket",
    "addr",
    "allowed_hosts",
    "public_url",
    "principal",
    "orchestrator",
    "max_message_chars",
    "max_body_bytes",
    "max_pictures",
    "max_picture_bytes",
    "max_pictures_bytes",
    "max_picture_pixels",
    "max_picture_side",
    "blind_model_pictures",
    "history_turns",
    "compact_after_turn",
    "memory",
    "max_memories",
    "embedding",
    "embedding_model_dir",
    "embedding_url",
    "embedding_model",
    "embedding_api_key_env",
    "embedding_min_similarity",
    "turn_timeout_ms",
    "lease_ms",
    "header_timeout_ms",
    "body_timeout_ms",
    "send_timeout_ms",
    "max_connections",
    "stream_buffer_bytes",
    "stream_stall_ms",
    "log",
];

/// A scalar read as text: the environment layer types `BATON_PRINCIPAL=123` as a number,
/// but for a text key it is the text `123`.
#[derive(Deserialize)]
#[serde(untagged)]
enum Scalar {
    Text(String),
    Unsigned(u64),
    Signed(i64),
    Float(f64),
    Bool(bool),
}

impl From<Scalar> for String {
    fn from(s: Scalar) -> String {
        match s {
            Scalar::Text(t) => t,
            Scalar::Unsigned(n) => n.to_string(),
            Scalar::Signed(n) => n.to_string(),
            Scalar::Float(n) => n.to_string(),
            Scalar::Bool(b) => b.to_string(),
        }
    }
}

fn text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Scalar::deserialize(d).map(String::from)
}

fn optional_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Option::<Scalar>::deserialize(d).map(|s| s.map(String::from))
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Default for Config {
    fn default() -> Self {
        let runtime = baton_runtime::RuntimeConfig::default();
        let server = baton_http::ServerLimits::default();
        Config {
            registry: "shared/registry".to_owned(),
            data_dir: ".baton".to_owned(),
            model: "offline".to_owned(),
            store: "embedded".to_owned(),
            table: None,
            bucket: None,
            addr: "127.0.0.1:8787".to_owned(),
            allowed_hosts: String::new(),
            public_url: None,
            principal: "local-user".to_owned(),
            orchestrator: None,
            max_message_chars: runtime.max_message_chars,
            max_body_bytes: baton_http::DEFAULT_MAX_BODY_BYTES,
            max_pictures: runtime.pictures.max_pictures,
            max_picture_bytes: runtime.pictures.max_bytes,
            max_pictures_bytes: runtime.pictures.max_total_bytes,
            max_picture_pixels: runtime.pictures.max_pixels,
            max_picture_side: runtime.pictures.max_side,
            blind_model_pictures: "describe".to_owned(),
            history_turns: runtime.history_turns,
            compact_after_turn: true,
            // The local `baton` serves its own user: memory is on unless they say not.
            memory: true,
            max_memories: runtime.memory.max_memories,
            embedding: None,
            embedding_model_dir: None,
            embedding_url: None,
            embedding_model: None,
            embedding_api_key_env: None,
            embedding_min_similarity: 0.3,
            turn_timeout_ms: runtime.turn_timeout_ms,
            lease_ms: runtime.lease_ms,
            header_timeout_ms: millis(server.header_timeout),
            body_timeout_ms: millis(server.body_timeout),
            send_timeout_ms: millis(server.send_timeout),
            max_connections: server.max_connections,
            stream_buffer_bytes: runtime.output.buffer_bytes,
            stream_stall_ms: millis(runtime.output.stall),
            log: None,
            link_key: None,
        }
    }
}

/// Values given as flags; each set one wins over every other layer.
#[derive(Debug, Clone, Default)]
pub(crate) struct Overrides {
    pub(crate) config: Option<PathBuf>,
    pub(crate) registry: Option<PathBuf>,
    pub(crate) data_dir: Option<PathBuf>,
    pub(crate) model: Option<String>,
    pub(crate) store: Option<String>,
    pub(crate) table: Option<String>,
    pub(crate) bucket: Option<String>,
    pub(crate) create_table: bool,
    pub(crate) addr: Option<String>,
    pub(crate) principal: Option<String>,
    pub(crate) orchestrator: Option<String>,
    pub(crate) log: Option<String>,
}

/// Which model serves every card.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ModelChoice {
    /// The offline model (deterministic, no network).
    Offline,
    /// A scripted model read from this file.
    Scripted(PathBuf),
    /// Each card's own model: `bedrock` models on Amazon Bedrock (region, credentials and
    /// endpoint from the standard AWS settings), `openai_compatible` ones on their server,
    /// `offline` ones offline.
    Bedrock,
    /// Each card's own model, served by its provider; as `Bedrock`, without requiring
    /// AWS support unless a card's model is on Bedrock.
    Registry,
    /// Every card served by this models.yaml model (an `openai_compatible` one: a local
    /// Ollama or llama.cpp model), whatever model the card names.
    Key(String),
}

/// Where episodes are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StoreChoice {
    /// The embedded store in `data_dir`.
    Embedded,
    /// The DynamoDB journal table and S3 bodies bucket (standard AWS settings; endpoints
    /// may point at DynamoDB Local and an S3-compatible server).
    DynamoDb {
        /// Table name.
        table: String,
        /// Bucket name.
        bucket: String,
    },
}

impl Settings {
    /// The store the settings name, as a message to the user says it ("the local store in
    /// .baton", "the journal table baton-journal").
    pub(crate) fn store_in_words(&self) -> String {
        match &self.store {
            StoreChoice::Embedded => format!("the local store in {}", self.data_dir.display()),
            StoreChoice::DynamoDb { table, .. } => format!("the journal table {table}"),
        }
    }
}

/// Checked settings.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// The account links' key (base64), when configured.
    pub(crate) link_key: Option<String>,
    pub(crate) registry: PathBuf,
    pub(crate) data_dir: PathBuf,
    pub(crate) model: ModelChoice,
    pub(crate) store: StoreChoice,
    /// Create the journal table if it is missing (`--create-table`).
    pub(crate) create_table: bool,
    pub(crate) addr: SocketAddr,
    /// The hosts `baton serve` answers, and whose pages may call it.
    pub(crate) allowed_hosts: baton_http::AllowedHosts,
    pub(crate) public_url: Option<String>,
    pub(crate) principal: Principal,
    pub(crate) orchestrator: Option<String>,
    pub(crate) max_message_chars: usize,
    pub(crate) max_body_bytes: usize,
    /// What a message's pictures may be.
    pub(crate) pictures: baton_core::picture::PictureLimits,
    /// What pictures become for an orchestrator whose model cannot see them.
    pub(crate) blind_pictures: baton_runtime::BlindPictures,
    pub(crate) history_turns: usize,
    pub(crate) compact_after_turn: bool,
    /// Memory across conversations by default, and each principal's cap (D-43).
    pub(crate) memory: baton_runtime::MemorySettings,
    /// What makes memory vectors.
    pub(crate) embedder: EmbedderChoice,
    pub(crate) turn_timeout_ms: u64,
    pub(crate) lease_ms: u64,
    /// Connection limits of `baton serve`.
    pub(crate) server: baton_http::ServerLimits,
    /// How much output waits for a slow reader.
    pub(crate) output: baton_runtime::OutputLimits,
    pub(crate) log: Option<String>,
}

/// Reads every layer and checks the result.
///
/// # Errors
/// A config file that is missing (when named) or invalid, a variable or flag with a bad
/// value, each naming the key.
pub(crate) fn load(overrides: &Overrides) -> anyhow::Result<Settings> {
    let mut config = read_layers(overrides.config.as_deref(), Path::new(DEFAULT_FILE))?;
    apply(&mut config, overrides);
    let mut settings = check(config)?;
    settings.create_table = overrides.create_table;
    // Paths from flags are kept as given (they need not be UTF-8).
    if let Some(v) = &overrides.registry {
        settings.registry.clone_from(v);
    }
    if let Some(v) = &overrides.data_dir {
        settings.data_dir.clone_from(v);
    }
    Ok(settings)
}

fn read_layers(named: Option<&Path>, default_file: &Path) -> anyhow::Result<Config> {
    let mut figment = Figment::from(Serialized::defaults(Config::default()));
    match named {
        Some(path) => {
            if !path.is_file() {
                bail!("the config file {} does not exist", path.display());
            }
            figment = figment.merge(Toml::file_exact(path));
        }
        None if default_file.is_file() => figment = figment.merge(Toml::file_exact(default_file)),
        None => {}
    }
    figment = figment.merge(Env::prefixed(ENV_PREFIX).only(KEYS));
    figment
        .extract()
        .map_err(|e| anyhow::anyhow!("invalid configuration: {e}"))
}

fn apply(config: &mut Config, o: &Overrides) {
    if let Some(v) = &o.model {
        config.model.clone_from(v);
    }
    if let Some(v) = &o.store {
        config.store.clone_from(v);
    }
    if let Some(v) = &o.table {
        config.table = Some(v.clone());
    }
    if let Some(v) = &o.bucket {
        config.bucket = Some(v.clone());
    }
    if let Some(v) = &o.addr {
        config.addr.clone_from(v);
    }
    if let Some(v) = &o.principal {
        config.principal.clone_from(v);
    }
    if let Some(v) = &o.orchestrator {
        config.orchestrator = Some(v.clone());
    }
    if let Some(v) = &o.log {
        config.log = Some(v.clone());
    }
}

/// What makes memory vectors (D-43).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum EmbedderChoice {
    /// Hashed words and trigrams: no model.
    HashedWords,
    /// An OpenAI-compatible server's `/embeddings`.
    OpenAi {
        url: String,
        model: String,
        api_key: Option<String>,
        min_similarity: f32,
    },
    /// all-MiniLM-L6-v2 in this process (the `minilm` feature): its folder, when
    /// configured (else where `./infra/minilm.sh` puts it).
    MiniLm {
        dir: Option<PathBuf>,
        min_similarity: f32,
    },
}

fn embedder_choice(config: &Config) -> anyhow::Result<EmbedderChoice> {
    let url = config.embedding_url.clone().filter(|u| !u.is_empty());
    let min_similarity = config.embedding_min_similarity;
    if !(0.0..=1.0).contains(&min_similarity) {
        anyhow::bail!(
            "invalid configuration: key \"embedding_min_similarity\" = {min_similarity} must be between 0 and 1"
        );
    }
    let kind = config.embedding.as_deref().filter(|k| !k.is_empty());
    let url = match (kind, url) {
        (None, None) | (Some("hashed"), None) => return Ok(EmbedderChoice::HashedWords),
        (Some("minilm"), None) => {
            return Ok(EmbedderChoice::MiniLm {
                dir: config
                    .embedding_model_dir
                    .as_deref()
                    .filter(|d| !d.is_empty())
                    .map(PathBuf::from),
                min_similarity,
            });
        }
        (Some(kind @ ("hashed" | "minilm")), Some(_)) => anyhow::bail!(
            "invalid configuration: key \"embedding\" = {kind:?} makes vectors in baton, and \"embedding_url\" names a server: set one of them"
        ),
        (Some("openai"), None) => anyhow::bail!(
            "invalid configuration: key \"embedding\" = \"openai\" needs \"embedding_url\", the server's API root like http://127.0.0.1:11434/v1"
        ),
        (None | Some("openai"), Some(url)) => url,
        (Some(other), _) => anyhow::bail!(
            "invalid configuration: key \"embedding\" = {other:?} is not one of hashed, openai, minilm"
        ),
    };
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        anyhow::bail!(
            "invalid configuration: key \"embedding_url\" = {url:?} is not an http(s) address like http://127.0.0.1:11434/v1"
        );
    }
    let Some(model) = config.embedding_model.clone().filter(|m| !m.is_empty()) else {
        anyhow::bail!(
            "invalid configuration: key \"embedding_url\" is set, so \"embedding_model\" must name the server's embedding model"
        );
    };
    let api_key = match config
        .embedding_api_key_env
        .as_deref()
        .filter(|v| !v.is_empty())
    {
        None => None,
        Some(var) => Some(std::env::var(var).map_err(|_| {
            anyhow::anyhow!(
                "invalid configuration: key \"embedding_api_key_env\" names {var}, which is not set"
            )
        })?),
    };
    Ok(EmbedderChoice::OpenAi {
        url,
        model,
        api_key,
        min_similarity,
    })
}

fn check(config: Config) -> anyhow::Result<Settings> {
    let model = model_choice(&config.model)?;
    let embedder = embedder_choice(&config)?;
    let store = store_choice(&config.store, config.table, config.bucket)?;
    let addr: SocketAddr = config.addr.parse().with_context(|| {
        format!(
            "invalid configuration: key \"addr\" = {:?} is not an address like 127.0.0.1:8787",
            config.addr
        )
    })?;
    let principal = Principal::new(&config.principal).with_context(|| {
        format!(
            "invalid configuration: key \"principal\" = {:?}",
            config.principal
        )
    })?;
    for (key, value) in [
        ("max_message_chars", config.max_message_chars),
        ("max_body_bytes", config.max_body_bytes),
        ("max_picture_bytes", config.max_picture_bytes),
        ("max_pictures_bytes", config.max_pictures_bytes),
        ("max_connections", config.max_connections),
        ("stream_buffer_bytes", config.stream_buffer_bytes),
    ] {
        if value == 0 {
            bail!("invalid configuration: key {key:?} must be at least 1");
        }
    }
    let Some(blind_pictures) = baton_runtime::BlindPictures::parse(&config.blind_model_pictures)
    else {
        bail!(
            "invalid configuration: key \"blind_model_pictures\" = {:?} must be \"describe\" or \"refuse\"",
            config.blind_model_pictures
        );
    };
    if config.max_memories == 0 {
        anyhow::bail!(
            "invalid configuration: key \"max_memories\" must be at least 1 (set \"memory\" to false to keep none)"
        );
    }
    if config.max_picture_pixels == 0 || config.max_picture_side == 0 {
        bail!(
            "invalid configuration: keys \"max_picture_pixels\" and \"max_picture_side\" must be at least 1 (set \"max_pictures\" to 0 to take no pictures)"
        );
    }
    for (key, value) in [
        ("header_timeout_ms", config.header_timeout_ms),
        ("body_timeout_ms", config.body_timeout_ms),
        ("send_timeout_ms", config.send_timeout_ms),
        ("stream_stall_ms", config.stream_stall_ms),
        ("turn_timeout_ms", config.turn_timeout_ms),
    ] {
        if value == 0 {
            bail!("invalid configuration: key {key:?} must be at least 1 (milliseconds)");
        }
    }
    // A lease that ended while its turn still ran would let a second turn in beside it.
    if config.lease_ms <= config.turn_timeout_ms {
        bail!(
            "invalid configuration: key \"lease_ms\" ({}) must be longer than \"turn_timeout_ms\" ({})",
            config.lease_ms,
            config.turn_timeout_ms
        );
    }
    let public_url = match config.public_url.filter(|u| !u.is_empty()) {
        None => None,
        Some(url) => match url.parse::<axum::http::Uri>() {
            Ok(parsed)
                if matches!(parsed.scheme_str(), Some("http" | "https"))
                    && parsed.host().is_some_and(|h| !h.is_empty()) =>
            {
                Some(url)
            }
            _ => bail!(
                "invalid configuration: key \"public_url\" = {url:?} is not an http(s) address like https://assistant.example.com"
            ),
        },
    };
    let link_key = match config.link_key.filter(|k| !k.is_empty()) {
        None => None,
        // The value is never repeated in a message.
        Some(key) => Some(
            baton_runtime::Sealer::from_base64(&key)
                .map(|_| key)
                .map_err(|e| anyhow::anyhow!("invalid configuration: key \"link_key\": {e}"))?,
        ),
    };
    Ok(Settings {
        link_key,
        registry: PathBuf::from(config.registry),
        data_dir: PathBuf::from(config.data_dir),
        model,
        store,
        create_table: false,
        allowed_hosts: allowed_hosts(&config.allowed_hosts, addr),
        public_url,
        addr,
        principal,
        orchestrator: config.orchestrator.filter(|o| !o.is_empty()),
        max_message_chars: config.max_message_chars,
        max_body_bytes: config.max_body_bytes,
        pictures: baton_core::picture::PictureLimits {
            max_pictures: config.max_pictures,
            max_bytes: config.max_picture_bytes,
            max_total_bytes: config.max_pictures_bytes,
            max_pixels: config.max_picture_pixels,
            max_side: config.max_picture_side,
        },
        blind_pictures,
        history_turns: config.history_turns,
        compact_after_turn: config.compact_after_turn,
        embedder,
        memory: baton_runtime::MemorySettings {
            on_by_default: config.memory,
            max_memories: config.max_memories,
            ..baton_runtime::MemorySettings::default()
        },
        turn_timeout_ms: config.turn_timeout_ms,
        lease_ms: config.lease_ms,
        server: baton_http::ServerLimits {
            header_timeout: Duration::from_millis(config.header_timeout_ms),
            body_timeout: Duration::from_millis(config.body_timeout_ms),
            send_timeout: Duration::from_millis(config.send_timeout_ms),
            max_connections: config.max_connections,
        },
        output: baton_runtime::OutputLimits {
            buffer_bytes: config.stream_buffer_bytes,
            stall: Duration::from_millis(config.stream_stall_ms),
        },
        log: config.log.filter(|l| !l.is_empty()),
    })
}

/// The hosts `baton serve` answers: the loopback names, the address it listens on unless
/// that is every address (`0.0.0.0`, which names no host a client would send), and the
/// configured ones; `*` among them opens it to any host and origin.
fn allowed_hosts(configured: &str, addr: SocketAddr) -> baton_http::AllowedHosts {
    let mut hosts: Vec<String> = configured
        .split(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .map(str::to_owned)
        .collect();
    if hosts.iter().any(|h| h == "*") {
        return baton_http::AllowedHosts::Any;
    }
    if !(addr.ip().is_unspecified() || addr.ip().is_loopback()) {
        hosts.push(addr.ip().to_string());
    }
    baton_http::AllowedHosts::Loopback(hosts)
}

pub(crate) fn model_choice(value: &str) -> anyhow::Result<ModelChoice> {
    match value.split_once(':') {
        None if value == "offline" => Ok(ModelChoice::Offline),
        None if value == "bedrock" => Ok(ModelChoice::Bedrock),
        None if value == "registry" => Ok(ModelChoice::Registry),
        None if !value.is_empty()
            && value
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')) =>
        {
            Ok(ModelChoice::Key(value.to_owned()))
        }
        Some(("scripted", path)) if !path.is_empty() => {
            Ok(ModelChoice::Scripted(PathBuf::from(path)))
        }
        _ => bail!(
            "invalid configuration: key \"model\" = {value:?}: use \"offline\", \"scripted:PATH\", \"registry\", \"bedrock\" or a models.yaml model key"
        ),
    }
}

fn store_choice(
    value: &str,
    table: Option<String>,
    bucket: Option<String>,
) -> anyhow::Result<StoreChoice> {
    let named = |key: &str, v: Option<String>| {
        v.filter(|v| !v.is_empty()).with_context(|| {
            format!("invalid configuration: store \"dynamodb\" needs key {key:?} (--{key} NAME)")
        })
    };
    match value {
        "embedded" => Ok(StoreChoice::Embedded),
        "dynamodb" => Ok(StoreChoice::DynamoDb {
            table: named("table", table)?,
            bucket: named("bucket", bucket)?,
        }),
        _ => bail!(
            "invalid configuration: key \"store\" = {value:?}: use \"embedded\" or \"dynamodb\""
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_are_offline_or_a_script() {
        assert_eq!(model_choice("offline").unwrap(), ModelChoice::Offline);
        assert_eq!(
            model_choice("scripted:a/b.yaml").unwrap(),
            ModelChoice::Scripted(PathBuf::from("a/b.yaml"))
        );
        assert_eq!(model_choice("bedrock").unwrap(), ModelChoice::Bedrock);
        assert_eq!(model_choice("registry").unwrap(), ModelChoice::Registry);
        assert_eq!(
            model_choice("llama-cpp").unwrap(),
            ModelChoice::Key("llama-cpp".into())
        );
        for bad in ["scripted:", "offline:x", "two words", ""] {
            let err = model_choice(bad).unwrap_err().to_string();
            assert!(err.contains("\"model\""), "{err}");
        }
    }

    #[test]
    fn dynamodb_needs_a_table_and_a_bucket() {
        assert_eq!(
            store_choice("embedded", None, None).unwrap(),
            StoreChoice::Embedded
        );
        assert_eq!(
            store_choice("dynamodb", Some("t".into()), Some("b".into())).unwrap(),
            StoreChoice::DynamoDb {
                table: "t".into(),
                bucket: "b".into()
            }
        );
        let err = store_choice("dynamodb", None, Some("b".into()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("\"table\""), "{err}");
        let err = store_choice("sqlite", None, None).unwrap_err().to_string();
        assert!(err.contains("\"store\""), "{err}");
    }

    #[test]
    fn defaults_need_nothing() {
        let settings = check(Config::default()).unwrap();
        assert_eq!(settings.model, ModelChoice::Offline);
        assert_eq!(settings.addr.to_string(), "127.0.0.1:8787");
        assert_eq!(settings.principal.as_str(), "local-user");
        assert_eq!(settings.max_body_bytes, 64 * 1024);
    }

    #[test]
    fn an_embedding_server_needs_an_address_and_a_model() {
        let with = |url: Option<&str>, model: Option<&str>, floor: f32| {
            check(Config {
                embedding_url: url.map(str::to_owned),
                embedding_model: model.map(str::to_owned),
                embedding_min_similarity: floor,
                ..Config::default()
            })
        };
        assert_eq!(
            with(None, None, 0.3).unwrap().embedder,
            EmbedderChoice::HashedWords
        );
        assert_eq!(
            with(Some("http://127.0.0.1:11434/v1"), Some("all-minilm"), 0.4)
                .unwrap()
                .embedder,
            EmbedderChoice::OpenAi {
                url: "http://127.0.0.1:11434/v1".into(),
                model: "all-minilm".into(),
                api_key: None,
                min_similarity: 0.4,
            }
        );
        for (url, model, floor, key) in [
            ("127.0.0.1:11434", Some("m"), 0.3, "\"embedding_url\""),
            ("http://x/v1", None, 0.3, "\"embedding_model\""),
            (
                "http://x/v1",
                Some("m"),
                1.5,
                "\"embedding_min_similarity\"",
            ),
        ] {
            let err = with(Some(url), model, floor).unwrap_err().to_string();
            assert!(err.contains(key), "{url}: {err}");
        }
        let err = check(Config {
            embedding_url: Some("http://x/v1".into()),
            embedding_model: Some("m".into()),
            embedding_api_key_env: Some("BATON_TEST_NO_SUCH_KEY_VARIABLE".into()),
            ..Config::default()
        })
        .unwrap_err()
        .to_string();
        assert!(err.contains("BATON_TEST_NO_SUCH_KEY_VARIABLE"), "{err}");
    }

    #[test]
    fn the_embedding_key_picks_the_embedder() {
        let with = |kind: Option<&str>, url: Option<&str>, dir: Option<&str>| {
            check(Config {
                embedding: kind.map(str::to_owned),
                embedding_url: url.map(str::to_owned),
                embedding_model: Some("all-minilm".into()),
                embedding_model_dir: dir.map(str::to_owned),
                ..Config::default()
            })
        };
        assert_eq!(
            with(Some("hashed"), None, None).unwrap().embedder,
            EmbedderChoice::HashedWords
        );
        assert_eq!(
            with(Some("minilm"), None, None).unwrap().embedder,
            EmbedderChoice::MiniLm {
                dir: None,
                min_similarity: 0.3
            }
        );
        assert_eq!(
            with(Some("minilm"), None, Some("/models/minilm"))
                .unwrap()
                .embedder,
            EmbedderChoice::MiniLm {
                dir: Some(PathBuf::from("/models/minilm")),
                min_similarity: 0.3
            }
        );
        assert!(matches!(
            with(Some("openai"), Some("http://x/v1"), None)
                .unwrap()
                .embedder,
            EmbedderChoice::OpenAi { .. }
        ));
        for (kind, url, key) in [
            ("minilm", Some("http://x/v1"), "\"embedding_url\""),
            ("hashed", Some("http://x/v1"), "\"embedding_url\""),
            ("openai", None, "\"embedding_url\""),
            ("bert", None, "hashed, openai, minilm"),
        ] {
            let err = with(Some(kind), url, None).unwrap_err().to_string();
            assert!(
                err.contains("\"embedding\"") && err.contains(key),
                "{kind}: {err}"
            );
        }
    }

    #[test]
    fn the_embedding_keys_are_read_from_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("baton.toml");
        std::fs::write(
            &file,
            "embedding = \"minilm\"\nembedding_model_dir = \"/models/minilm\"\n",
        )
        .unwrap();
        let config = read_layers(Some(&file), Path::new("/nonexistent")).unwrap();
        assert_eq!(
            check(config).unwrap().embedder,
            EmbedderChoice::MiniLm {
                dir: Some(PathBuf::from("/models/minilm")),
                min_similarity: 0.3
            }
        );
    }

    #[test]
    fn a_public_url_is_an_http_address() {
        let with = |url: &str| {
            check(Config {
                public_url: Some(url.to_owned()),
                ..Config::default()
            })
        };
        assert_eq!(
            with("https://assistant.example.com")
                .unwrap()
                .public_url
                .as_deref(),
            Some("https://assistant.example.com")
        );
        for bad in ["assistant.example.com", "ftp://x", "https://"] {
            let err = with(bad).unwrap_err().to_string();
            assert!(err.contains("\"public_url\""), "{bad}: {err}");
        }
    }

    #[test]
    fn a_lease_must_outlast_the_turn_it_holds() {
        let settings = check(Config::default()).unwrap();
        assert!(settings.lease_ms > settings.turn_timeout_ms);
        let config = Config {
            turn_timeout_ms: 5_000,
            lease_ms: 5_000,
            ..Config::default()
        };
        let err = check(config).unwrap_err().to_string();
        assert!(
            err.contains("\"lease_ms\"") && err.contains("turn_timeout_ms"),
            "{err}"
        );
    }

    #[test]
    fn picture_limits_and_blind_models_are_read_and_checked() {
        let settings = check(Config {
            max_pictures: 2,
            blind_model_pictures: "Refuse".into(),
            ..Config::default()
        })
        .unwrap();
        assert_eq!(settings.pictures.max_pictures, 2);
        assert_eq!(
            settings.blind_pictures,
            baton_runtime::BlindPictures::Refuse
        );
        let err = check(Config {
            blind_model_pictures: "drop".into(),
            ..Config::default()
        })
        .unwrap_err()
        .to_string();
        assert!(err.contains("\"blind_model_pictures\" = \"drop\""), "{err}");
        let err = check(Config {
            max_picture_side: 0,
            ..Config::default()
        })
        .unwrap_err()
        .to_string();
        assert!(err.contains("max_picture_side"), "{err}");
    }

    #[test]
    fn flags_win_over_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("baton.toml");
        std::fs::write(&file, "principal = \"from-file\"\nhistory_turns = 3\n").unwrap();
        let mut config = read_layers(Some(&file), Path::new("/nonexistent")).unwrap();
        assert_eq!(config.principal, "from-file");
        assert_eq!(config.history_turns, 3);
        apply(
            &mut config,
            &Overrides {
                principal: Some("from-flag".into()),
                ..Overrides::default()
            },
        );
        assert_eq!(check(config).unwrap().principal.as_str(), "from-flag");
    }

    #[test]
    fn an_unknown_key_in_the_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("baton.toml");
        std::fs::write(&file, "registy = \"x\"\n").unwrap();
        let err = read_layers(Some(&file), Path::new("/nonexistent"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("registy"), "{err}");
    }

    #[test]
    fn a_named_file_that_is_missing_is_an_error() {
        let err = read_layers(Some(Path::new("/no/such/baton.toml")), Path::new("/x"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("/no/such/baton.toml"), "{err}");
    }

    #[test]
    fn a_bad_address_is_named() {
        let err = check(Config {
            addr: "localhost".into(),
            ..Config::default()
        })
        .unwrap_err()
        .to_string();
        assert!(err.contains("\"addr\""), "{err}");
    }
}
