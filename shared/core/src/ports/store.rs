//! The `Store` port: the episode journal (D-24 … D-26).
//!
//! An episode belongs to one principal. A turn is *claimed* before it runs (so a duplicate
//! turn id is never run twice and two turns never interleave on one episode) and
//! *committed* once, atomically, with its narration, per-sub-agent segments, routing
//! record, usage and body references. Bodies (tool messages, component payloads) and the
//! pictures the user sent (D-42) are written before the record that references them and
//! never enter model context.

use std::fmt;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::memory::EpisodeSummary;
use crate::picture::{Bytes, MediaType, Picture};
use crate::ports::upstream::UpstreamConversation;
use crate::principal::Principal;
use crate::turn::{EpisodeState, TurnRecord};

/// Episode metadata (`META`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpisodeMeta {
    /// Episode id.
    pub episode_id: String,
    /// The owner; nobody else may read or write it.
    pub owner: Principal,
    /// Number of committed turns; the optimistic-concurrency version.
    pub version: u64,
    /// Creation time, epoch ms.
    pub created_ms: u64,
    /// Last commit time, epoch ms.
    pub updated_ms: u64,
    /// The summary compaction wrote, if any (design.md §4).
    pub summary: Option<EpisodeSummary>,
    /// Mutable runtime state carried between turns.
    pub state: EpisodeState,
}

/// A request to claim a turn before running it.
#[derive(Debug, Clone)]
pub struct ClaimRequest {
    /// Caller.
    pub principal: Principal,
    /// Episode to continue, or `None` to start one (the store picks `new_episode_id`).
    pub episode_id: Option<String>,
    /// Id for a new episode when `episode_id` is `None`.
    pub new_episode_id: String,
    /// Turn id (client-supplied or generated); unique across the store.
    pub turn_id: String,
    /// Now, epoch ms.
    pub now_ms: u64,
    /// How long the claim holds before another turn may take the episode over.
    pub lease_ms: u64,
    /// What the request asks, hashed (see [`request_fingerprint`]): a turn id sent again
    /// must ask the same, or it is a [`Claim::Mismatch`].
    pub fingerprint: String,
}

impl ClaimRequest {
    /// How this request differs from the turn already under its id — on `episode_id`, asked
    /// with `fingerprint` (empty: not known, as for turns stored before fingerprints) — if
    /// it does. A request that names no episode matches any: the turn id says which.
    pub fn mismatch(&self, episode_id: &str, fingerprint: &str) -> Option<ClaimMismatch> {
        if self.episode_id.as_deref().is_some_and(|e| e != episode_id) {
            return Some(ClaimMismatch::Episode {
                episode_id: episode_id.to_owned(),
            });
        }
        (!fingerprint.is_empty() && fingerprint != self.fingerprint).then(|| {
            ClaimMismatch::Request {
                differs: fingerprint_differences(fingerprint, &self.fingerprint),
            }
        })
    }
}

/// Marks a fingerprint made of named parts.
const PARTS_PREFIX: &str = "p1;";

/// The fingerprint of what a turn asks: each named part (the message, trimmed, and every
/// option that changes what runs) hashed on its own, so that two fingerprints tell which
/// parts differ. Equal requests have equal fingerprints.
pub fn request_fingerprint(parts: &[(&str, &str)]) -> String {
    use sha2::{Digest, Sha256};
    use std::fmt::Write as _;
    let mut out = String::from(PARTS_PREFIX);
    for (i, (name, value)) in parts.iter().enumerate() {
        let digest = Sha256::digest(value.trim().as_bytes());
        if i > 0 {
            out.push(';');
        }
        out.push_str(name);
        out.push('=');
        // 64 bits a part: enough to tell a different request from a retry.
        for b in &digest[..8] {
            // Writing to a String cannot fail.
            let _ = write!(out, "{b:02x}");
        }
    }
    out
}

