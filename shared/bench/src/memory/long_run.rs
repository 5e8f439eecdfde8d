//! One long conversation on one episode, through the real engine, with the shipped
//! registry, the offline model and the in-memory journal; with or without compaction.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use baton_core::Principal;
use baton_core::cost::cost_usd;
use baton_core::events::Event;
use baton_core::memory::MemoryPolicy;
use baton_core::ports::connector::Connector;
use baton_core::ports::metrics::{
    COMPACTED_TURNS_TOTAL, COMPACTION_COST_USD, COMPACTION_TOKENS_TOTAL, COMPACTIONS_TOTAL,
    TURN_COST_USD,
};
use baton_core::ports::model::{CallPurpose, TokenUsage};
use baton_core::prompt::estimate_tokens;
use baton_core::registry::{ModelSpec, Registry, RegistrySources};
use baton_core::trace::GuardName;
use baton_inproc::HeapStore;
use baton_local::offline::OfflineModel;
use baton_runtime::registry_folder::{load_sources, read_sources};
use baton_runtime::{Runtime, RuntimeConfig, TurnRequest};
use futures::StreamExt;
use serde::Serialize;

use super::conversation::{PROBE_EMAIL, message};
use super::recorder::{BenchMetrics, CallRecord, PacedClock, RecordingModel};
use baton_core::ports::store::{SummaryStore as _, TurnStore as _};

/// Turns that make an episode due, and turns kept, when compaction is off: never reached.
const NEVER: u64 = 1_000_000_000;

/// The user's pace: a message a minute. Faster, a long conversation runs into the
/// orchestrator card's per-episode rate window (`turn_limits.episode_max_calls` calls in
/// `episode_window_s`: 50 in 300 s as shipped) and its turns are refused their model calls.
pub(crate) const TURN_PACE_MS: u64 = 60_000;

/// Which run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Compaction {
    /// History covers the whole conversation and the orchestrator card's memory is never
    /// due.
    Off,
    /// The shipped defaults, compacting right after a turn that leaves the episode due
    /// (`compact_after_turn`, as `baton chat` and `baton serve` do).
    AfterTurn,
}

/// The registry sources, with the orchestrator card's memory made never due when
/// compaction is off.
pub(crate) fn sources(root: &Path, compaction: Compaction) -> anyhow::Result<RegistrySources> {
    let mut sources = read_sources(root).map_err(|e| anyhow::anyhow!("{e}"))?;
    if compaction == Compaction::Off {
        let mut edited = 0;
        for file in &mut sources.agents {
            if let Some(text) = never_due(&file.text)
                .with_context(|| format!("editing {} of {}", file.path, root.display()))?
            {
                file.text = text;
                edited += 1;
            }
        }
        if edited == 0 {
            bail!("no orchestrator card in {}", root.display());
        }
    }
    Ok(sources)
}

/// An orchestrator card's text with `memory` never due, or `None` for another card.
fn never_due(card: &str) -> anyhow::Result<Option<String>> {
    use serde_norway::{Mapping, Value};
    let mut value: Value = serde_norway::from_str(card)?;
    let Some(map) = value.as_mapping_mut() else {
        bail!("the card is not a mapping");
    };
    if map.get("role").and_then(Value::as_str) != Some("orchestrator") {
        return Ok(None);
    }
    let memory = map
        .entry(Value::from("memory"))
        .or_insert_with(|| Value::Mapping(Mapping::new()));
    let Some(memory) = memory.as_mapping_mut() else {
        bail!("`memory` is not a mapping");
    };
    memory.insert(Value::from("compact_after_turns"), Value::from(NEVER));
    memory.insert(Value::from("keep_last"), Value::from(NEVER - 1));
    memory.insert(Value::from("compact_at_fraction"), Value::from(1.0));
    Ok(Some(serde_norway::to_string(&value)?))
}

/// The connectors that serve a registry's tools, by kind.
pub(crate) type Connectors = BTreeMap<String, Arc<dyn Connector>>;

/// The shipped registry (edited for `compaction`), validated with its connectors.
pub(crate) fn registry(
    root: &Path,
    compaction: Compaction,
) -> anyhow::Result<(Arc<Registry>, Connectors)> {
    let connectors = baton_connectors::default_connectors(root);
    let registry = load_sources(
        &sources(root, compaction)?,
        &connectors,
        &Default::default(),
    )
    .map_err(|e| anyhow::anyhow!("the registry {} is not valid: {e}", root.display()))?;
    Ok((Arc::new(registry), connectors))
}

