//! A journal on the heap, with the same contracts as the durable ones.
//!
//! Used by tests and by runs that need no history across restarts. Everything sits behind
//! one `std::sync::Mutex`: every method locks, works on plain maps and unlocks without
//! awaiting, so each call is atomic and no lock is held across an await.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;
use baton_core::Principal;
use baton_core::memory::EpisodeSummary;
use baton_core::ports::store::{
    AccountLink, Claim, ClaimRequest, Commit, DueEpisode, EpisodeMeta, StoreError, StoredPicture,
    check_picture_names,
};
use baton_core::ports::store::{
    CheckpointStore, LinkStore, SummaryStore, TurnStore, UpstreamStore,
};
use baton_core::ports::upstream::UpstreamConversation;
use baton_core::turn::TurnRecord;

/// A [`Store`] that keeps episodes, turns, claims, bodies and pictures in memory.
#[derive(Debug, Default)]
pub struct HeapStore {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    episodes: HashMap<String, Episode>,
    /// Completed turns by idempotency key (principal, turn id) → (episode, index in `turns`).
    completed: HashMap<(Principal, String), (String, usize)>,
    /// Claims by (principal, turn id); at most one live per episode. Dead ones linger, so
    /// that a turn id sent again finds its episode.
    claims: HashMap<(Principal, String), ClaimEntry>,
    /// Account links by principal, then server (sorted, for listing).
    links: HashMap<Principal, std::collections::BTreeMap<String, AccountLink>>,
}

#[derive(Debug)]
struct Episode {
    meta: EpisodeMeta,
    /// Oldest first; `turns[i].seq == i + 1`.
    turns: Vec<TurnRecord>,
    /// Compact JSON text, parsed when read.
    bodies: HashMap<String, String>,
    /// The pictures committed turns sent, by SHA-256 (the bytes are shared, not copied).
    pictures: HashMap<String, StoredPicture>,
    /// When the episode was marked due for compaction, if it is.
    due_since_ms: Option<u64>,
    /// Each specialist's upstream conversation, by agent id.
    upstream: HashMap<String, UpstreamConversation>,
    /// The turn id that claimed the episode last, until it releases or commits. Its lease
    /// may have run out: it holds the claim until another turn takes the episode over.
    holder: Option<String>,
    /// Running turns' checkpoints by turn id: kept across releases and dead leases,
    /// removed when the turn commits.
    checkpoints: HashMap<String, String>,
}

#[derive(Debug)]
struct ClaimEntry {
    episode_id: String,
    expires_ms: u64,
    fingerprint: String,
}

impl ClaimEntry {
    fn live_at(&self, now_ms: u64) -> bool {
        self.expires_ms > now_ms
    }
}

impl HeapStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> Result<MutexGuard<'_, Inner>, StoreError> {
        // A poisoned lock means a panic mid-update: refuse rather than serve half a write.
        self.inner
            .lock()
            .map_err(|_| StoreError::Unavailable("the in-memory store is out of order".into()))
    }
}

impl Inner {
    /// The episode, if it exists and belongs to `principal` (another's is "not found").
    fn owned(&self, principal: &Principal, episode_id: &str) -> Result<&Episode, StoreError> {
        self.episodes
            .get(episode_id)
            .filter(|e| &e.meta.owner == principal)
            .ok_or(StoreError::NotFound)
    }

    fn claim(&mut self, req: ClaimRequest) -> Result<Claim, StoreError> {
        let key = (req.principal.clone(), req.turn_id.clone());
        if let Some((episode_id, index)) = self.completed.get(&key) {
            let record = self
                .episodes
                .get(episode_id)
                .and_then(|e| e.turns.get(*index))
                .ok_or_else(|| StoreError::Corrupt("a completed turn is missing".into()))?;
            if let Some(mismatch) = req.mismatch(&record.episode_id, &record.fingerprint) {
                return Ok(Claim::Mismatch(mismatch));
            }
            return Ok(Claim::Completed(Box::new(record.clone())));
        }
        // An earlier claim of this turn id: running, or dead and restarted where it was.
        let mut target = req.episode_id.clone();
        if let Some(c) = self.claims.get(&key) {
            if let Some(mismatch) = req.mismatch(&c.episode_id, &c.fingerprint) {
                return Ok(Claim::Mismatch(mismatch));
            }
            if c.live_at(req.now_ms) {
                return Ok(Claim::InFlight);
            }
            target = Some(c.episode_id.clone());
        }

        let meta = match &target {
            Some(episode_id) => {
                let meta = self.owned(&req.principal, episode_id)?.meta.clone();
                if self
                    .claims
                    .values()
                    .any(|c| c.episode_id == *episode_id && c.live_at(req.now_ms))
                {
                    return Ok(Claim::Busy);
                }
                meta
            }
            None => {
                if self.episodes.contains_key(&req.new_episode_id) {
                    return Err(StoreError::Conflict);
                }
                let meta = EpisodeMeta {
                    episode_id: req.new_episode_id.clone(),
                    owner: req.principal.clone(),
                    version: 0,
                    created_ms: req.now_ms,
                    updated_ms: req.now_ms,
                    summary: None,
                    state: Default::default(),
                };
                self.episodes.insert(
                    meta.episode_id.clone(),
                    Episode {
                        meta: meta.clone(),
                        turns: Vec::new(),
                        bodies: HashMap::new(),
                        pictures: HashMap::new(),
                        due_since_ms: None,
                        upstream: HashMap::new(),
                        holder: None,
                        checkpoints: HashMap::new(),
                    },
                );
                meta
            }
        };

        if let Some(episode) = self.episodes.get_mut(&meta.episode_id) {
            episode.holder = Some(req.turn_id.clone());
        }
        self.claims.insert(
            key,
            ClaimEntry {
                episode_id: meta.episode_id.clone(),
                expires_ms: req.now_ms.saturating_add(req.lease_ms),
                fingerprint: req.fingerprint,
            },
        );
        Ok(Claim::Claimed(meta))
    }