/// The names of the parts in which two fingerprints of [`request_fingerprint`] differ;
/// empty when either is of another form (a turn stored by an older version).
pub fn fingerprint_differences(a: &str, b: &str) -> Vec<String> {
    let parts = |f: &str| -> Option<Vec<(String, String)>> {
        f.strip_prefix(PARTS_PREFIX)?
            .split(';')
            .map(|p| p.split_once('=').map(|(n, h)| (n.to_owned(), h.to_owned())))
            .collect()
    };
    let (Some(a), Some(b)) = (parts(a), parts(b)) else {
        return Vec::new();
    };
    let mut names: Vec<String> = Vec::new();
    for (name, hash) in &a {
        let other = b.iter().find(|(n, _)| n == name).map(|(_, h)| h);
        if other != Some(hash) {
            names.push(name.clone());
        }
    }
    for (name, _) in &b {
        if !a.iter().any(|(n, _)| n == name) {
            names.push(name.clone());
        }
    }
    names
}

/// How a turn id sent again differs from the turn already under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimMismatch {
    /// The turn is on this other episode.
    Episode {
        /// The episode the turn id belongs to.
        episode_id: String,
    },
    /// The message or its options differ.
    Request {
        /// The parts that differ, by name (`message`, `locale` …); empty when not known.
        differs: Vec<String>,
    },
}

/// The answer to a claim.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// The turn may run; here is the episode as of now.
    Claimed(EpisodeMeta),
    /// This turn id already completed for this principal: replay it, run nothing.
    Completed(Box<TurnRecord>),
    /// This turn id is running right now.
    InFlight,
    /// Another turn is running on this episode.
    Busy,
    /// This turn id was used for a different request: nothing runs, nothing is replayed.
    Mismatch(ClaimMismatch),
}

/// One body (tool message or component payload) stored apart from the turn record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Body {
    /// Key, unique within the episode (e.g. `<turn_id>/<call_id>`).
    pub key: String,
    /// The document as compact JSON text: written as it is, parsed only when read back.
    pub json: String,
}

/// One turn to commit.
#[derive(Debug, Clone)]
pub struct Commit {
    /// Caller (must own the episode).
    pub principal: Principal,
    /// The version the turn was run against; the commit fails with `Conflict` otherwise.
    pub expected_version: u64,
    /// The record; its `seq` must be `expected_version + 1`.
    pub record: TurnRecord,
    /// Bodies referenced by the record, written first.
    pub bodies: Vec<Body>,
    /// The pictures the user sent with this turn (D-42), already checked and stripped:
    /// written with the turn like its bodies, each under its episode and SHA-256 (the same
    /// picture sent again is the same picture, stored once); the record names them by
    /// [`PictureRef`](crate::picture::PictureRef).
    pub pictures: Vec<Picture>,
    /// Episode state after the turn.
    pub state: EpisodeState,
    /// The turn leaves the episode due for compaction: the store marks it (a mark already
    /// there keeps its time) so that [`Store::due_episodes`] finds it.
    pub compaction_due: bool,
}

/// A picture as a store gives it back (D-42).
#[derive(Clone, PartialEq, Eq)]
pub struct StoredPicture {
    /// What the bytes are.
    pub media_type: MediaType,
    /// The picture as it was committed.
    pub bytes: Bytes,
}

impl fmt::Debug for StoredPicture {
    // The length, not the bytes: a picture in a log or a failed assertion is noise.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoredPicture")
            .field("media_type", &self.media_type)
            .field("bytes", &self.bytes.len())
            .finish()
    }
}

/// Whether `sha256` names a picture as [`crate::picture::take`] does: 64 lower-case hex
/// digits. Stores build file names and object keys from it, so they refuse any other.
pub fn is_picture_name(sha256: &str) -> bool {
    sha256.len() == 64
        && sha256
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Refuses a commit whose pictures a store could not name safely (a `sha256` that is not
/// one): nothing is written.
///
/// # Errors
/// `Unavailable`, as for any turn a store cannot save.
pub fn check_picture_names(pictures: &[Picture]) -> Result<(), StoreError> {
    if pictures.iter().all(|p| is_picture_name(&p.sha256)) {
        Ok(())
    } else {
        Err(StoreError::Unavailable(
            "a picture of the turn is not named by its SHA-256; the turn was not saved".into(),
        ))
    }
}

/// An episode marked due for compaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DueEpisode {
    /// Episode id.
    pub episode_id: String,
    /// Its owner, to read and write it as.
    pub owner: Principal,
    /// When it was marked, epoch ms.
    pub since_ms: u64,
}

/// What went wrong in the store, phrased as what the caller can do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// No such episode for this principal (also when it belongs to someone else: D-30).
    #[error("episode not found")]
    NotFound,
    /// The episode changed since it was read; reload and retry.
    #[error("episode version conflict")]
    Conflict,
    /// The store cannot be reached or is locked; retry later.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// Stored data cannot be read; nothing was changed.
    #[error("store data is corrupt: {0}")]
    Corrupt(String),
}

