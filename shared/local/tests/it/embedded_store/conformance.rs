//! Every store scenario and every memory store scenario, run against a fresh embedded store
//! in a temporary folder.

use super::TempStore;

baton_testkit::store_conformance!(TempStore::new());

impl baton_testkit::recall::MemoryFixture for TempStore {
    fn memory_store(&self) -> &dyn baton_core::ports::memory::MemoryStore {
        &self.store
    }
}

/// Every memory store scenario (D-43), likewise.
mod memory {
    use super::TempStore;

    baton_testkit::memory_store_conformance!(TempStore::new());
}
