//! A planned turn cut short at each wave boundary and resumed, on the embedded store (the
//! scenario every store runs).

use std::sync::Arc;

use baton_local::embedded_store::EmbeddedStore;

#[path = "../../../../runtime/tests/shared/planner_resume.rs"]
mod scenario;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_cut_after_each_wave_resumes_without_running_a_node_twice() {
    for cut in [1, 2, 3] {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(EmbeddedStore::open(dir.path()).unwrap());
        scenario::cut_after_wave_and_resume(store, cut).await;
    }
}
