//! The runtime: a registry plus the adapters behind each port, shared by every turn.

use std::collections::BTreeMap;
use std::sync::Arc;

use baton_core::Principal;
use baton_core::interruption::{Awaiting, ReplyError};
use baton_core::ports::clock::Clock;
use baton_core::ports::connector::{Connector, TraceContext, TraceLink};
use baton_core::ports::memory::{Embedder, MemoryStore};
use baton_core::ports::metrics::{Metrics, NoMetrics};
use baton_core::ports::model::Model;
use baton_core::ports::store::{Store, StoreError};
use baton_core::privacy::PrivacyGuard;
use baton_core::registry::{Agent, ModelSpec, Registry};

use crate::account_links::{LinkError, LinkKeeper, Linked};
use crate::breaker::Breakers;
use crate::clock::SystemClock;
use crate::compaction::{EpisodeReport, RunReport};
use crate::config::RuntimeConfig;
use crate::request::{RejectionKind, Resume, TurnRejection, TurnRequest, store_rejection};
use crate::seal::Sealer;
use crate::services::Inner;
use crate::stream::TurnStream;

/// Why a runtime could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot build the runtime: {}", .0.join("; "))]
pub struct BuildError(pub Vec<String>);

/// Everything a turn needs; cheap to clone.
#[derive(Clone)]
pub struct Runtime {
    pub(crate) inner: Arc<Inner>,
}

/// Assembles a [`Runtime`].
pub struct RuntimeBuilder {
    registry: Arc<Registry>,
    models: BTreeMap<String, Arc<dyn Model>>,
    model_override: Option<Arc<dyn Model>>,
    store: Option<Arc<dyn Store>>,
    connectors: BTreeMap<String, Arc<dyn Connector>>,
    clock: Arc<dyn Clock>,
    metrics: Arc<dyn Metrics>,
    config: RuntimeConfig,
    trace_context: Option<TraceContext>,
    trace_link: Option<TraceLink>,
    link_key: Option<Arc<Sealer>>,
    memory: Option<crate::services::Recall>,
}

impl RuntimeBuilder {
    /// Keeps long-term memory across conversations (D-43) in `store`, with vectors made by
    /// `embedder`. Without it the runtime remembers nothing beyond an episode.
    pub fn memory(mut self, store: Arc<dyn MemoryStore>, embedder: Arc<dyn Embedder>) -> Self {
        self.memory = Some(crate::services::Recall { store, embedder });
        self
    }

    /// Keeps the principals' account links sealed under `key` (D-37): without one, a tool
    /// whose server acts with the user's own sign-in cannot be served.
    pub fn link_key(mut self, key: Sealer) -> Self {
        self.link_key = Some(Arc::new(key));
        self
    }

    /// Serves every model whose `provider` is `provider` with `model`.
    pub fn provider(mut self, provider: &str, model: Arc<dyn Model>) -> Self {
        self.models.insert(provider.to_owned(), model);
        self
    }

    /// Serves every model, whatever its provider, with `model` (offline and scripted runs).
    pub fn model_override(mut self, model: Arc<dyn Model>) -> Self {
        self.model_override = Some(model);
        self
    }

    /// The journal.
    pub fn store(mut self, store: Arc<dyn Store>) -> Self {
        self.store = Some(store);
        self
    }

    /// Serves tools of connector kind `kind`.
    pub fn connector(mut self, kind: &str, connector: Arc<dyn Connector>) -> Self {
        self.connectors.insert(kind.to_owned(), connector);
        self
    }

    /// Serves tools with each of these connectors, by kind (the set a program loaded its
    /// registry against).
    pub fn connectors(
        mut self,
        connectors: impl IntoIterator<Item = (String, Arc<dyn Connector>)>,
    ) -> Self {
        self.connectors.extend(connectors);
        self
    }