/// A principal's link to a server that acts for them (D-37): the server's key and its
/// tokens, sealed (encrypted and authenticated) before the store sees them, so a store
/// holds nothing it could use or show.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountLink {
    /// The server linked to (its settings' key, as the connector names it).
    pub server: String,
    /// The sealed tokens.
    pub sealed: String,
    /// When it was linked or last refreshed, epoch ms.
    pub updated_ms: u64,
}

/// The episode journal: every port below, which every store implements (a store may
/// implement them one at a time, each in a module of its own; see "Adding a store" in
/// docs/design.md).
///
/// Every method is atomic: on `Err` nothing was changed. Futures may be dropped at any
/// await point; a dropped `commit` either happened or did not.
pub trait Store:
    TurnStore + CheckpointStore + SummaryStore + UpstreamStore + LinkStore + Send + Sync
{
}

impl<T> Store for T where
    T: TurnStore + CheckpointStore + SummaryStore + UpstreamStore + LinkStore + Send + Sync
{
}

/// Claims and turns: the episode's claim, its commit, and reading its turns back (D-24 … D-26).
#[async_trait]
pub trait TurnStore: Send + Sync {
    /// Claims a turn (D-25, D-26); creates the episode when `episode_id` is `None`.
    ///
    /// A turn id whose claim died (its lease ran out, or the store knows its process is
    /// gone) is claimed again on the episode it had, with or without `episode_id`: a retry
    /// of an interrupted turn restarts it where it was.
    ///
    /// # Errors
    /// `NotFound` for an unknown episode or another principal's.
    async fn claim(&self, request: ClaimRequest) -> Result<Claim, StoreError>;

    /// Ends a claim without committing (the turn failed before it could commit, or its
    /// commit failed): the episode is free for other turns at once, and the turn id stays
    /// bound to its episode, so the same request sent again (with or without the episode
    /// id) runs there instead of on a new episode.
    async fn release(&self, episode_id: &str, turn_id: &str) -> Result<(), StoreError>;

    /// Commits a claimed turn and releases its claim; returns the new version. The commit
    /// is borrowed so that a caller can retry it after a conflict without keeping a copy.
    ///
    /// A picture the episode already holds (the same SHA-256, sent in an earlier turn) is no
    /// conflict: it is the same picture.
    ///
    /// # Errors
    /// `Conflict` when the episode's version is no longer `expected_version`.
    async fn commit(&self, commit: &Commit) -> Result<u64, StoreError>;

    /// Episode metadata, checked for ownership.
    async fn episode(
        &self,
        principal: &Principal,
        episode_id: &str,
    ) -> Result<EpisodeMeta, StoreError>;

    /// The last `limit` committed turns of an episode, oldest first, checked for ownership.
    async fn turns(
        &self,
        principal: &Principal,
        episode_id: &str,
        limit: usize,
    ) -> Result<Vec<TurnRecord>, StoreError>;

    /// Up to `limit` committed turns after turn `after_seq`, oldest first, checked for
    /// ownership: the turns a compaction folds.
    async fn turns_after(
        &self,
        principal: &Principal,
        episode_id: &str,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<TurnRecord>, StoreError>;

    /// Reads one body, checked for ownership.
    async fn body(
        &self,
        principal: &Principal,
        episode_id: &str,
        key: &str,
    ) -> Result<serde_json::Value, StoreError>;

    /// One picture of an episode by its SHA-256 (lower-case hex), checked for ownership:
    /// readable once the commit that carried it has succeeded, never before or after a
    /// commit that failed.
    ///
    /// # Errors
    /// `NotFound` for an unknown episode, another principal's, or a picture no committed
    /// turn of the episode sent.
    async fn picture(
        &self,
        principal: &Principal,
        episode_id: &str,
        sha256: &str,
    ) -> Result<StoredPicture, StoreError>;

    /// Whether turns can be claimed and committed now: a cheap probe for readiness checks
    /// (a store that is always reachable keeps the default).
    ///
    /// # Errors
    /// `Unavailable` or `Corrupt`, as a turn would meet them.
    async fn ready(&self) -> Result<(), StoreError> {
        Ok(())
    }
}

/// A running turn's progress, kept across a crash until it commits (D-16).
#[async_trait]
pub trait CheckpointStore: Send + Sync {
    /// Saves the progress of a claimed turn that is still running (a planner's checkpoint
    /// after each wave, D-16), replacing what the turn saved before. Kept when the claim is
    /// released or dies, so that the turn claimed again goes on from it; removed when the
    /// turn commits. `checkpoint` is opaque text (JSON) of any size.
    ///
    /// # Errors
    /// `Conflict` when `turn_id` does not hold the episode's claim (never claimed,
    /// committed, or taken over by another turn): nothing is saved.
    async fn save_checkpoint(
        &self,
        episode_id: &str,
        turn_id: &str,
        checkpoint: &str,
    ) -> Result<(), StoreError>;

