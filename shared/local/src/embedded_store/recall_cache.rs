//! What a turn reads of long-term memory (D-43), kept in the process between turns: each
//! principal's status (their setting, and until when they hold a current memory) and the
//! vectors of their current memories. A turn of a principal with nothing to find then
//! reads nothing from the file, and a similarity search scans vectors in memory instead of
//! reading them through SQLite again.
//!
//! **Staleness.** Every write to memory, by any process with the store open, appends a
//! byte to `memory.stamp` in the store folder after its commit; what was cached is used
//! only while the stamp's length is the one it was read under (one `stat` a turn). A
//! reader takes the stamp before it reads the file, so what it caches is never older than
//! its stamp. Should a stamp fail to be written, the cache cannot be trusted for long:
//! similarity hits are read back from the file before they are returned (an erased memory
//! is never given to a prompt from here), and the failure is logged.
//!
//! **Bound.** At most [`CACHE_BYTES`] of vectors and memories are kept; the principals
//! cached longest ago go first.

use std::collections::{HashMap, VecDeque};
use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use baton_core::Principal;
use baton_core::ports::memory::Status;
use baton_core::recall::embed::cosine;
use baton_core::recall::{Memory, MemoryFilter};

/// The stamp file's name inside the store folder.
pub const STAMP_FILE: &str = "memory.stamp";

/// The most bytes of vectors and memories kept (estimated: a vector's floats plus a
/// memory's text and fields).
pub(crate) const CACHE_BYTES: usize = 32 * 1024 * 1024;

/// What a memory costs the cache besides its vector's floats.
const MEMORY_BYTES: usize = 400;

/// The stamp's value: the file's length (never shrinks: bytes are only appended).
pub(crate) type Stamp = u64;

/// A principal's memory at a glance, as of a stamp.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CachedStatus {
    pub(crate) setting: Option<bool>,
    /// They hold a current memory until this time (`u64::MAX`: one never ends; 0: none).
    pub(crate) held_until: u64,
}

impl CachedStatus {
    pub(crate) fn at(&self, now_ms: u64) -> Status {
        Status {
            setting: self.setting,
            holds_any: self.setting != Some(false) && self.held_until > now_ms,
        }
    }
}

/// A current memory with its vector.
#[derive(Debug)]
pub(crate) struct Vectored {
    pub(crate) memory: Memory,
    pub(crate) model: String,
    pub(crate) vector: Vec<f32>,
}

/// The vectors of one principal's current memories.
pub(crate) type Shelf = Arc<Vec<Vectored>>;

#[derive(Default)]
struct State {
    /// The stamp everything below was read under.
    stamp: Option<Stamp>,
    statuses: HashMap<Principal, CachedStatus>,
    shelves: HashMap<Principal, (Shelf, usize)>,
    /// Shelves in the order they were cached, for eviction.
    order: VecDeque<Principal>,
    bytes: usize,
}

/// The cache; see the module docs.
pub(crate) struct RecallCache {
    stamp_file: PathBuf,
    state: Mutex<State>,
}

impl RecallCache {
    pub(crate) fn new(dir: &Path) -> RecallCache {
        RecallCache {
            stamp_file: dir.join(STAMP_FILE),
            state: Mutex::new(State::default()),
        }
    }

    /// The stamp now: the stamp file's length (0 before any write).
    pub(crate) fn stamp(&self) -> Stamp {
        std::fs::metadata(&self.stamp_file).map_or(0, |m| m.len())
    }

    /// Marks a write to memory: after its commit, before its caller is answered.
    pub(crate) fn touch(&self) {
        let appended = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.stamp_file)
            .and_then(|mut f| f.write_all(b"."));
        if let Err(e) = appended {
            tracing::error!(
                error = %e,
                file = %self.stamp_file.display(),
                "embedded store: memory's stamp could not be written; other processes may read memory they cached"
            );
        }
        // This process forgets at once, whatever the file says.
        let mut state = self.lock();
        *state = State::default();
    }

    /// The principal's status as of `stamp`, if cached.
    pub(crate) fn status(&self, stamp: Stamp, principal: &Principal) -> Option<CachedStatus> {
        self.current(stamp).statuses.get(principal).copied()
    }

    /// Keeps a status read under `stamp`.
    pub(crate) fn keep_status(&self, stamp: Stamp, principal: &Principal, status: CachedStatus) {
        self.current(stamp)
            .statuses
            .insert(principal.clone(), status);
    }

    /// The principal's shelf as of `stamp`, if cached.
    pub(crate) fn shelf(&self, stamp: Stamp, principal: &Principal) -> Option<Shelf> {
        self.current(stamp)
            .shelves
            .get(principal)
            .map(|(s, _)| Arc::clone(s))
    }

    /// Keeps a shelf read under `stamp`, letting the oldest go past [`CACHE_BYTES`]. A
    /// shelf larger than the whole bound is not kept.
    pub(crate) fn keep_shelf(&self, stamp: Stamp, principal: &Principal, shelf: Shelf) {
        let bytes: usize = shelf
            .iter()
            .map(|v| v.vector.len() * 4 + MEMORY_BYTES)
            .sum();
        if bytes > CACHE_BYTES {
            return;
        }
        let mut state = self.current(stamp);
        if let Some((_, old)) = state.shelves.remove(principal) {
            state.bytes -= old;
            state.order.retain(|p| p != principal);
        }
        while state.bytes + bytes > CACHE_BYTES {
            let Some(oldest) = state.order.pop_front() else {
                break;
            };
            if let Some((_, freed)) = state.shelves.remove(&oldest) {
                state.bytes -= freed;
            }
        }
        state.shelves.insert(principal.clone(), (shelf, bytes));
        state.order.push_back(principal.clone());
        state.bytes += bytes;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The state, holding only what was read under `stamp`: another stamp empties it
    /// first. (A reader that started before a write and keeps what it read under the
    /// older stamp only empties the cache for the next reader, who asks with the newer.)
    fn current(&self, stamp: Stamp) -> std::sync::MutexGuard<'_, State> {
        let mut state = self.lock();
        if state.stamp != Some(stamp) {
            *state = State {
                stamp: Some(stamp),
                ..State::default()
            };
        }
        state
    }
}

/// The `limit` nearest of `shelf` that `filter` admits, by the query's model: each with its
/// similarity, best first.
pub(crate) fn nearest<'a>(
    shelf: &'a [Vectored],
    model: &str,
    query: &[f32],
    filter: &MemoryFilter,
    limit: usize,
) -> Vec<(f32, &'a Memory)> {
    let mut hits: Vec<(f32, &Memory)> = shelf
        .iter()
        .filter(|v| v.model == model && v.vector.len() == query.len())
        .filter(|v| filter.admits(&v.memory))
        .map(|v| (cosine(&v.vector, query), &v.memory))
        .collect();
    hits.sort_by(|a, b| b.0.total_cmp(&a.0));
    hits.truncate(limit);
    hits
}