    /// Wall clock (defaults to the system clock).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Metrics sink (defaults to none).
    pub fn metrics(mut self, metrics: Arc<dyn Metrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// How a resumed turn's span links to the waiting turn's (D-33); without it, it does
    /// not.
    pub fn trace_link(mut self, trace_link: TraceLink) -> Self {
        self.trace_link = Some(trace_link);
        self
    }

    /// Where tool calls read the trace context they pass on (D-33); without it they pass
    /// none.
    pub fn trace_context(mut self, trace_context: TraceContext) -> Self {
        self.trace_context = Some(trace_context);
        self
    }

    /// Settings.
    pub fn config(mut self, config: RuntimeConfig) -> Self {
        self.config = config;
        self
    }

    /// Checks that every model a card uses (its own, and an orchestrator's summarizer) and every tool of the registry has an adapter,
    /// then builds. Models that no card uses (a local one in a deployed registry) need none.
    ///
    /// # Errors
    /// Missing store, unknown entry orchestrator, a provider or connector kind with no
    /// adapter.
    pub fn build(self) -> Result<Runtime, BuildError> {
        let mut problems = Vec::new();
        let entry = match self.registry.entry(self.config.orchestrator.as_deref()) {
            Ok(e) => Some(e.clone()),
            Err(e) => {
                problems.push(e);
                None
            }
        };
        // The memory domain's tools are the runtime's own (D-43), served whether or not it
        // keeps memory: without it their calls say so.
        let mut connectors = self.connectors;
        connectors
            .entry(crate::recall::connector::KIND.to_owned())
            .or_insert_with(|| {
                Arc::new(crate::recall::MemoryConnector {
                    recall: self.memory.clone(),
                    clock: self.clock.clone(),
                    settings: self.config.memory.clone(),
                })
            });
        if self.model_override.is_none() {
            // The cards' models and their orchestrators' summarizers.
            let used: BTreeMap<&str, &ModelSpec> = self
                .registry
                .agents()
                .flat_map(|a| {
                    let summarizer = a
                        .orchestration
                        .as_ref()
                        .and_then(|o| o.memory.as_ref())
                        .map(|m| &*m.summarizer);
                    std::iter::once(&*a.model).chain(summarizer)
                })
                .map(|m| (&*m.key, m))
                .collect();
            for m in used.values() {
                if !self.models.contains_key(&*m.provider) {
                    problems.push(format!(
                        "no model adapter for provider {:?} (model {})",
                        m.provider, m.key
                    ));
                }
            }
        }
        for t in self.registry.tools() {
            if !connectors.contains_key(&*t.connector_kind) {
                problems.push(format!(
                    "no connector for kind {:?} (tool {})",
                    t.connector_kind, t.id
                ));
            }
        }
        problems.extend(upstream_problems(&self.registry, &connectors));
        if self.store.is_none() {
            problems.push("no store".to_owned());
        }
        let (Some(entry), Some(store), true) = (entry, self.store, problems.is_empty()) else {
            return Err(BuildError(problems));
        };
        if self.link_key.is_none() {
            for t in self.registry.tools() {
                if connectors
                    .get(&*t.connector_kind)
                    .is_some_and(|c| c.acts_for_user(&t.connector_config))
                {
                    // Served, and its calls answer that it cannot be used: one such tool
                    // must not stop the others.
                    tracing::warn!(tool = %t.id, "the tool acts with the user's own sign-in, and no link key is configured: its calls will fail");
                }
            }
        }
        let links = self.link_key.map(|sealer| {
            Arc::new(LinkKeeper {
                store: store.clone(),
                sealer,
                clock: self.clock.clone(),
            })
        });
        let privacy = Arc::new(PrivacyGuard::new(
            &entry
                .orchestration
                .as_ref()
                .map(|o| o.privacy.clone())
                .unwrap_or_default(),
        ));
        Ok(Runtime {
            inner: Arc::new(Inner {
                registry: self.registry,
                entry,
                models: self.models,
                model_override: self.model_override,
                store,
                connectors,
                clock: self.clock,
                metrics: self.metrics,
                picture_checks: Arc::new(tokio::sync::Semaphore::new(
                    self.config.picture_checks.max(1),
                )),
                config: self.config,
                breakers: Breakers::default(),
                privacy,
                trace_context: self.trace_context,
                trace_link: self.trace_link,
                running: Arc::default(),
                links,
                memory: self.memory,
            }),
        })
    }
}

/// A chat-service tool (its connector kind says so) is served as a conversation by the
/// card whose one tool it is; a card that mixes it with other tools cannot run. The
/// card's `role` is only a label (D-1): it decides nothing here.
fn upstream_problems(
    registry: &Registry,
    connectors: &BTreeMap<String, Arc<dyn Connector>>,
) -> Vec<String> {
    let is_chat = |kind: &str| {
        connectors
            .get(kind)
            .is_some_and(|c| c.upstream_chat().is_some())
    };
    let mut problems = Vec::new();
    for agent in registry.agents() {
        let chats: Vec<&str> = agent
            .tools
            .iter()
            .filter(|t| is_chat(&t.connector_kind))
            .map(|t| &*t.id)
            .collect();
        if !chats.is_empty() && agent.tools.len() != 1 {
            problems.push(format!(
                "agent {} uses the chat service {}: a card served by a chat service has exactly that one tool",
                agent.id,
                chats.join(", ")
            ));
        }
        // Its service is sent the message's words only (D-42): a card that says it takes
        // pictures would be passed them for nothing.
        if !chats.is_empty() && agent.takes_pictures {
            problems.push(format!(
                "agent {} takes pictures, but is served by the chat service {}, which is sent words only",
                agent.id,
                chats.join(", ")
            ));
        }
    }
    problems
}

impl Runtime {
    /// Starts assembling a runtime over a loaded registry.
    pub fn builder(registry: Arc<Registry>) -> RuntimeBuilder {
        RuntimeBuilder {
            registry,
            models: BTreeMap::new(),
            model_override: None,
            store: None,
            connectors: BTreeMap::new(),
            clock: Arc::new(SystemClock),
            metrics: Arc::new(NoMetrics),
            config: RuntimeConfig::default(),
            trace_context: None,
            trace_link: None,
            link_key: None,
            memory: None,
        }
    }

