//! Compaction (design.md §4): folds an episode's older turns into its summary with the
//! summarizer model, writes it under the episode's version, and clears the due mark.
//!
//! The same code runs in the scheduled compaction function, in `baton compact`, and after a
//! turn on a local server. It never loses a turn: a turn committed between the read and the
//! write makes the write a conflict, and the episode is read again (once) or left, still
//! due, for the next run. A summarizer that fails, times out or answers garbage leaves the
//! episode as it was.

use std::sync::Arc;
use std::time::Duration;

use baton_core::Principal;
use baton_core::cost::cost_usd;
use baton_core::memory::{
    EpisodeSummary, MemoryPolicy, SummaryInput, agent_inputs, finish_summary, orchestrator_input,
};
use baton_core::ports::metrics::{
    COMPACTED_TURNS_TOTAL, COMPACTION_COST_USD, COMPACTION_TOKENS_TOTAL, COMPACTIONS_TOTAL,
};
use baton_core::ports::model::TokenUsage;
use baton_core::ports::store::StoreError;
use serde::Serialize;

use crate::model_text::{Failed, collect};
use crate::services::Inner;

/// Times one episode is read again after a turn committed under a compaction.
const ATTEMPTS: usize = 2;

/// How one episode's compaction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A new summary was written.
    Compacted,
    /// Nothing to fold (every unsummarised turn is kept intact); the mark was cleared.
    Nothing,
    /// Turns kept committing while it worked: left as it was, still due, for the next run.
    Conflict,
    /// The summarizer failed or answered nothing usable: left as it was, still due.
    Failed,
}

impl Outcome {
    /// The recorded name (as serialized), a metric dimension.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Compacted => "compacted",
            Outcome::Nothing => "nothing",
            Outcome::Conflict => "conflict",
            Outcome::Failed => "failed",
        }
    }
}

/// One episode's compaction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EpisodeReport {
    /// Episode id.
    pub episode_id: String,
    /// How it ended.
    pub outcome: Outcome,
    /// Turns folded into the summary.
    pub turns_folded: u64,
    /// The last turn the summary now covers (0: none).
    pub upto_seq: u64,
    /// The summarizer's tokens.
    pub tokens: TokenUsage,
    /// The summarizer's cost, USD.
    pub cost_usd: f64,
}

/// A run over many episodes.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RunReport {
    /// Each episode handled, in order.
    pub episodes: Vec<EpisodeReport>,
    /// Due episodes left for the next run because time ran out.
    pub left_for_next_run: usize,
}

impl RunReport {
    /// Episodes that ended with `outcome`.
    pub fn count(&self, outcome: Outcome) -> usize {
        self.episodes
            .iter()
            .filter(|e| e.outcome == outcome)
            .count()
    }

    /// The summarizer's tokens over the run.
    pub fn tokens(&self) -> TokenUsage {
        let mut all = TokenUsage::default();
        for e in &self.episodes {
            all.add(&e.tokens);
        }
        all
    }

    /// The summarizer's cost over the run, USD.
    pub fn cost_usd(&self) -> f64 {
        // From +0: an empty float sum is -0.
        self.episodes.iter().fold(0.0, |sum, e| sum + e.cost_usd)
    }
}

/// Compacts one episode: folds batches until nothing is left to fold or `deadline` passed.
pub(crate) async fn episode(
    inner: &Arc<Inner>,
    principal: &Principal,
    episode_id: &str,
    deadline: Option<tokio::time::Instant>,
) -> Result<EpisodeReport, StoreError> {
    let mut report = EpisodeReport {
        episode_id: episode_id.to_owned(),
        outcome: Outcome::Nothing,
        turns_folded: 0,
        upto_seq: 0,
        tokens: TokenUsage::default(),
        cost_usd: 0.0,
    };
    let Some(policy) = inner
        .entry
        .orchestration
        .as_ref()
        .and_then(|o| o.memory.as_ref())
    else {
        return Ok(report);
    };
    let mut conflicts = 0;
    loop {
        let meta = inner.store.episode(principal, episode_id).await?;
        let previous = meta.summary.clone().unwrap_or_default();
        report.upto_seq = previous.upto_seq;
        let Some((after, upto)) = policy.batch(meta.version, previous.upto_seq) else {
            if report.outcome == Outcome::Nothing {
                // Due but nothing to fold (the policy changed): clear the mark.
                match inner
                    .store
                    .save_summary(principal, episode_id, meta.version, &previous)
                    .await
                {
                    Ok(()) | Err(StoreError::Conflict) => {}
                    Err(e) => return Err(e),
                }
            }
            break;
        };
        if report.outcome == Outcome::Compacted
            && deadline.is_some_and(|at| tokio::time::Instant::now() >= at)
        {
            // The rest of a long backlog waits for the next run.
            break;
        }
        let count = usize::try_from(upto - after).unwrap_or(usize::MAX);
        let turns = inner
            .store
            .turns_after(principal, episode_id, after, count)
            .await?;
        let Some(summary) = summarize(inner, policy, &previous, &turns, upto, &mut report).await
        else {
            // What an earlier batch wrote stays; this batch waits for the next run.
            if report.outcome != Outcome::Compacted {
                report.outcome = Outcome::Failed;
            }
            break;
        };
        match inner
            .store
            .save_summary(principal, episode_id, meta.version, &summary)
            .await
        {
            Ok(()) => {
                report.outcome = Outcome::Compacted;
                report.turns_folded += upto - after;
                report.upto_seq = upto;
            }
            Err(StoreError::Conflict) => {
                conflicts += 1;
                if conflicts >= ATTEMPTS {
                    if report.outcome != Outcome::Compacted {
                        report.outcome = Outcome::Conflict;
                    }
                    break;
                }
            }
            Err(e) => return Err(e),
        }
    }
    record_metrics(inner, &report);
    Ok(report)
}

