//! The embedded store: the episode journal in one SQLite file plus a folder of bodies.
//!
//! `<dir>/baton.sqlite` (WAL, `synchronous=NORMAL`, a busy timeout) holds episodes, claims,
//! turn records and where each body and picture is; `<dir>/bodies/` holds the bodies and
//! the pictures users sent (D-42), each written atomically (and synced) before its commit
//! queues for the connection, so before the record that references it exists. It keeps the
//! same contracts as every other store (the conformance suite in `baton_testkit`).
//!
//! Each open store is an owner (a locked file under `owners/`) and marks its claims with
//! its id; opening a store, or finding a live claim in a claim's way, reclaims the claims
//! of owners that are gone, so a turn a crash interrupted can be sent again at once and
//! restarts on its episode.
//!
//! One connection writes for the process, behind a mutex and used only from blocking
//! threads (`spawn_blocking`), so SQLite never blocks the async workers. Writes queue on an
//! async gate before taking a blocking thread: they would serialize on the connection
//! anyway, and a thousand concurrent turns must not become a thousand parked threads. Each
//! call runs to its end on its blocking thread even if the caller stops waiting: a dropped
//! commit either happened or did not.
//!
//! The write-ahead log is copied into the file by a blocking job ([`checkpointer`]),
//! not by the writer after a commit: a large commit does not hold up the claims behind it.
//!
//! Reads (an episode, its turns, a body, a checkpoint) go through a few read-only
//! connections of their own, behind their own gate: with write-ahead logging a reader sees
//! the last commit and never waits for a writer, so a burst of large commits does not hold
//! up someone reading a conversation.
//!
//! A claim, and readiness, first check that the disk holding the store has room
//! ([`MIN_FREE_BYTES`]): a turn that cannot be saved is refused before it runs, and a store
//! that cannot take turns does not say it is ready.

mod account_links;
mod bodies;
mod checkpointer;
mod error;
mod journal;
mod owner;
mod recall;
mod recall_cache;
mod room;
mod schema;
mod upstream;

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use baton_core::Principal;
use baton_core::memory::EpisodeSummary;
use baton_core::picture::{Bytes, MediaType, Picture};
use baton_core::ports::memory::{Both, MemoryStore, Status};
use baton_core::ports::store::{
    AccountLink, Claim, ClaimRequest, Commit, DueEpisode, EpisodeMeta, StoreError, StoredPicture,
    check_picture_names,
};
use baton_core::ports::store::{
    CheckpointStore, LinkStore, SummaryStore, TurnStore, UpstreamStore,
};
use baton_core::ports::upstream::UpstreamConversation;
use baton_core::recall::embed::Embedding;
use baton_core::recall::{Memory, MemoryFilter, MemoryId, Saved, Scored};
use baton_core::turn::TurnRecord;
use rusqlite::Connection;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The store file's name inside the store folder.
pub const DATABASE_FILE: &str = "baton.sqlite";

/// The bodies folder's name inside the store folder.
pub const BODIES_DIR: &str = "bodies";

/// The folder of the open stores' lock files inside the store folder.
pub use owner::OWNERS_DIR;

/// The file whose length changes with every write to long-term memory, inside the store
/// folder: how each open store knows that what it cached of memory is stale.
pub use recall_cache::STAMP_FILE as MEMORY_STAMP_FILE;

pub use room::{MIN_FREE_BYTES, free_bytes};

/// Read-only connections, and so reads that run at once.
const READERS: usize = 2;

/// Commits whose bodies are written at once (each on a blocking thread).
const BODY_WRITERS: usize = 4;

/// How long a call waits for another process's write lock before giving up.
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// A [`Store`] kept in one SQLite file plus a folder of bodies.
#[derive(Clone)]
pub struct EmbeddedStore {
    shared: Arc<Shared>,
}