    /// What [`CheckpointStore::save_checkpoint`] last saved for `turn_id` on this episode; `None` when
    /// it saved nothing or the turn has committed. The caller has claimed the turn (which
    /// checked the principal).
    async fn checkpoint(
        &self,
        episode_id: &str,
        turn_id: &str,
    ) -> Result<Option<String>, StoreError>;
}

/// Episode memory: compaction's summaries and the episodes due for one (design §4).
#[async_trait]
pub trait SummaryStore: Send + Sync {
    /// Stores a compaction's summary and clears the episode's due mark, if the episode is
    /// still at `expected_version` (no turn committed since it was read).
    ///
    /// # Errors
    /// `Conflict` when a turn committed meanwhile: nothing was changed, the caller re-reads
    /// or leaves the episode for the next run. `NotFound` for another principal's episode.
    async fn save_summary(
        &self,
        principal: &Principal,
        episode_id: &str,
        expected_version: u64,
        summary: &EpisodeSummary,
    ) -> Result<(), StoreError>;

    /// Up to `limit` episodes marked due for compaction, longest due first.
    async fn due_episodes(&self, limit: usize) -> Result<Vec<DueEpisode>, StoreError>;
}

/// A specialist's conversation with its upstream chat service.
#[async_trait]
pub trait UpstreamStore: Send + Sync {
    /// The specialist's conversation with its upstream chat service, as last saved, expired
    /// or not (the caller checks [`UpstreamConversation::live_at`]). `None` when there is
    /// none, and when the stored item is unreadable or not the principal's: treated as
    /// expired, never as an error.
    ///
    /// # Errors
    /// `NotFound` for an unknown episode or another principal's.
    async fn upstream_conversation(
        &self,
        principal: &Principal,
        episode_id: &str,
        agent_id: &str,
    ) -> Result<Option<UpstreamConversation>, StoreError>;

    /// Saves (or refreshes) a specialist's upstream conversation.
    ///
    /// # Errors
    /// `NotFound` for an unknown episode or another principal's.
    async fn save_upstream_conversation(
        &self,
        principal: &Principal,
        episode_id: &str,
        conversation: &UpstreamConversation,
    ) -> Result<(), StoreError>;
}

/// A principal's account links (D-37).
#[async_trait]
pub trait LinkStore: Send + Sync {
    /// The principal's link to `server` (an account they connected, D-37), if any.
    ///
    /// # Errors
    /// `Unavailable` or `Corrupt`.
    async fn link(
        &self,
        principal: &Principal,
        server: &str,
    ) -> Result<Option<AccountLink>, StoreError>;

    /// Every link of the principal, by server.
    ///
    /// # Errors
    /// `Unavailable` or `Corrupt`.
    async fn links(&self, principal: &Principal) -> Result<Vec<AccountLink>, StoreError>;

    /// Saves (or replaces) the principal's link to `link.server`.
    ///
    /// # Errors
    /// `Unavailable`.
    async fn save_link(&self, principal: &Principal, link: &AccountLink) -> Result<(), StoreError>;

    /// Removes the principal's link to `server`; whether there was one.
    ///
    /// # Errors
    /// `Unavailable`.
    async fn delete_link(&self, principal: &Principal, server: &str) -> Result<bool, StoreError>;
}