    /// Finishes a sign-in at the callback (D-37): its sealed `state`, and the `code` (or
    /// the `error`) the authorization server sent back. The link is kept for the
    /// principal the state names.
    ///
    /// # Errors
    /// What went wrong, in words for the user; nothing is kept.
    pub async fn finish_link(
        &self,
        state: &str,
        code: Option<&str>,
        error: Option<&str>,
    ) -> Result<Linked, LinkError> {
        let keeper = self.inner.links.as_ref().ok_or(LinkError::NotOffered)?;
        let inner = &self.inner;
        keeper
            .finish(
                |tool_id| {
                    let tool = inner.registry.tool(tool_id)?;
                    let connector = inner.connectors.get(&*tool.connector_kind)?.clone();
                    Some((connector, tool.connector_config.clone()))
                },
                state,
                code,
                error,
            )
            .await
    }

    /// The principal's account links: each server, and when it was linked or renewed.
    ///
    /// # Errors
    /// No links are kept here, or the store failed.
    pub async fn links(&self, principal: &Principal) -> Result<Vec<(String, u64)>, LinkError> {
        let keeper = self.inner.links.as_ref().ok_or(LinkError::NotOffered)?;
        let links = self.inner.store.links(principal).await.map_err(|e| {
            tracing::warn!(error = %e, "account links could not be listed");
            LinkError::Store
        })?;
        // A link that still waits for its sign-in's code is not connected yet.
        Ok(links
            .into_iter()
            .filter(|l| keeper.connected(principal, l))
            .map(|l| (l.server, l.updated_ms))
            .collect())
    }

    /// Removes the principal's link to `server`: later calls ask them to connect again.
    /// Whether there was one.
    ///
    /// # Errors
    /// No links are kept here, or the store failed.
    pub async fn revoke_link(
        &self,
        principal: &Principal,
        server: &str,
    ) -> Result<bool, LinkError> {
        self.inner.links.as_ref().ok_or(LinkError::NotOffered)?;
        let removed = self
            .inner
            .store
            .delete_link(principal, server)
            .await
            .map_err(|e| {
                tracing::warn!(error = %e, "an account link could not be removed");
                LinkError::Store
            })?;
        if removed {
            tracing::info!(principal = %principal.as_str(), %server, "an account link was revoked");
        }
        Ok(removed)
    }

    /// The registry.
    pub fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// The orchestrator turns start at.
    pub fn entry(&self) -> &Arc<Agent> {
        &self.inner.entry
    }

    /// Settings.
    pub fn config(&self) -> &RuntimeConfig {
        &self.inner.config
    }

