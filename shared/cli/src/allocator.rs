//! How the server build's allocator (jemalloc) gives memory back (docs/benchmark.md,
//! "Memory under 1,000 streams").
//!
//! jemalloc serves every allocation of the process, SQLite's included (the feature that
//! replaces the C `malloc`), so one policy covers all of it:
//! - freed pages go back as soon as whole pages of them are free ([`return_freed_memory_soon`]);
//! - every thread allocates from one arena, built in (`.cargo/config.toml`): the store's
//!   blocking threads come and go, and each new one would otherwise take an arena of its own
//!   that keeps pages and metadata after it;
//! - once the thread that serves turns has been quiet for a while, it hands back the objects
//!   its thread cache still holds ([`give_back_when_quiet`]), which otherwise pin their pages
//!   until the next burst.

use std::time::Duration;

use tikv_jemalloc_ctl::{Access as _, AsName as _};

/// How long the serving thread allocates nothing before its cache is handed back.
const QUIET: Duration = Duration::from_secs(1);

/// Freed memory goes back to the system as soon as whole pages of it are free, instead of
/// after jemalloc's 10 s decay: the pages a burst of turns freed are not still held while the
/// next allocations take fresh ones. At 1,000 streams the peak is about 5 MiB lower than
/// with a 1 s decay, for no CPU a turn that the benchmark can tell apart.
pub(crate) fn return_freed_memory_soon() {
    const DECAY_MS: isize = 0;
    if let Err(e) = tikv_jemalloc_ctl::background_thread::write(true) {
        tracing::warn!(error = %e, "the allocator's background purging could not start");
    }
    let arenas = tikv_jemalloc_ctl::arenas::narenas::read().unwrap_or(0);
    for kind in ["dirty", "muzzy"] {
        // Arenas made from now on, then each one already made (one not yet in use refuses).
        let name = format!("arenas.{kind}_decay_ms\0");
        if let Err(e) = name.as_str().name().write(DECAY_MS) {
            tracing::warn!(error = %e, "the allocator's decay time could not be set");
        }
        for arena in 0..arenas {
            let name = format!("arena.{arena}.{kind}_decay_ms\0");
            if let Err(e) = name.as_str().name().write(DECAY_MS) {
                tracing::debug!(arena, error = %e, "an arena's decay time was not set");
            }
        }
    }
}

/// Runs for the life of the server, on the thread that serves turns (the runtime has one):
/// when that thread has allocated nothing for [`QUIET`] after allocating, its thread cache
/// is emptied back into the arena, so that the pages it pinned can go back.
pub(crate) async fn give_back_when_quiet() {
    let Some(start) = allocated_here() else {
        tracing::debug!("the allocator does not count this thread's allocations");
        return;
    };
    let mut quiet = Quiet::new(start);
    loop {
        tokio::time::sleep(QUIET).await;
        let Some(now) = allocated_here() else { return };
        if quiet.flush_now(now) {
            flush_thread_cache();
            // What the flush itself took is not activity.
            quiet.flushed(allocated_here().unwrap_or(now));
        }
    }
}

/// The bytes the calling thread has allocated since it started (a counter that only grows).
fn allocated_here() -> Option<u64> {
    tikv_jemalloc_ctl::thread::allocatedp::read()
        .ok()
        .map(tikv_jemalloc_ctl::thread::ThreadLocal::get)
}

/// Empties the calling thread's cache: jemalloc has no safe call for it, but turning the
/// cache off flushes it, and turning it back on starts an empty one.
fn flush_thread_cache() {
    let name = b"thread.tcache.enabled\0".name();
    if let Err(e) = name.write(false).and_then(|()| name.write(true)) {
        tracing::debug!(error = %e, "the thread cache was not flushed");
    }
}

/// Decides when to flush, from a thread's allocation counter read every [`QUIET`].
#[derive(Debug)]
struct Quiet {
    last: u64,
    /// Nothing was allocated since the last flush.
    flushed: bool,
}

impl Quiet {
    fn new(allocated: u64) -> Self {
        Self {
            last: allocated,
            flushed: true,
        }
    }

    /// Whether to flush now: the counter moved before the last reading and not since.
    fn flush_now(&mut self, allocated: u64) -> bool {
        if allocated != self.last {
            self.last = allocated;
            self.flushed = false;
            return false;
        }
        !self.flushed
    }

    /// The flush is done; `allocated` is the counter after it.
    fn flushed(&mut self, allocated: u64) {
        self.last = allocated;
        self.flushed = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_that_never_allocates_is_never_flushed() {
        let mut q = Quiet::new(100);
        assert!(!q.flush_now(100));
        assert!(!q.flush_now(100));
    }

    #[test]
    fn a_burst_is_flushed_once_after_one_quiet_reading() {
        let mut q = Quiet::new(100);
        assert!(!q.flush_now(500), "still allocating");
        assert!(!q.flush_now(900), "still allocating");
        assert!(q.flush_now(900), "quiet since the last reading");
        q.flushed(910);
        assert!(!q.flush_now(910), "flushed already");
        assert!(!q.flush_now(910));
        assert!(!q.flush_now(950), "a new burst");
        assert!(q.flush_now(950));
    }

    #[test]
    fn the_flush_reaches_the_allocator() {
        // Without the jemalloc feature this module is not built; with it, the calls the
        // server makes must be ones jemalloc accepts.
        flush_thread_cache();
        let enabled: bool = b"thread.tcache.enabled\0".name().read().unwrap();
        assert!(enabled);
    }

    #[test]
    fn the_allocator_is_built_with_one_arena() {
        // From `.cargo/config.toml`; MALLOC_CONF may say otherwise at run time.
        if std::env::var_os("MALLOC_CONF").is_some() {
            return;
        }
        let arenas: u32 = b"opt.narenas\0".name().read().unwrap();
        assert_eq!(arenas, 1);
        let spawned = std::thread::spawn(|| -> u32 { b"thread.arena\0".name().read().unwrap() });
        assert_eq!(
            spawned.join().unwrap(),
            0,
            "a new thread took an arena of its own"
        );
    }
}
