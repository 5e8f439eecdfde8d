//! The embedded store: the shared conformance suite, then what only a file-backed store can
//! get wrong (reopening, damaged or locked files, body paths, picture files, damaged
//! upstream rows).

mod body_paths;
mod conformance;
mod damaged_file;
mod locked_file;
mod memory_cache;
mod picture_files;
mod planner_resume;
mod reopen;
mod unstorable_record;
mod upstream_rows;

use std::time::Duration;

use baton_core::ports::store::Store;
use baton_local::embedded_store::EmbeddedStore;
use baton_testkit::StoreFixture;
use tempfile::TempDir;

/// An embedded store in its own temporary folder, removed after the store closes.
pub(crate) struct TempStore {
    pub(crate) store: EmbeddedStore,
    pub(crate) dir: TempDir,
}

impl TempStore {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open(dir.path()).unwrap();
        TempStore { store, dir }
    }

    /// A second store on the same folder, as another process would open it.
    pub(crate) fn reopen(&self, busy_timeout: Duration) -> EmbeddedStore {
        EmbeddedStore::open_with_busy_timeout(self.dir.path(), busy_timeout).unwrap()
    }
}

impl StoreFixture for TempStore {
    fn store(&self) -> &dyn Store {
        &self.store
    }
}