/// The entry orchestrator's memory policy.
pub(crate) fn policy(registry: &Registry) -> anyhow::Result<MemoryPolicy> {
    registry
        .entry(None)
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .orchestration
        .as_ref()
        .and_then(|o| o.memory.clone())
        .context("the orchestrator has no memory policy")
}

/// One turn's figures.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct TurnFigures {
    pub(crate) turn: usize,
    /// Specialists consulted, in dispatch order.
    pub(crate) consulted: Vec<String>,
    pub(crate) outcome: String,
    /// The orchestrator's routing call (the one carrying the conversation): estimated
    /// prompt tokens; `None` when the turn made none.
    pub(crate) orchestrator_route: Option<u64>,
    /// Of that prompt: the messages (history and the new message).
    pub(crate) orchestrator_route_messages: Option<u64>,
    /// Of that prompt: the system blocks after the cache point (the summary's place).
    pub(crate) orchestrator_route_dynamic: Option<u64>,
    /// The largest prompt of any orchestrator call of the turn (routing, composition).
    pub(crate) orchestrator_max: u64,
    /// Each consulted specialist's first call of the turn: estimated prompt tokens (later
    /// calls of its tool loop add this turn's tool results).
    pub(crate) specialists: BTreeMap<String, u64>,
    /// Model calls of the turn itself (not compaction).
    pub(crate) calls: usize,
    /// Tokens those calls reported (input + output + cache).
    pub(crate) tokens: u64,
    /// Summarizer calls run after the turn.
    pub(crate) summarize_calls: usize,
    /// Their tokens.
    pub(crate) summarize_tokens: TokenUsage,
    /// Wall time from the request to the stream's end (compaction included).
    pub(crate) wall_ms: f64,
    /// The agents whose prompts in this turn contained the probe e-mail address.
    pub(crate) probe_seen_by: Vec<String>,
}

/// What a run measured.
#[derive(Debug)]
pub(crate) struct RunFigures {
    pub(crate) compaction: Compaction,
    pub(crate) history_turns: usize,
    pub(crate) policy: MemoryPolicy,
    pub(crate) summarizer: Arc<ModelSpec>,
    pub(crate) turns: Vec<TurnFigures>,
    /// Every summarizer call's prompt and usage.
    pub(crate) summarize: Vec<CallRecord>,
    /// Summarizer inputs that contained the probe.
    pub(crate) summarize_saw_probe: usize,
    /// The engine's own reports: compactions by outcome, turns folded, summarizer tokens
    /// by kind, its cost, and the turns' cost.
    pub(crate) engine: EngineReport,
    /// The episode's summaries at the end: the orchestrator's and each specialist's, in
    /// estimated tokens.
    pub(crate) final_summary: Option<(u64, BTreeMap<String, u64>)>,
    /// Whether a stored summary contains the probe.
    pub(crate) summary_has_probe: bool,
    /// Turns whose routing record says older history was left out of the prompt.
    pub(crate) history_trimmed_turns: usize,
    /// Turns after whose stream the episode was still due (the turn's own compaction had
    /// not run or not finished).
    pub(crate) due_after_stream: usize,
    pub(crate) wall: Duration,
}

/// The engine's compaction metrics over a run.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct EngineReport {
    pub(crate) compacted: u64,
    pub(crate) nothing: u64,
    pub(crate) conflict: u64,
    pub(crate) failed: u64,
    pub(crate) turns_folded: u64,
    pub(crate) summarizer_input_tokens: u64,
    pub(crate) summarizer_output_tokens: u64,
    pub(crate) compaction_cost_usd: f64,
    pub(crate) turns_cost_usd: f64,
}

impl EngineReport {
    fn from(m: &BenchMetrics) -> Self {
        let outcome = |o: &str| m.counter(&format!("{COMPACTIONS_TOTAL},outcome={o}"));
        EngineReport {
            compacted: outcome("compacted"),
            nothing: outcome("nothing"),
            conflict: outcome("conflict"),
            failed: outcome("failed"),
            turns_folded: m.counter(COMPACTED_TURNS_TOTAL),
            summarizer_input_tokens: m.counter(&format!("{COMPACTION_TOKENS_TOTAL},kind=input")),
            summarizer_output_tokens: m.counter(&format!("{COMPACTION_TOKENS_TOTAL},kind=output")),
            compaction_cost_usd: m.sum(COMPACTION_COST_USD),
            turns_cost_usd: m.sum(TURN_COST_USD),
        }
    }
}

pub(crate) fn total(u: &TokenUsage) -> u64 {
    u.input + u.output + u.cache_read + u.cache_write
}