struct Shared {
    conn: Mutex<Connection>,
    /// Read-only connections, one per read permit.
    readers: Mutex<Vec<Connection>>,
    read_gate: Arc<Semaphore>,
    /// The store folder (its disk's free space decides whether turns may start).
    dir: PathBuf,
    /// The store file.
    file: PathBuf,
    bodies: PathBuf,
    gate: Arc<Semaphore>,
    /// Commits writing their bodies, before they queue at `gate`.
    body_gate: Arc<Semaphore>,
    /// This store's owner id, kept on its claims.
    owner: owner::Owner,
    /// Claims whose release failed (a full disk): released before the next claim and
    /// when readiness is asked, which fails while they cannot be.
    unreleased: Mutex<Vec<(String, String)>>,
    /// Long-term memory's statuses and vectors between turns (D-43).
    recall_cache: Arc<recall_cache::RecallCache>,
}

/// The files a commit wrote before it queued, relative to the bodies folder.
#[derive(Debug, Default)]
struct Written {
    /// One per body, in order.
    bodies: Vec<String>,
    /// Each picture's SHA-256, media type and file, one per distinct picture.
    pictures: Vec<(String, String, String)>,
}

impl Written {
    /// Every file.
    fn files(&self) -> Vec<String> {
        let pictures = self.pictures.iter().map(|(_, _, file)| file.clone());
        self.bodies.iter().cloned().chain(pictures).collect()
    }
}

impl fmt::Debug for EmbeddedStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EmbeddedStore")
            .field("bodies", &self.shared.bodies)
            .finish_non_exhaustive()
    }
}

impl EmbeddedStore {
    /// Opens the store in `dir`, creating the folder, the file and the tables if needed.
    ///
    /// # Errors
    /// `Corrupt` when `baton.sqlite` is damaged, is not a Baton store or was written by a
    /// newer Baton (the file is left as it is); `Unavailable` when the folder cannot be
    /// created or the file opened, or another process holds it locked.
    pub fn open(dir: &Path) -> Result<EmbeddedStore, StoreError> {
        Self::open_with_busy_timeout(dir, DEFAULT_BUSY_TIMEOUT)
    }

    /// Like [`EmbeddedStore::open`], waiting at most `busy_timeout` for another process's
    /// write lock on each call.
    ///
    /// # Errors
    /// As [`EmbeddedStore::open`].
    pub fn open_with_busy_timeout(
        dir: &Path,
        busy_timeout: Duration,
    ) -> Result<EmbeddedStore, StoreError> {
        let bodies = dir.join(BODIES_DIR);
        std::fs::create_dir_all(&bodies).map_err(|e| error::io("creating the folder", &e))?;
        let file = dir.join(DATABASE_FILE);
        let mut conn = schema::open(&file, busy_timeout)?;
        let owner = owner::Owner::take(dir)?;
        // Turns left running by a store that is gone (a crash, a kill) will never finish:
        // their episodes are freed now and their ids may be sent again.
        let reclaimed = owner::reclaim(&mut conn, dir, &owner.id)?;
        if reclaimed > 0 {
            tracing::warn!(
                reclaimed,
                "embedded store: turns interrupted by a previous process were reclaimed"
            );
        }
        // After the reclaim: until the hook is set, the writer checkpoints by itself.
        checkpointer::start(&mut conn, &file, busy_timeout)?;
        let readers = (0..READERS)
            .map(|_| schema::open_reader(&file, busy_timeout))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(EmbeddedStore {
            shared: Arc::new(Shared {
                conn: Mutex::new(conn),
                readers: Mutex::new(readers),
                read_gate: Arc::new(Semaphore::new(READERS)),
                dir: dir.to_owned(),
                file,
                bodies,
                gate: Arc::new(Semaphore::new(1)),
                body_gate: Arc::new(Semaphore::new(BODY_WRITERS)),
                owner,
                unreleased: Mutex::new(Vec::new()),
                recall_cache: Arc::new(recall_cache::RecallCache::new(dir)),
            }),
        })
    }