/// The new summary of `turns` (ending at `upto`) on top of `previous`, or `None` when a
/// summarizer call gave nothing usable. What the calls spent is added to `report`.
async fn summarize(
    inner: &Inner,
    policy: &MemoryPolicy,
    previous: &EpisodeSummary,
    turns: &[baton_core::turn::TurnRecord],
    upto: u64,
    report: &mut EpisodeReport,
) -> Option<EpisodeSummary> {
    let guard = &inner.privacy;
    let prev_text = (!previous.text.is_empty()).then_some(previous.text.as_str());
    let mut inputs = vec![(None, orchestrator_input(prev_text, turns, guard))];
    inputs.extend(
        agent_inputs(&previous.agents, turns, guard)
            .into_iter()
            .map(|(agent, input)| (Some(agent), input)),
    );
    // Each summary is its own call: they run together.
    let calls = inputs.iter().map(|(_, input)| call(inner, policy, input));
    let answers = futures::future::join_all(calls).await;
    let mut text = None;
    let mut agents = previous.agents.clone();
    let mut usable = true;
    for ((agent, _), answer) in inputs.into_iter().zip(answers) {
        report.tokens.add(&answer.tokens);
        report.cost_usd += answer.cost_usd;
        match (agent, answer.text) {
            (_, None) => usable = false,
            (None, Some(t)) => text = Some(t),
            (Some(agent), Some(t)) => {
                agents.insert(agent, t);
            }
        }
    }
    Some(EpisodeSummary {
        upto_seq: upto,
        text: text.filter(|_| usable)?,
        agents,
    })
}

/// What one summarizer call gave and spent.
struct Answer {
    /// Masked and trimmed, or `None` when unusable.
    text: Option<String>,
    tokens: TokenUsage,
    cost_usd: f64,
}

/// One summarizer call.
async fn call(inner: &Inner, policy: &MemoryPolicy, input: &SummaryInput) -> Answer {
    let spec = &policy.summarizer;
    let mut answer = Answer {
        text: None,
        tokens: TokenUsage::default(),
        cost_usd: 0.0,
    };
    let Some(model) = inner.model_for(spec) else {
        tracing::error!(model = %spec.key, "no adapter for the summarizer");
        return answer;
    };
    let request = input.request(&inner.entry.id, spec, policy.max_summary_chars);
    let timeout = Duration::from_millis(inner.config.summarize_timeout_ms);
    let collected = collect(&**model, &request, timeout, &mut answer.tokens).await;
    answer.cost_usd = cost_usd(&answer.tokens, &spec.prices);
    match collected {
        Ok(text) => {
            answer.text = finish_summary(&text, &inner.privacy, policy.max_summary_chars);
            if answer.text.is_none() {
                tracing::warn!(model = %spec.key, "the summarizer's answer was unusable");
            }
        }
        Err(Failed::Model(e)) => {
            tracing::warn!(model = %spec.key, error = %e, "the summarizer failed")
        }
        Err(Failed::Timeout) => {
            tracing::warn!(model = %spec.key, ?timeout, "the summarizer took too long")
        }
    }
    answer
}

fn record_metrics(inner: &Inner, report: &EpisodeReport) {
    let m = &inner.metrics;
    m.count(
        COMPACTIONS_TOTAL,
        1,
        &[("outcome", report.outcome.as_str())],
    );
    m.count(COMPACTED_TURNS_TOTAL, report.turns_folded, &[]);
    m.count(
        COMPACTION_TOKENS_TOTAL,
        report.tokens.input + report.tokens.cache_read + report.tokens.cache_write,
        &[("kind", "input")],
    );
    m.count(
        COMPACTION_TOKENS_TOTAL,
        report.tokens.output,
        &[("kind", "output")],
    );
    m.measure(COMPACTION_COST_USD, report.cost_usd, &[]);
}

/// Compacts due episodes, longest due first, until none is left, `max_episodes` were
/// handled, or `deadline` passed (the rest stay due for the next run).
pub(crate) async fn due(
    inner: &Arc<Inner>,
    max_episodes: usize,
    deadline: Option<tokio::time::Instant>,
) -> Result<RunReport, StoreError> {
    let mut report = RunReport::default();
    // One page of the queue at a time; an episode that stays due (failed, conflict) is not
    // taken again in the same run.
    let mut seen = std::collections::HashSet::new();
    'run: while report.episodes.len() < max_episodes {
        let page = inner.store.due_episodes(max_episodes + seen.len()).await?;
        let fresh: Vec<_> = page
            .into_iter()
            .filter(|d| !seen.contains(&d.episode_id))
            .collect();
        if fresh.is_empty() {
            break;
        }
        for (i, d) in fresh.iter().enumerate() {
            if report.episodes.len() >= max_episodes {
                break 'run;
            }
            if deadline.is_some_and(|at| tokio::time::Instant::now() >= at) {
                report.left_for_next_run = fresh.len() - i;
                break 'run;
            }
            seen.insert(d.episode_id.clone());
            match episode(inner, &d.owner, &d.episode_id, deadline).await {
                Ok(r) => report.episodes.push(r),
                Err(StoreError::NotFound) => {
                    // Gone since it was listed (or corrupt ownership): nothing to do.
                    tracing::warn!(episode_id = %d.episode_id, "a due episode was not found");
                }
                Err(e) => return Err(e),
            }
        }
    }
    Ok(report)
}