    fn commit(&mut self, commit: Commit) -> Result<u64, StoreError> {
        let Commit {
            principal,
            expected_version,
            record,
            bodies,
            pictures,
            state,
            compaction_due,
        } = commit;
        let episode_id = record.episode_id.clone();
        let key = (principal.clone(), record.turn_id.clone());

        // Every check happens before the first change, so a refused commit changes nothing.
        let episode = self.owned(&principal, &episode_id)?;
        let in_order = episode.meta.version == expected_version
            && expected_version.checked_add(1) == Some(record.seq);
        let mut keys = HashSet::new();
        let keys_fresh = bodies
            .iter()
            .all(|b| keys.insert(b.key.as_str()) && !episode.bodies.contains_key(&b.key));
        if !in_order || !keys_fresh || self.completed.contains_key(&key) {
            return Err(StoreError::Conflict);
        }
        check_picture_names(&pictures)?;

        let episode = self
            .episodes
            .get_mut(&episode_id)
            .ok_or(StoreError::NotFound)?;
        episode
            .bodies
            .extend(bodies.into_iter().map(|b| (b.key, b.json)));
        for picture in pictures {
            // Named by their content: one already there is this one.
            episode
                .pictures
                .entry(picture.sha256)
                .or_insert(StoredPicture {
                    media_type: picture.media_type,
                    bytes: picture.bytes,
                });
        }
        episode.meta.version = record.seq;
        episode.meta.updated_ms = record.created_ms;
        episode.meta.state = state;
        if compaction_due {
            episode.due_since_ms.get_or_insert(record.created_ms);
        }
        episode.checkpoints.remove(&record.turn_id);
        if episode.holder.as_deref() == Some(record.turn_id.as_str()) {
            episode.holder = None;
        }
        let version = episode.meta.version;
        let index = episode.turns.len();
        episode.turns.push(record);
        self.claims.remove(&key);
        self.completed.insert(key, (episode_id, index));
        Ok(version)
    }
}

#[async_trait]
impl TurnStore for HeapStore {
    async fn claim(&self, request: ClaimRequest) -> Result<Claim, StoreError> {
        self.lock()?.claim(request)
    }

    async fn release(&self, episode_id: &str, turn_id: &str) -> Result<(), StoreError> {
        let mut inner = self.lock()?;
        // The turn id stays bound to its episode, its lease over: sent again, it runs there.
        for ((_, t), c) in inner.claims.iter_mut() {
            if t == turn_id && c.episode_id == episode_id {
                c.expires_ms = 0;
            }
        }
        if let Some(episode) = inner.episodes.get_mut(episode_id)
            && episode.holder.as_deref() == Some(turn_id)
        {
            episode.holder = None;
        }
        Ok(())
    }

    async fn commit(&self, commit: &Commit) -> Result<u64, StoreError> {
        self.lock()?.commit(commit.clone())
    }

    async fn episode(
        &self,
        principal: &Principal,
        episode_id: &str,
    ) -> Result<EpisodeMeta, StoreError> {
        Ok(self.lock()?.owned(principal, episode_id)?.meta.clone())
    }

    async fn turns(
        &self,
        principal: &Principal,
        episode_id: &str,
        limit: usize,
    ) -> Result<Vec<TurnRecord>, StoreError> {
        let inner = self.lock()?;
        let turns = &inner.owned(principal, episode_id)?.turns;
        let skip = turns.len().saturating_sub(limit);
        Ok(turns[skip..].to_vec())
    }