    /// Releases the claims whose release failed before.
    ///
    /// # Errors
    /// The store still cannot write: those not yet released stay noted.
    async fn release_unreleased(&self) -> Result<(), StoreError> {
        // Copied, not taken: they stay noted until a release of them has landed (releasing
        // is idempotent, so one released twice changes nothing).
        let pending = match self.shared.unreleased.lock() {
            Ok(pending) if !pending.is_empty() => pending.clone(),
            _ => return Ok(()),
        };
        let tried = pending.clone();
        baton_core::store_write!(
            "store.release",
            self.run(move |conn, _| {
                for (episode_id, turn_id) in &pending {
                    journal::release(conn, episode_id, turn_id)?;
                    tracing::info!(%episode_id, %turn_id, "embedded store: a claim whose release had failed was released");
                }
                Ok(())
            })
        )?;
        if let Ok(mut unreleased) = self.shared.unreleased.lock() {
            unreleased.retain(|claim| !tried.contains(claim));
        }
        Ok(())
    }

    /// Whether the disk holding the store has room for a turn ([`MIN_FREE_BYTES`]).
    fn room(&self) -> Result<(), StoreError> {
        room::check(&self.shared.dir, 0)
    }

    /// Runs a read on one of the read-only connections, on a blocking thread.
    async fn read<T, F>(&self, job: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let permit = Arc::clone(&self.shared.read_gate)
            .acquire_owned()
            .await
            .map_err(|_| StoreError::Unavailable("the local store is shutting down".into()))?;
        let shared = Arc::clone(&self.shared);
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let taken = shared
                .readers
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .pop();
            // One connection per permit: the pool is never empty here; should it be, a
            // fresh connection does the same job.
            let mut conn = match taken {
                Some(conn) => conn,
                None => schema::open_reader(&shared.file, DEFAULT_BUSY_TIMEOUT)?,
            };
            let out = job(&mut conn);
            shared
                .readers
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(conn);
            out
        })
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "embedded store: blocking task failed");
            StoreError::Unavailable("the local store could not be read or written".into())
        })?
    }

    /// Writes a commit's bodies and pictures, at most [`BODY_WRITERS`] commits at once, and
    /// returns their files. A picture given twice is written once.
    async fn write_files(&self, commit: &Commit) -> Result<Written, StoreError> {
        let mut seen = HashSet::new();
        let pictures: Vec<Picture> = commit
            .pictures
            .iter()
            .filter(|p| seen.insert(p.sha256.as_str()))
            .cloned()
            .collect();
        if commit.bodies.is_empty() && pictures.is_empty() {
            return Ok(Written::default());
        }
        let size: usize = commit.bodies.iter().map(|b| b.json.len()).sum::<usize>()
            + pictures.iter().map(|p| p.bytes.len()).sum::<usize>();
        room::check(&self.shared.dir, room::written_bytes(size))?;
        let permit = Arc::clone(&self.shared.body_gate)
            .acquire_owned()
            .await
            .map_err(|_| StoreError::Unavailable("the local store is shutting down".into()))?;
        let (root, episode_id, seq, list) = (
            self.shared.bodies.clone(),
            commit.record.episode_id.clone(),
            commit.record.seq,
            commit.bodies.clone(),
        );
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let bodies = bodies::write_all(&root, &episode_id, seq, &list)?;
            let files = match bodies::write_pictures(&root, &episode_id, &pictures) {
                Ok(files) => files,
                Err(e) => {
                    bodies::remove(&root, &bodies);
                    return Err(e);
                }
            };
            let pictures = pictures
                .iter()
                .zip(files)
                .map(|(p, file)| (p.sha256.clone(), p.media_type.as_str().to_owned(), file))
                .collect();
            Ok(Written { bodies, pictures })
        })
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "embedded store: blocking task failed");
            StoreError::Unavailable("the local store could not be read or written".into())
        })?
    }

    /// Reads a body or picture file named by a stored path (relative to the bodies folder);
    /// `what` names it in errors.
    async fn read_file(&self, relative: &str, what: &str) -> Result<Vec<u8>, StoreError> {
        let path = bodies::resolve(&self.shared.bodies, relative)?;
        if baton_core::fault!("bodies.read") {
            return Err(baton_core::failpoint::store_fault("bodies.read"));
        }
        tokio::fs::read(&path).await.map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                error::undecodable(&format!("{what} (missing)"), &e)
            } else {
                error::io(&format!("reading {what}"), &e)
            }
        })
    }

    /// Waits for this call's turn at the connection.
    async fn admit(&self) -> Result<OwnedSemaphorePermit, StoreError> {
        Arc::clone(&self.shared.gate)
            .acquire_owned()
            .await
            .map_err(|_| StoreError::Unavailable("the local store is shutting down".into()))
    }

    /// Runs `job` on a blocking thread with the connection.
    async fn run<T, F>(&self, job: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection, &Path) -> Result<T, StoreError> + Send + 'static,
    {
        let permit = self.admit().await?;
        self.run_admitted(permit, job).await
    }

    /// Runs `job` on a blocking thread, holding `permit` until it ends.
    async fn run_admitted<T, F>(
        &self,
        permit: OwnedSemaphorePermit,
        job: F,
    ) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection, &Path) -> Result<T, StoreError> + Send + 'static,
    {
        let shared = Arc::clone(&self.shared);
        tokio::task::spawn_blocking(move || {
            // Held until the job ends, even if the caller stops waiting.
            let _permit = permit;
            // A poisoned lock means a panic mid-call; SQLite rolled the transaction back, so
            // the connection itself is still sound.
            let mut conn = shared
                .conn
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            job(&mut conn, &shared.bodies)
        })
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "embedded store: blocking task failed");
            StoreError::Unavailable("the local store could not be read or written".into())
        })?
    }
}