/// Runs `turns` turns of the conversation on one episode.
pub(crate) async fn run(
    root: &Path,
    compaction: Compaction,
    turns: usize,
) -> anyhow::Result<RunFigures> {
    let (registry, connectors) = registry(root, compaction)?;
    let policy = policy(&registry)?;
    let entry = registry
        .entry(None)
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .id
        .to_string();
    let recorder = RecordingModel::new(Arc::new(OfflineModel::new(registry.clone())), PROBE_EMAIL);
    let metrics = Arc::new(BenchMetrics::default());
    let store = Arc::new(HeapStore::new());
    let defaults = RuntimeConfig::default();
    let config = match compaction {
        Compaction::Off => RuntimeConfig {
            history_turns: turns.max(defaults.history_turns),
            compact_after_turn: false,
            ..defaults
        },
        Compaction::AfterTurn => RuntimeConfig {
            compact_after_turn: true,
            ..defaults
        },
    };
    let history_turns = config.history_turns;
    let clock = Arc::new(PacedClock::starting_now());
    let runtime = Runtime::builder(registry.clone())
        .model_override(Arc::new(recorder.clone()))
        .store(store.clone())
        .clock(clock.clone())
        .metrics(metrics.clone())
        .connectors(connectors)
        .config(config)
        .build()?;
    let principal = Principal::new("bench-user").map_err(|e| anyhow::anyhow!("{e}"))?;

    let started = Instant::now();
    let mut episode: Option<String> = None;
    let mut figures = Vec::with_capacity(turns);
    let mut summarize = Vec::new();
    let mut due_after_stream = 0;
    for turn in 1..=turns {
        clock.advance(TURN_PACE_MS);
        let text = message(turn, 0);
        let request = TurnRequest {
            episode_id: episode.clone(),
            ..TurnRequest::new(principal.clone(), text)
        };
        let t0 = Instant::now();
        let mut stream = runtime
            .run_turn(request)
            .await
            .map_err(|e| anyhow::anyhow!("turn {turn} ({text:?}) was refused: {e}"))?;
        let episode_id = stream.episode_id.clone();
        let mut consulted = Vec::new();
        let mut outcome = None;
        // The stream ends when the turn's task does: after the compaction it runs once
        // the turn has made the episode due.
        while let Some(wire) = stream.next().await {
            match wire.event {
                Event::AgentsConsulted { agents, .. } => {
                    consulted = agents.into_iter().map(|a| a.agent_id).collect();
                }
                Event::Completed { outcome: o, .. } => outcome = Some(o.as_str().to_owned()),
                _ => {}
            }
        }
        let wall_ms = t0.elapsed().as_secs_f64() * 1000.0;
        let Some(outcome) = outcome else {
            bail!("turn {turn} ({text:?}) did not complete");
        };
        if compaction == Compaction::AfterTurn {
            let due = store.due_episodes(16).await?;
            if due.iter().any(|d| d.episode_id == episode_id) {
                due_after_stream += 1;
            }
        }
        episode = Some(episode_id);
        let calls = recorder.take();
        let (summaries, own): (Vec<_>, Vec<_>) = calls
            .into_iter()
            .partition(|c| c.purpose == CallPurpose::Summarize);
        let route = own
            .iter()
            .find(|c| c.agent == entry && c.purpose == CallPurpose::Route);
        let mut specialists = BTreeMap::new();
        for c in own.iter().filter(|c| c.purpose == CallPurpose::Agent) {
            specialists
                .entry(c.agent.clone())
                .or_insert_with(|| c.prompt_tokens());
        }
        let mut summarize_tokens = TokenUsage::default();
        for s in &summaries {
            summarize_tokens.add(&s.usage());
        }
        figures.push(TurnFigures {
            turn,
            consulted,
            outcome,
            orchestrator_route: route.map(CallRecord::prompt_tokens),
            orchestrator_route_messages: route.map(|c| c.messages),
            orchestrator_route_dynamic: route.map(|c| c.system_dynamic),
            orchestrator_max: own
                .iter()
                .filter(|c| c.agent == entry)
                .map(CallRecord::prompt_tokens)
                .max()
                .unwrap_or(0),
            specialists,
            calls: own.len(),
            tokens: own.iter().map(|c| total(&c.usage())).sum(),
            summarize_calls: summaries.len(),
            summarize_tokens,
            wall_ms,
            probe_seen_by: {
                let mut seen: Vec<String> = own
                    .iter()
                    .filter(|c| c.saw_probe)
                    .map(|c| c.agent.clone())
                    .collect();
                seen.dedup();
                seen.sort();
                seen.dedup();
                seen
            },
        });
        summarize.extend(summaries);
    }
    let wall = started.elapsed();

    let Some(episode_id) = episode else {
        bail!("no turn ran");
    };
    let meta = store.episode(&principal, &episode_id).await?;
    let final_summary = meta.summary.as_ref().map(|s| {
        (
            estimate_tokens(&s.text),
            s.agents
                .iter()
                .map(|(k, v)| (k.clone(), estimate_tokens(v)))
                .collect(),
        )
    });
    let summary_has_probe = meta.summary.as_ref().is_some_and(|s| {
        s.text.contains(PROBE_EMAIL) || s.agents.values().any(|t| t.contains(PROBE_EMAIL))
    });
    let records = store.turns(&principal, &episode_id, usize::MAX).await?;
    let history_trimmed_turns = records
        .iter()
        .filter(|r| {
            r.routing
                .guards
                .iter()
                .any(|g| g.guard == GuardName::HistoryTrim)
        })
        .count();
    let summarize_saw_probe = summarize.iter().filter(|c| c.saw_probe).count();
    Ok(RunFigures {
        compaction,
        history_turns,
        summarizer: policy.summarizer.clone(),
        policy,
        turns: figures,
        summarize,
        summarize_saw_probe,
        engine: EngineReport::from(&metrics),
        final_summary,
        summary_has_probe,
        history_trimmed_turns,
        due_after_stream,
        wall,
    })
}

