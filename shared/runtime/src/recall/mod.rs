//! Long-term memory across conversations (D-43): the principal's own control of it
//! (list, search, save, forget, the setting), the hybrid search every reader shares, and
//! extraction after a turn commits.
//!
//! Memory is on for a principal when their own setting says so, else when the deployment
//! does ([`MemorySettings::on_by_default`]); off, nothing is read into a prompt and nothing
//! is extracted. A runtime built without a memory store has none.

use std::time::Duration;

use baton_core::Principal;
use baton_core::cost::cost_usd;
use baton_core::ports::model::TokenUsage;
use baton_core::ports::store::StoreError;
use baton_core::privacy::PrivacyReceipt;
use baton_core::recall::embed::Embedding;
use baton_core::recall::fuse::{Fused, reciprocal_rank};
use baton_core::recall::terms::query_terms;
use baton_core::recall::{
    Memory, MemoryError, MemoryFilter, MemoryKind, MemorySource, NewMemory, Origin, Saved, extract,
};
use baton_core::turn::TurnRecord;
use serde::Serialize;

use crate::model_text::{Failed, collect};
use crate::services::{Inner, Recall};

pub(crate) mod connector;
mod control;

pub(crate) use connector::MemoryConnector;
pub use control::MemoryControl;

/// Counter: memory extractions by `outcome` (`skipped`, `saved`, `nothing`, `failed`).
pub const MEMORY_EXTRACTIONS_TOTAL: &str = "memory_extractions_total";
/// Measurement: what one extraction call cost, USD (NFR-7's additional calls).
pub const MEMORY_EXTRACTION_COST_USD: &str = "memory_extraction_cost_usd";
/// Counter: memories a turn's prompt was given.
pub const MEMORIES_RECALLED_TOTAL: &str = "memories_recalled_total";
/// Counter: memory reads or writes that failed (the turn went on without memory).
pub const MEMORY_FAILURES_TOTAL: &str = "memory_failures_total";

/// Why a memory request could not be done, in words for the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MemoryFailure {
    /// This deployment keeps no memory.
    #[error("this assistant keeps no memory across conversations")]
    NotKept,
    /// No such memory of this principal.
    #[error("no such memory")]
    NotFound,
    /// The request is not one that can be done.
    #[error("{0}")]
    Invalid(String),
    /// The store cannot be reached now.
    #[error("memory is unavailable right now; please try again shortly")]
    Unavailable,
}

impl From<StoreError> for MemoryFailure {
    fn from(e: StoreError) -> Self {
        tracing::warn!(error = %e, "memory store");
        MemoryFailure::Unavailable
    }
}

impl From<MemoryError> for MemoryFailure {
    fn from(e: MemoryError) -> Self {
        MemoryFailure::Invalid(e.to_string())
    }
}

/// A search's answer: each memory with why it was found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Found {
    /// The memory.
    pub memory: Memory,
    /// Its fused score (reciprocal rank fusion).
    pub score: f32,
    /// Its rank in the full-text search, if it was found there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_rank: Option<usize>,
    /// Its similarity in the vector search, if it was found there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f32>,
}

impl From<Fused> for Found {
    fn from(f: Fused) -> Self {
        Found {
            memory: f.memory,
            score: f.score,
            text_rank: f.text_rank,
            similarity: f.similarity,
        }
    }
}

/// What one extraction did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Extraction {
    /// The summarizer was asked (the policy found something worth asking about).
    pub asked: bool,
    /// Memories saved new.
    pub saved: usize,
    /// Of those, how many replaced an older statement of their subject.
    pub replaced: usize,
    /// Proposed memories that said what was already known.
    pub unchanged: usize,
    /// Proposed memories left out because they held personal data the privacy guard
    /// masks (a card number, an e-mail address, a phone number).
    pub withheld: usize,
    /// The call's tokens.
    pub tokens: TokenUsage,
    /// The call's cost, USD.
    pub cost_usd: f64,
}

impl Inner {
    /// Whether memory is on for `principal` (their setting, else the deployment's).
    pub(crate) async fn memory_on(&self, principal: &Principal) -> Result<bool, StoreError> {
        let Some(recall) = &self.memory else {
            return Ok(false);
        };
        Ok(recall
            .store
            .setting(principal)
            .await?
            .unwrap_or(self.config.memory.on_by_default))
    }

    /// Whether a turn of `principal` has memories to search: memory is on for them and
    /// they hold a current one. One read of the store.
    pub(crate) async fn memory_to_search(&self, principal: &Principal) -> Result<bool, StoreError> {
        let Some(recall) = &self.memory else {
            return Ok(false);
        };
        let status = recall.store.status(principal, self.clock.now_ms()).await?;
        Ok(status.holds_any && status.setting.unwrap_or(self.config.memory.on_by_default))
    }
}

/// The hybrid search (D-43): full text and vector similarity over the memories `filter`
/// admits, fused by rank. A vector that cannot be made leaves the text search alone.
pub(crate) async fn search(
    recall: &Recall,
    principal: &Principal,
    text: &str,
    filter: &MemoryFilter,
    depth: usize,
) -> Result<Vec<Fused>, StoreError> {
    let terms = query_terms(text);
    let query: Option<Embedding> = match recall.embedder.embed(&[text]).await {
        Ok(mut v) => v.pop(),
        Err(e) => {
            tracing::warn!(error = %e, "memory search without vectors");
            None
        }
    };
    let both = recall
        .store
        .search_both(principal, &terms, query.as_ref(), filter, depth)
        .await?;
    Ok(reciprocal_rank(
        &both.by_text,
        &both.by_vector,
        recall.embedder.min_similarity(),
    ))
}