#[async_trait]
impl TurnStore for EmbeddedStore {
    async fn claim(&self, request: ClaimRequest) -> Result<Claim, StoreError> {
        self.room()?;
        if let Err(e) = self.release_unreleased().await {
            tracing::warn!(error = %e, "embedded store: claims whose release failed are still held");
        }
        let owner = self.shared.owner.id.clone();
        let dir = self.shared.dir.clone();
        baton_core::store_write!(
            "store.claim",
            self.run(move |conn, _| journal::claim(conn, &request, &owner, &dir))
        )
    }

    async fn release(&self, episode_id: &str, turn_id: &str) -> Result<(), StoreError> {
        let (episode_id, turn_id) = (episode_id.to_owned(), turn_id.to_owned());
        let (episode, turn) = (episode_id.clone(), turn_id.clone());
        let released = baton_core::store_write!(
            "store.release",
            self.run(move |conn, _| journal::release(conn, &episode_id, &turn_id))
        );
        // Not released: tried again until it is, rather than left to its lease, so the
        // turn id is not "in flight" long after the disk has room again.
        if released.is_err()
            && let Ok(mut unreleased) = self.shared.unreleased.lock()
        {
            unreleased.push((episode, turn));
        }
        released
    }

    async fn commit(&self, commit: &Commit) -> Result<u64, StoreError> {
        baton_core::store_write!("store.commit", async {
            check_picture_names(&commit.pictures)?;
            // The bodies and pictures go to disk (each synced) before the commit queues for
            // the connection: the syncs do not hold up the claims and commits queued there
            // (D-41). One file for each body, in order, or an error (`bodies::write_all`).
            let written = self.write_files(commit).await?;
            // Copied only once this call's turn at the connection has come, so queued commits
            // do not each hold a second copy of their turn.
            let permit = self.admit().await?;
            // The rows need the bodies' keys, not their JSON (already on disk), and the
            // pictures' names, not their bytes.
            let named: Vec<(String, String)> = commit
                .bodies
                .iter()
                .map(|b| b.key.clone())
                .zip(written.bodies.iter().cloned())
                .collect();
            let pictures = written.pictures.clone();
            let rows = Commit {
                principal: commit.principal.clone(),
                expected_version: commit.expected_version,
                record: commit.record.clone(),
                bodies: Vec::new(),
                pictures: Vec::new(),
                state: commit.state.clone(),
                compaction_due: commit.compaction_due,
            };
            let committed = self
                .run_admitted(permit, move |conn, bodies| {
                    let committed = journal::commit(conn, bodies, &rows, &named, &pictures);
                    if committed.as_ref().is_err_and(error::is_disk_full) {
                        // The log grew with the rolled-back commit and keeps its size: give
                        // the room back, so that the release that follows, and the next
                        // turns once there is room again, can write.
                        schema::shrink_log(conn);
                    }
                    committed
                })
                .await;
            // No record names them: every file of a commit that did not land, the copies
            // of pictures the episode already held of one that did. (A caller that stops
            // waiting leaves them: the commit may still land.)
            let unused = match &committed {
                Ok(committed) => committed.unused.clone(),
                Err(_) => written.files(),
            };
            if !unused.is_empty() {
                let root = self.shared.bodies.clone();
                let _ = tokio::task::spawn_blocking(move || bodies::remove(&root, &unused)).await;
            }
            committed.map(|c| c.version)
        })
    }

