//! Every store scenario, run against a fresh embedded store in a temporary folder.

use super::TempStore;

baton_testkit::store_conformance!(TempStore::new());