/// Saves one memory with its vector, under the principal's cap.
pub(crate) async fn save(
    recall: &Recall,
    principal: &Principal,
    memory: &Memory,
    cap: usize,
) -> Result<Saved, StoreError> {
    let text = format!("{} {}", memory.subject, memory.text);
    let embedding = match recall.embedder.embed(&[&text]).await {
        Ok(mut v) => v.pop(),
        Err(e) => {
            // Kept without a vector: the text search still finds it.
            tracing::warn!(error = %e, "memory saved without a vector");
            None
        }
    };
    recall
        .store
        .save(principal, memory, embedding.as_ref(), cap)
        .await
}

/// Extracts what a committed turn says worth remembering, when memory is on for its
/// principal and the policy finds something to ask about (NFR-7: most turns cost no
/// call). What the summarizer proposes is checked like any memory; one holding personal
/// data the privacy guard masks is withheld (only the user's own words in a save keep
/// such a value, D-43).
pub(crate) async fn extract(
    inner: &Inner,
    principal: &Principal,
    record: &TurnRecord,
) -> Result<Extraction, StoreError> {
    let mut report = Extraction::default();
    let Some(recall) = &inner.memory else {
        return Ok(report);
    };
    // The summarizer compaction uses, else the orchestrator's own model.
    let spec = inner
        .entry
        .orchestration
        .as_ref()
        .and_then(|o| o.memory.as_ref())
        .map_or_else(|| inner.entry.model.clone(), |p| p.summarizer.clone());
    if !inner.memory_on(principal).await? {
        return Ok(report);
    }
    let findings: Vec<(&str, &str)> = record
        .segments
        .iter()
        .filter(|s| s.status.answered())
        .map(|s| (s.agent_id.as_str(), s.text.as_str()))
        .collect();
    if !extract::worth_asking(&record.user_text, &findings) {
        inner
            .metrics
            .count(MEMORY_EXTRACTIONS_TOTAL, 1, &[("outcome", "skipped")]);
        return Ok(report);
    }
    report.asked = true;
    let now = inner.clock.now_ms();
    let known: Vec<String> = recall
        .store
        .list(
            principal,
            &MemoryFilter::current(now),
            extract::KNOWN_SUBJECTS,
        )
        .await?
        .into_iter()
        .map(|m| m.subject)
        .collect();
    let spec = &*spec;
    let Some(model) = inner.model_for(spec) else {
        tracing::error!(model = %spec.key, "no adapter for the summarizer");
        return Ok(report);
    };
    let request = extract::request(
        &inner.entry.id,
        spec,
        extract::request_text(&record.user_text, &findings, &known),
    );
    let timeout = Duration::from_millis(inner.config.memory.extract_timeout_ms);
    let called = collect(&**model, &request, timeout, &mut report.tokens).await;
    report.cost_usd = cost_usd(&report.tokens, &spec.prices);
    inner
        .metrics
        .measure(MEMORY_EXTRACTION_COST_USD, report.cost_usd, &[]);
    let text = match called {
        Ok(text) => text,
        Err(failed) => {
            match failed {
                Failed::Model(e) => {
                    tracing::warn!(model = %spec.key, error = %e, "memory extraction failed")
                }
                Failed::Timeout => {
                    tracing::warn!(model = %spec.key, ?timeout, "memory extraction took too long")
                }
            }
            inner
                .metrics
                .count(MEMORY_EXTRACTIONS_TOTAL, 1, &[("outcome", "failed")]);
            return Ok(report);
        }
    };
    let specialists: Vec<&str> = findings.iter().map(|(a, _)| *a).collect();
    for proposed in extract::read_reply(&text) {
        let mut receipt = PrivacyReceipt::default();
        let _ = inner.privacy.mask(&proposed.text, &mut receipt);
        if receipt.total > 0 {
            report.withheld += 1;
            continue;
        }
        // A finding names its specialist when exactly one answered.
        let specialist = (proposed.kind == MemoryKind::Finding && specialists.len() == 1)
            .then(|| specialists[0].to_owned());
        let built = NewMemory {
            kind: proposed.kind,
            subject: proposed.subject,
            text: proposed.text,
            origin: Origin::Extracted,
            source: MemorySource {
                episode_id: Some(record.episode_id.clone()),
                turn_id: Some(record.turn_id.clone()),
                specialist,
            },
            ttl_ms: proposed.expires_in_days.map(|d| u64::from(d) * 86_400_000),
        }
        .build(record.created_ms);
        let Ok(memory) = built else { continue };
        match save(recall, principal, &memory, inner.config.memory.max_memories).await? {
            Saved::New { replaced, .. } => {
                report.saved += 1;
                report.replaced += usize::from(replaced.is_some());
            }
            Saved::Unchanged(_) => report.unchanged += 1,
        }
    }
    let outcome = if report.saved > 0 { "saved" } else { "nothing" };
    inner
        .metrics
        .count(MEMORY_EXTRACTIONS_TOTAL, 1, &[("outcome", outcome)]);
    Ok(report)
}