    async fn episode(
        &self,
        principal: &Principal,
        episode_id: &str,
    ) -> Result<EpisodeMeta, StoreError> {
        let (principal, episode_id) = (principal.clone(), episode_id.to_owned());
        self.read(move |conn| journal::episode(conn, &principal, &episode_id))
            .await
    }

    async fn turns(
        &self,
        principal: &Principal,
        episode_id: &str,
        limit: usize,
    ) -> Result<Vec<TurnRecord>, StoreError> {
        let (principal, episode_id) = (principal.clone(), episode_id.to_owned());
        self.read(move |conn| journal::turns(conn, &principal, &episode_id, limit))
            .await
    }

    async fn turns_after(
        &self,
        principal: &Principal,
        episode_id: &str,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<TurnRecord>, StoreError> {
        let (principal, episode_id) = (principal.clone(), episode_id.to_owned());
        self.read(move |conn| journal::turns_after(conn, &principal, &episode_id, after_seq, limit))
            .await
    }

    async fn body(
        &self,
        principal: &Principal,
        episode_id: &str,
        key: &str,
    ) -> Result<serde_json::Value, StoreError> {
        let (principal, episode_id, key) =
            (principal.clone(), episode_id.to_owned(), key.to_owned());
        let relative = self
            .read(move |conn| journal::body_path(conn, &principal, &episode_id, &key))
            .await?;
        let bytes = self.read_file(&relative, "a body file").await?;
        bodies::decode(&bytes)
    }

    async fn picture(
        &self,
        principal: &Principal,
        episode_id: &str,
        sha256: &str,
    ) -> Result<StoredPicture, StoreError> {
        let (principal, episode_id, sha256) =
            (principal.clone(), episode_id.to_owned(), sha256.to_owned());
        let (media_type, relative) = self
            .read(move |conn| journal::picture_path(conn, &principal, &episode_id, &sha256))
            .await?;
        let media_type = MediaType::parse(&media_type)
            .ok_or_else(|| error::undecodable("a picture's media type", &media_type))?;
        let bytes = self.read_file(&relative, "a picture file").await?;
        Ok(StoredPicture {
            media_type,
            bytes: Bytes::from(bytes),
        })
    }

    async fn ready(&self) -> Result<(), StoreError> {
        self.room()?;
        // Not ready while a claim cannot be released: its turn id would answer 409.
        self.release_unreleased().await?;
        let file = self.shared.file.clone();
        self.run(move |conn, _| {
            journal::ready(conn)?;
            schema::header_intact(&file)
        })
        .await
    }
}

#[async_trait]
impl CheckpointStore for EmbeddedStore {
    async fn save_checkpoint(
        &self,
        episode_id: &str,
        turn_id: &str,
        checkpoint: &str,
    ) -> Result<(), StoreError> {
        baton_core::store_write!("store.checkpoint", async {
            // Copied only once this call's turn at the connection has come, as a commit is:
            // a checkpoint may be large.
            let permit = self.admit().await?;
            let (episode_id, turn_id, checkpoint) = (
                episode_id.to_owned(),
                turn_id.to_owned(),
                checkpoint.to_owned(),
            );
            self.run_admitted(permit, move |conn, _| {
                journal::save_checkpoint(conn, &episode_id, &turn_id, &checkpoint)
            })
            .await
        })
    }

