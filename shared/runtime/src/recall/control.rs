//! A principal's control of their memory (D-43): list, read, search, save, forget, the
//! setting. Every call is theirs only; another principal's memory is "not found".

use baton_core::Principal;
use baton_core::recall::{
    Memory, MemoryFilter, MemoryId, MemoryKind, MemorySource, NewMemory, Origin, Saved, subject_key,
};
use baton_core::turn::TurnRecord;

use std::sync::Arc;

use super::{Extraction, Found, MemoryFailure, extract, save, search};
use crate::services::{Inner, Recall};

/// A runtime's memory as its users control it: [`Runtime::memory`](crate::Runtime)
/// hands one out; cheap to clone.
#[derive(Clone)]
pub struct MemoryControl {
    pub(crate) inner: Arc<Inner>,
}

/// Checks an id from outside; a malformed one is simply not found (it can name nothing).
fn parse_id(id: &str) -> Result<MemoryId, MemoryFailure> {
    MemoryId::parse(id).map_err(|_| MemoryFailure::NotFound)
}

impl MemoryControl {
    fn recall(&self) -> Result<&Recall, MemoryFailure> {
        self.inner.memory.as_ref().ok_or(MemoryFailure::NotKept)
    }

    /// Whether this runtime keeps memory at all.
    pub fn kept(&self) -> bool {
        self.inner.memory.is_some()
    }

    /// Whether memory is on for `principal`, and whether that is their own setting.
    ///
    /// # Errors
    /// [`MemoryFailure`].
    pub async fn setting(&self, principal: &Principal) -> Result<(bool, bool), MemoryFailure> {
        let recall = self.recall()?;
        let own = recall.store.setting(principal).await?;
        Ok((
            own.unwrap_or(self.inner.config.memory.on_by_default),
            own.is_some(),
        ))
    }

    /// Turns memory on or off for `principal` (`None`: as the deployment says).
    ///
    /// # Errors
    /// [`MemoryFailure`].
    pub async fn set_setting(
        &self,
        principal: &Principal,
        enabled: Option<bool>,
    ) -> Result<(), MemoryFailure> {
        Ok(self.recall()?.store.set_setting(principal, enabled).await?)
    }

    /// The principal's memories, newest first: the current ones, or with `history` the
    /// replaced and expired ones too; `kinds` narrows them.
    ///
    /// # Errors
    /// [`MemoryFailure`].
    pub async fn list(
        &self,
        principal: &Principal,
        kinds: &[MemoryKind],
        history: bool,
        limit: usize,
    ) -> Result<Vec<Memory>, MemoryFailure> {
        let filter = MemoryFilter {
            kinds: kinds.to_vec(),
            include_history: history,
            ..MemoryFilter::current(self.inner.clock.now_ms())
        };
        Ok(self.recall()?.store.list(principal, &filter, limit).await?)
    }

    /// One memory of the principal.
    ///
    /// # Errors
    /// `NotFound` for a malformed id, an unknown one or another principal's.
    pub async fn get(&self, principal: &Principal, id: &str) -> Result<Memory, MemoryFailure> {
        let id = parse_id(id)?;
        self.recall()?
            .store
            .memory(principal, &id)
            .await?
            .ok_or(MemoryFailure::NotFound)
    }

    /// Searches the principal's current memories (hybrid: full text and similarity,
    /// fused), best first.
    ///
    /// # Errors
    /// [`MemoryFailure`].
    pub async fn search(
        &self,
        principal: &Principal,
        text: &str,
        kinds: &[MemoryKind],
        limit: usize,
    ) -> Result<Vec<Found>, MemoryFailure> {
        let recall = self.recall()?;
        if text.chars().count() > self.inner.config.max_message_chars {
            return Err(MemoryFailure::Invalid(format!(
                "a search holds at most {} characters",
                self.inner.config.max_message_chars
            )));
        }
        let filter = MemoryFilter {
            kinds: kinds.to_vec(),
            ..MemoryFilter::current(self.inner.clock.now_ms())
        };
        let depth = limit.max(self.inner.config.memory.search_depth);
        let mut found = search(recall, principal, text, &filter, depth).await?;
        found.truncate(limit);
        Ok(found.into_iter().map(Found::from).collect())
    }

    /// Saves what the user asked to be remembered, in their words: checked like every
    /// memory, kept even when it holds personal data (it is masked wherever it is shown
    /// to a model), replacing the current statement of its subject.
    ///
    /// # Errors
    /// `Invalid` for an empty or too long text; [`MemoryFailure`].
    pub async fn remember(
        &self,
        principal: &Principal,
        kind: MemoryKind,
        subject: &str,
        text: &str,
        source: MemorySource,
    ) -> Result<(Memory, Saved), MemoryFailure> {
        let recall = self.recall()?;
        let memory = NewMemory {
            kind,
            subject: subject.to_owned(),
            text: text.to_owned(),
            origin: Origin::Said,
            source,
            ttl_ms: None,
        }
        .build(self.inner.clock.now_ms())?;
        let saved = save(
            recall,
            principal,
            &memory,
            self.inner.config.memory.max_memories,
        )
        .await?;
        Ok((memory, saved))
    }

    /// Forgets one memory and the history it replaced; how many items went.
    ///
    /// # Errors
    /// `NotFound` for a malformed id, an unknown one or another principal's.
    pub async fn forget(&self, principal: &Principal, id: &str) -> Result<u64, MemoryFailure> {
        let id = parse_id(id)?;
        match self.recall()?.store.forget(principal, &id).await? {
            0 => Err(MemoryFailure::NotFound),
            n => Ok(n),
        }
    }

    /// Forgets the current memory of a subject ("forget my address"), with its history;
    /// how many items went.
    ///
    /// # Errors
    /// `NotFound` when no current memory has that subject.
    pub async fn forget_subject(
        &self,
        principal: &Principal,
        subject: &str,
    ) -> Result<u64, MemoryFailure> {
        let recall = self.recall()?;
        let key = subject_key(subject);
        let now = self.inner.clock.now_ms();
        let current = recall
            .store
            .list(principal, &MemoryFilter::current(now), usize::MAX)
            .await?;
        let mut removed = 0;
        for memory in current.iter().filter(|m| m.subject == key) {
            removed += recall.store.forget(principal, &memory.id).await?;
        }
        if removed == 0 {
            return Err(MemoryFailure::NotFound);
        }
        Ok(removed)
    }

    /// Forgets every memory of the principal; how many items went.
    ///
    /// # Errors
    /// [`MemoryFailure`].
    pub async fn forget_all(&self, principal: &Principal) -> Result<u64, MemoryFailure> {
        Ok(self.recall()?.store.forget_all(principal).await?)
    }

    /// Extracts what a committed turn holds worth remembering (the history writer's job
    /// on AWS; a local server does it after each turn).
    ///
    /// # Errors
    /// The memory store could not be read or written.
    pub async fn extract(
        &self,
        principal: &Principal,
        record: &TurnRecord,
    ) -> Result<Extraction, MemoryFailure> {
        self.recall()?;
        Ok(extract(&self.inner, principal, record).await?)
    }
}