    /// Starts a turn: the one way in for every face. Checks the message and claims the turn
    /// on its episode, then returns the event stream at once. The turn runs as the stream
    /// is read; dropping the stream early hands the rest of the turn to the runtime, so it
    /// still commits.
    ///
    /// The request says where the turn goes: a new episode, `episode_id`, or the episode
    /// of the client's own `conversation` id ([`Principal::episode_for`], created by its
    /// first turn; an id just made is not looked for first). With `resume`, the turn
    /// answers the wait of the turn it names (D-36): a new turn of the episode whose id
    /// derives from the waiting turn and the interruption, so the same reply sent again is
    /// that turn replayed, never run twice.
    ///
    /// # Errors
    /// A refusal in plain language: bad or oversized message, unknown episode, a
    /// duplicate turn still running, another turn running on the episode, or the store
    /// unavailable. A resume also: `NotFound` for another principal's episode or an
    /// unknown one; `Invalid` when the turn is not waiting, the reply names another
    /// question or does not fit it, or the question has expired; `Mismatch` for another
    /// answer to a question already answered.
    pub async fn run_turn(&self, request: TurnRequest) -> Result<TurnStream, TurnRejection> {
        let mut request = request;
        let conversation = request.conversation.take();
        if let Some(c) = &conversation {
            request.episode_id = Some(request.principal.episode_for(&c.id));
        }
        if request.resume.is_some() {
            return self.resume(request).await;
        }
        let Some(c) = conversation else {
            return crate::engine::start(self.inner.clone(), request, None).await;
        };
        let episode_id = request.principal.episode_for(&c.id);
        let first = TurnRequest {
            episode_id: None,
            ..request.clone()
        };
        if c.new {
            return crate::engine::start(self.inner.clone(), first, Some(episode_id)).await;
        }
        match crate::engine::start(self.inner.clone(), request, None).await {
            // The conversation's first turn creates its episode.
            Err(r) if r.kind == RejectionKind::NotFound => {
                crate::engine::start(self.inner.clone(), first, Some(episode_id)).await
            }
            other => other,
        }
    }

    /// A turn that answers the wait `request.resume` names, on `request.episode_id`.
    async fn resume(&self, request: TurnRequest) -> Result<TurnStream, TurnRejection> {
        let Some(Resume { turn_id, reply }) = request.resume.clone() else {
            return crate::engine::start(self.inner.clone(), request, None).await;
        };
        let principal = request.principal.clone();
        let episode_id = request.episode_id.clone().ok_or_else(|| {
            TurnRejection::new(
                RejectionKind::Invalid,
                "a reply names the conversation whose turn waits",
            )
        })?;
        let meta = self
            .inner
            .store
            .episode(&principal, &episode_id)
            .await
            .map_err(store_rejection)?;
        let now = self.inner.clock.now_ms();
        let resume_id =
            crate::engine::interruption::resume_turn_id(&turn_id, &reply.interruption_id);
        let text = match meta.state.awaiting.as_deref() {
            Some(awaiting) if awaiting.turn_id == turn_id => {
                awaiting
                    .check(&turn_id, &reply, now)
                    .map_err(|e| TurnRejection::new(RejectionKind::Invalid, e.to_string()))?;
                crate::engine::interruption::reply_text(awaiting, &reply.answer)
            }
            // Answered already: the same reply again replays the turn it resumed, and
            // another one is a mismatch (D-25). A question's answer is its words, so
            // they, not the first answer's, are what the request asks.
            _ => {
                let first = self
                    .answered(&principal, &episode_id, &resume_id)
                    .await?
                    .ok_or_else(|| {
                        TurnRejection::new(
                            RejectionKind::Invalid,
                            ReplyError::NotWaiting.to_string(),
                        )
                    })?;
                match &reply.answer {
                    baton_core::interruption::Answer::Text(words) => words.clone(),
                    _ => first,
                }
            }
        };
        let request = TurnRequest {
            episode_id: Some(episode_id),
            turn_id: Some(resume_id),
            text,
            ..request
        };
        crate::engine::start(self.inner.clone(), request, None).await
    }

    /// What `principal`'s episode `episode_id` waits on (D-36), if anything.
    ///
    /// # Errors
    /// `NotFound` for another principal's episode or an unknown one; `Unavailable` when
    /// the store is.
    pub async fn awaiting(
        &self,
        principal: &Principal,
        episode_id: &str,
    ) -> Result<Option<Box<Awaiting>>, TurnRejection> {
        let meta = self
            .inner
            .store
            .episode(principal, episode_id)
            .await
            .map_err(store_rejection)?;
        Ok(meta.state.awaiting)
    }