    async fn checkpoint(
        &self,
        episode_id: &str,
        turn_id: &str,
    ) -> Result<Option<String>, StoreError> {
        let (episode_id, turn_id) = (episode_id.to_owned(), turn_id.to_owned());
        self.read(move |conn| journal::checkpoint(conn, &episode_id, &turn_id))
            .await
    }
}

#[async_trait]
impl SummaryStore for EmbeddedStore {
    async fn save_summary(
        &self,
        principal: &Principal,
        episode_id: &str,
        expected_version: u64,
        summary: &EpisodeSummary,
    ) -> Result<(), StoreError> {
        baton_core::store_write!("store.summary", async {
            let (principal, episode_id, summary) =
                (principal.clone(), episode_id.to_owned(), summary.clone());
            self.run(move |conn, _| {
                journal::save_summary(conn, &principal, &episode_id, expected_version, &summary)
            })
            .await
        })
    }

    async fn due_episodes(&self, limit: usize) -> Result<Vec<DueEpisode>, StoreError> {
        self.read(move |conn| journal::due_episodes(conn, limit))
            .await
    }
}

#[async_trait]
impl UpstreamStore for EmbeddedStore {
    async fn upstream_conversation(
        &self,
        principal: &Principal,
        episode_id: &str,
        agent_id: &str,
    ) -> Result<Option<UpstreamConversation>, StoreError> {
        let (principal, episode_id, agent_id) = (
            principal.clone(),
            episode_id.to_owned(),
            agent_id.to_owned(),
        );
        self.read(move |conn| upstream::conversation(conn, &principal, &episode_id, &agent_id))
            .await
    }

    async fn save_upstream_conversation(
        &self,
        principal: &Principal,
        episode_id: &str,
        conversation: &UpstreamConversation,
    ) -> Result<(), StoreError> {
        let (principal, episode_id, conversation) = (
            principal.clone(),
            episode_id.to_owned(),
            conversation.clone(),
        );
        self.run(move |conn, _| upstream::save(conn, &principal, &episode_id, &conversation))
            .await
    }
}

#[async_trait]
impl LinkStore for EmbeddedStore {
    async fn link(
        &self,
        principal: &Principal,
        server: &str,
    ) -> Result<Option<AccountLink>, StoreError> {
        let (principal, server) = (principal.clone(), server.to_owned());
        self.read(move |conn| account_links::link(conn, &principal, &server))
            .await
    }

    async fn links(&self, principal: &Principal) -> Result<Vec<AccountLink>, StoreError> {
        let principal = principal.clone();
        self.read(move |conn| account_links::links(conn, &principal))
            .await
    }

    async fn save_link(&self, principal: &Principal, link: &AccountLink) -> Result<(), StoreError> {
        let (principal, link) = (principal.clone(), link.clone());
        self.run(move |conn, _| account_links::save(conn, &principal, &link))
            .await
    }

    async fn delete_link(&self, principal: &Principal, server: &str) -> Result<bool, StoreError> {
        let (principal, server) = (principal.clone(), server.to_owned());
        self.run(move |conn, _| account_links::delete(conn, &principal, &server))
            .await
    }
}

#[async_trait]
impl MemoryStore for EmbeddedStore {
    async fn save(
        &self,
        principal: &Principal,
        memory: &Memory,
        embedding: Option<&Embedding>,
        cap: usize,
    ) -> Result<Saved, StoreError> {
        let (principal, memory, embedding) =
            (principal.clone(), memory.clone(), embedding.cloned());
        let cache = Arc::clone(&self.shared.recall_cache);
        self.run(move |conn, _| {
            let saved = recall::save(conn, &principal, &memory, embedding.as_ref(), cap);
            cache.touch();
            saved
        })
        .await
    }

