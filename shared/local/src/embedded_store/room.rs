//! Room on the disk that holds the store: a turn that cannot be saved is refused before
//! it runs, and a commit that cannot fit before it writes.

use std::path::Path;

use baton_core::ports::store::StoreError;

use super::error;

/// The free space below which the store takes no new turn and is not ready: room for an
/// ordinary turn's record and bodies, so that a turn that starts can be saved.
pub const MIN_FREE_BYTES: u64 = 1 << 20;

/// What writing `bytes` of records and bodies takes on the disk: each page goes to the
/// write-ahead log, later to the file, and bodies are files of their own.
pub(crate) fn written_bytes(bytes: usize) -> u64 {
    (bytes as u64).saturating_mul(2)
}

/// The bytes an unprivileged writer may still use on the disk holding `path`.
pub fn free_bytes(path: &Path) -> rustix::io::Result<u64> {
    rustix::fs::statvfs(path).map(|fs| fs.f_bavail.saturating_mul(fs.f_frsize))
}

/// Whether the disk holding `path` has `need` bytes free beyond [`MIN_FREE_BYTES`].
pub(crate) fn check(path: &Path, need: u64) -> Result<(), StoreError> {
    match free_bytes(path) {
        Ok(free) => {
            if free < need.saturating_add(MIN_FREE_BYTES) {
                tracing::warn!(
                    free_bytes = free,
                    need_bytes = need,
                    "embedded store: not enough room on the disk"
                );
                return Err(error::disk_full());
            }
            Ok(())
        }
        // Not knowing is no reason to refuse: a write that fails says so itself.
        Err(e) => {
            tracing::debug!(error = %e, "embedded store: free space unknown");
            Ok(())
        }
    }
}