    /// The user text of the committed turn `resume_id` (a reply already answered) among the
    /// episode's latest turns, if it is there.
    async fn answered(
        &self,
        principal: &Principal,
        episode_id: &str,
        resume_id: &str,
    ) -> Result<Option<String>, TurnRejection> {
        /// How far back a reply sent again is looked for: a retry comes soon after.
        const RECENT_TURNS: usize = 20;
        let turns = self
            .inner
            .store
            .turns(principal, episode_id, RECENT_TURNS)
            .await
            .map_err(store_rejection)?;
        Ok(turns
            .into_iter()
            .find(|t| t.turn_id == resume_id)
            .map(|t| t.user_text))
    }

    /// Asks `principal`'s turn `turn_id` of `episode_id`, running in this process, to stop:
    /// it ends with the outcome `canceled`, and what ran before is committed as usual.
    /// Whether such a turn was running (another principal's never is).
    pub fn cancel_turn(&self, principal: &Principal, episode_id: &str, turn_id: &str) -> bool {
        self.inner.running.cancel(principal, episode_id, turn_id)
    }

    /// The events of `principal`'s turn `turn_id` of `episode_id`, running in this process,
    /// from now until it ends (for a client that lost its stream); `None` when no such turn
    /// runs here. A watcher that falls 256 events behind is cut off.
    pub fn watch(
        &self,
        principal: &Principal,
        episode_id: &str,
        turn_id: &str,
    ) -> Option<tokio::sync::broadcast::Receiver<baton_core::events::WireEvent>> {
        self.inner.running.watch(principal, episode_id, turn_id)
    }

    /// Whether `principal`'s turn `turn_id` of `episode_id` is running in this process.
    pub fn is_running(&self, principal: &Principal, episode_id: &str, turn_id: &str) -> bool {
        self.inner
            .running
            .is_running(principal, episode_id, turn_id)
    }

    /// What this runtime remembers of its users across conversations, as they control it
    /// (D-43): list, search, save, forget, their setting.
    pub fn memory(&self) -> crate::recall::MemoryControl {
        crate::recall::MemoryControl {
            inner: self.inner.clone(),
        }
    }

    /// Waits, at most `limit`, for the turns of this process to end their tasks: what a
    /// turn does after its stream ended (extracting memories, compacting its episode) is
    /// then done. A one-shot program calls it before it exits.
    pub async fn idle(&self, limit: std::time::Duration) {
        let _ = tokio::time::timeout(limit, async {
            while self.inner.running.count() > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        })
        .await;
    }

    /// Waits for the work connectors still do in the background for turns that ended (a
    /// remote agent's task being cancelled): a program calls it before it exits.
    pub async fn settle(&self) {
        futures::future::join_all(self.inner.connectors.values().map(|c| c.settle())).await;
    }

    /// Whether turns can run now (the store answers); for readiness checks.
    ///
    /// # Errors
    /// The store is unavailable or damaged, in plain words.
    pub async fn ready(&self) -> Result<(), TurnRejection> {
        self.inner.store.ready().await.map_err(store_rejection)
    }

    /// Compacts one of `principal`'s episodes now (`baton compact --episode`), whether or
    /// not it is due.
    ///
    /// # Errors
    /// `NotFound` for an unknown episode or another principal's; the store unavailable.
    pub async fn compact_episode(
        &self,
        principal: &Principal,
        episode_id: &str,
    ) -> Result<EpisodeReport, StoreError> {
        crate::compaction::episode(&self.inner, principal, episode_id, None).await
    }

    /// Compacts due episodes, longest due first: at most `max_episodes`, and none started
    /// after `deadline` (the rest stay due for the next run).
    ///
    /// # Errors
    /// The store unavailable; the report of what was done before is lost with it, but
    /// every summary already written stays.
    pub async fn compact_due(
        &self,
        max_episodes: usize,
        deadline: Option<tokio::time::Instant>,
    ) -> Result<RunReport, StoreError> {
        crate::compaction::due(&self.inner, max_episodes, deadline).await
    }
}