    async fn memory(
        &self,
        principal: &Principal,
        id: &MemoryId,
    ) -> Result<Option<Memory>, StoreError> {
        let (principal, id) = (principal.clone(), id.clone());
        self.read(move |conn| recall::memory(conn, &principal, &id))
            .await
    }

    async fn list(
        &self,
        principal: &Principal,
        filter: &MemoryFilter,
        limit: usize,
    ) -> Result<Vec<Memory>, StoreError> {
        let (principal, filter) = (principal.clone(), filter.clone());
        self.read(move |conn| recall::list(conn, &principal, &filter, limit))
            .await
    }

    async fn search_text(
        &self,
        principal: &Principal,
        terms: &[String],
        filter: &MemoryFilter,
        limit: usize,
    ) -> Result<Vec<Scored>, StoreError> {
        let (principal, terms, filter) = (principal.clone(), terms.to_vec(), filter.clone());
        self.read(move |conn| recall::search_text(conn, &principal, &terms, &filter, limit))
            .await
    }

    async fn search_vector(
        &self,
        principal: &Principal,
        query: &Embedding,
        filter: &MemoryFilter,
        limit: usize,
    ) -> Result<Vec<Scored>, StoreError> {
        let (principal, query, filter) = (principal.clone(), query.clone(), filter.clone());
        self.read(move |conn| recall::search_vector(conn, &principal, &query, &filter, limit))
            .await
    }

    async fn forget(&self, principal: &Principal, id: &MemoryId) -> Result<u64, StoreError> {
        let (principal, id) = (principal.clone(), id.clone());
        let cache = Arc::clone(&self.shared.recall_cache);
        self.run(move |conn, _| {
            let forgotten = recall::forget(conn, &principal, &id);
            cache.touch();
            forgotten
        })
        .await
    }

    async fn forget_all(&self, principal: &Principal) -> Result<u64, StoreError> {
        let principal = principal.clone();
        let cache = Arc::clone(&self.shared.recall_cache);
        self.run(move |conn, _| {
            let forgotten = recall::forget_all(conn, &principal);
            cache.touch();
            forgotten
        })
        .await
    }

    async fn setting(&self, principal: &Principal) -> Result<Option<bool>, StoreError> {
        let principal = principal.clone();
        self.read(move |conn| recall::setting(conn, &principal))
            .await
    }

    async fn set_setting(
        &self,
        principal: &Principal,
        enabled: Option<bool>,
    ) -> Result<(), StoreError> {
        let principal = principal.clone();
        let cache = Arc::clone(&self.shared.recall_cache);
        self.run(move |conn, _| {
            let set = recall::set_setting(conn, &principal, enabled);
            cache.touch();
            set
        })
        .await
    }

    async fn status(&self, principal: &Principal, now_ms: u64) -> Result<Status, StoreError> {
        let cache = &self.shared.recall_cache;
        // Taken before the file is read: what is kept is never older than its stamp.
        let stamp = cache.stamp();
        if let Some(status) = cache.status(stamp, principal) {
            return Ok(status.at(now_ms));
        }
        let who = principal.clone();
        let status = self.read(move |conn| recall::status(conn, &who)).await?;
        cache.keep_status(stamp, principal, status);
        Ok(status.at(now_ms))
    }

    async fn search_both(
        &self,
        principal: &Principal,
        terms: &[String],
        query: Option<&Embedding>,
        filter: &MemoryFilter,
        limit: usize,
    ) -> Result<Both, StoreError> {
        let cache = &self.shared.recall_cache;
        let stamp = cache.stamp();
        let cached = cache.shelf(stamp, principal);
        let (who, terms, query, filter) = (
            principal.clone(),
            terms.to_vec(),
            query.cloned(),
            filter.clone(),
        );
        let (both, read_now) = self
            .read(move |conn| {
                recall::search_both(conn, &who, &terms, query.as_ref(), &filter, limit, cached)
            })
            .await?;
        if let Some(shelf) = read_now {
            cache.keep_shelf(stamp, principal, shelf);
        }
        Ok(both)
    }
}