impl RunFigures {
    /// The summarizer's tokens over the run, from the recorded calls.
    pub(crate) fn summarize_usage(&self) -> TokenUsage {
        let mut all = TokenUsage::default();
        for c in &self.summarize {
            all.add(&c.usage());
        }
        all
    }

    /// The summarizer's cost over the run at its model's prices (as the engine prices it).
    pub(crate) fn summarize_cost(&self) -> f64 {
        cost_usd(&self.summarize_usage(), &self.summarizer.prices)
    }

    /// Tokens of the turns' own calls over the run.
    pub(crate) fn turn_tokens(&self) -> u64 {
        self.turns.iter().map(|t| t.tokens).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_orchestrator_card_is_made_never_due() {
        let card = "id: o\nrole: orchestrator\nmemory:\n  compact_after_turns: 8\n  keep_last: 4\n";
        let edited = never_due(card).unwrap().unwrap();
        assert!(edited.contains(&format!("compact_after_turns: {NEVER}")));
        assert!(edited.contains(&format!("keep_last: {}", NEVER - 1)));
        assert!(never_due("id: s\nrole: native\n").unwrap().is_none());
        let without = never_due("id: o\nrole: orchestrator\n").unwrap().unwrap();
        assert!(without.contains("compact_at_fraction: 1"));
    }

    /// The shipped registry of the checkout the test runs in (read at run time: a test
    /// binary built in another checkout may be reused through a shared target directory).
    fn shipped() -> std::path::PathBuf {
        std::env::var_os("CARGO_MANIFEST_DIR")
            .map_or_else(|| Path::new(".").to_path_buf(), std::path::PathBuf::from)
            .join("../registry")
    }

    #[test]
    fn the_shipped_registry_loads_both_ways() {
        let root = shipped();
        let (off, _) = registry(&root, Compaction::Off).unwrap();
        let p = policy(&off).unwrap();
        assert_eq!(u64::from(p.compact_after_turns), NEVER);
        assert!(!p.is_due(300, 1_000, 200_000));
        let (on, _) = registry(&root, Compaction::AfterTurn).unwrap();
        let p = policy(&on).unwrap();
        assert!(p.is_due(8, 1_000, 200_000));
    }

    #[tokio::test]
    async fn a_short_run_compacts_and_records_every_turn() {
        let root = shipped();
        let run = run(&root, Compaction::AfterTurn, 10).await.unwrap();
        assert_eq!(run.turns.len(), 10);
        assert!(run.turns.iter().all(|t| t.orchestrator_route.is_some()));
        assert!(
            run.turns.iter().all(|t| t.outcome == "answered"),
            "{:?}",
            run.turns
        );
        assert!(run.engine.compacted >= 1, "{:?}", run.engine);
        assert_eq!(run.due_after_stream, 0);
        assert!(!run.summarize.is_empty());
        let off = super::run(&root, Compaction::Off, 10).await.unwrap();
        assert!(off.summarize.is_empty());
        assert_eq!(off.engine.compacted, 0);
    }
}