    async fn turns_after(
        &self,
        principal: &Principal,
        episode_id: &str,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<TurnRecord>, StoreError> {
        let inner = self.lock()?;
        let turns = &inner.owned(principal, episode_id)?.turns;
        // `turns[i].seq == i + 1`: the turns after `after_seq` start at index `after_seq`.
        let from = usize::try_from(after_seq)
            .unwrap_or(usize::MAX)
            .min(turns.len());
        Ok(turns[from..].iter().take(limit).cloned().collect())
    }

    async fn body(
        &self,
        principal: &Principal,
        episode_id: &str,
        key: &str,
    ) -> Result<serde_json::Value, StoreError> {
        let inner = self.lock()?;
        inner
            .owned(principal, episode_id)?
            .bodies
            .get(key)
            .ok_or(StoreError::NotFound)
            .and_then(|text| {
                serde_json::from_str(text)
                    .map_err(|e| StoreError::Corrupt(format!("a stored body is not JSON: {e}")))
            })
    }

    async fn picture(
        &self,
        principal: &Principal,
        episode_id: &str,
        sha256: &str,
    ) -> Result<StoredPicture, StoreError> {
        let inner = self.lock()?;
        inner
            .owned(principal, episode_id)?
            .pictures
            .get(sha256)
            .cloned()
            .ok_or(StoreError::NotFound)
    }
}

#[async_trait]
impl CheckpointStore for HeapStore {
    async fn save_checkpoint(
        &self,
        episode_id: &str,
        turn_id: &str,
        checkpoint: &str,
    ) -> Result<(), StoreError> {
        let mut inner = self.lock()?;
        let episode = inner
            .episodes
            .get_mut(episode_id)
            .filter(|e| e.holder.as_deref() == Some(turn_id))
            .ok_or(StoreError::Conflict)?;
        episode
            .checkpoints
            .insert(turn_id.to_owned(), checkpoint.to_owned());
        Ok(())
    }

    async fn checkpoint(
        &self,
        episode_id: &str,
        turn_id: &str,
    ) -> Result<Option<String>, StoreError> {
        let inner = self.lock()?;
        Ok(inner
            .episodes
            .get(episode_id)
            .and_then(|e| e.checkpoints.get(turn_id))
            .cloned())
    }
}

#[async_trait]
impl SummaryStore for HeapStore {
    async fn save_summary(
        &self,
        principal: &Principal,
        episode_id: &str,
        expected_version: u64,
        summary: &EpisodeSummary,
    ) -> Result<(), StoreError> {
        let mut inner = self.lock()?;
        if inner.owned(principal, episode_id)?.meta.version != expected_version {
            return Err(StoreError::Conflict);
        }
        let episode = inner
            .episodes
            .get_mut(episode_id)
            .ok_or(StoreError::NotFound)?;
        episode.meta.summary = Some(summary.clone());
        episode.due_since_ms = None;
        Ok(())
    }

    async fn due_episodes(&self, limit: usize) -> Result<Vec<DueEpisode>, StoreError> {
        let inner = self.lock()?;
        let mut due: Vec<DueEpisode> = inner
            .episodes
            .values()
            .filter_map(|e| {
                Some(DueEpisode {
                    episode_id: e.meta.episode_id.clone(),
                    owner: e.meta.owner.clone(),
                    since_ms: e.due_since_ms?,
                })
            })
            .collect();
        due.sort_by(|a, b| (a.since_ms, &a.episode_id).cmp(&(b.since_ms, &b.episode_id)));
        due.truncate(limit);
        Ok(due)
    }
}

#[async_trait]
impl UpstreamStore for HeapStore {
    async fn upstream_conversation(
        &self,
        principal: &Principal,
        episode_id: &str,
        agent_id: &str,
    ) -> Result<Option<UpstreamConversation>, StoreError> {
        let inner = self.lock()?;
        Ok(inner
            .owned(principal, episode_id)?
            .upstream
            .get(agent_id)
            .cloned())
    }

    async fn save_upstream_conversation(
        &self,
        principal: &Principal,
        episode_id: &str,
        conversation: &UpstreamConversation,
    ) -> Result<(), StoreError> {
        let mut inner = self.lock()?;
        inner.owned(principal, episode_id)?;
        let episode = inner
            .episodes
            .get_mut(episode_id)
            .ok_or(StoreError::NotFound)?;
        episode
            .upstream
            .insert(conversation.agent_id.clone(), conversation.clone());
        Ok(())
    }
}

#[async_trait]
impl LinkStore for HeapStore {
    async fn link(
        &self,
        principal: &Principal,
        server: &str,
    ) -> Result<Option<AccountLink>, StoreError> {
        let inner = self.lock()?;
        Ok(inner
            .links
            .get(principal)
            .and_then(|links| links.get(server))
            .cloned())
    }

    async fn links(&self, principal: &Principal) -> Result<Vec<AccountLink>, StoreError> {
        let inner = self.lock()?;
        Ok(inner
            .links
            .get(principal)
            .map(|links| links.values().cloned().collect())
            .unwrap_or_default())
    }

    async fn save_link(&self, principal: &Principal, link: &AccountLink) -> Result<(), StoreError> {
        let mut inner = self.lock()?;
        inner
            .links
            .entry(principal.clone())
            .or_default()
            .insert(link.server.clone(), link.clone());
        Ok(())
    }

    async fn delete_link(&self, principal: &Principal, server: &str) -> Result<bool, StoreError> {
        let mut inner = self.lock()?;
        Ok(inner
            .links
            .get_mut(principal)
            .is_some_and(|links| links.remove(server).is_some()))
    }
}

#[cfg(test)]
mod tests {
    use super::HeapStore;

    baton_testkit::store_conformance!(HeapStore::new());
}
