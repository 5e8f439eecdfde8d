//! Body keys and episode ids are names, never paths: nothing lands outside `bodies/`.

use std::path::{Path, PathBuf};

use baton_core::ports::store::TurnStore as _;
use baton_local::embedded_store::{BODIES_DIR, EmbeddedStore, OWNERS_DIR};
use baton_testkit::store::records::{
    body, claim_ok, claim_request, commit_of, principal, turn_record,
};
use serde_json::json;

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[tokio::test]
async fn keys_and_episode_ids_with_path_characters_stay_inside_the_bodies_folder() {
    let outer = tempfile::tempdir().unwrap();
    let store_dir = outer.path().join("a").join("store");
    let store = EmbeddedStore::open(&store_dir).unwrap();
    let alice = principal("alice");
    let episode = "../../../ep";
    let keys = [
        "../x",
        "../../../../escaped",
        "/tmp/absolute",
        "..\\..\\windows",
        "..",
        ".",
        "",
    ];

    claim_ok(&store, claim_request(&alice, None, episode, "t-1", 1_000)).await;
    let bodies = keys.iter().map(|k| body(k, json!({ "key": k }))).collect();
    let commit = commit_of(&alice, 0, turn_record(episode, 1, "t-1", 1_001), bodies);
    assert_eq!(store.commit(&commit).await, Ok(1));

    for key in keys {
        assert_eq!(
            store.body(&alice, episode, key).await,
            Ok(json!({ "key": key })),
            "{key:?}"
        );
    }
    let bodies_dir = store_dir.join(BODIES_DIR);
    let files = files_under(outer.path());
    let stray: Vec<_> = files
        .iter()
        .filter(|f| {
            !f.starts_with(&bodies_dir)
                && f.parent() != Some(store_dir.as_path())
                && f.parent() != Some(store_dir.join(OWNERS_DIR).as_path())
        })
        .collect();
    assert!(stray.is_empty(), "files outside the store: {stray:?}");
    let body_files = files.iter().filter(|f| f.starts_with(&bodies_dir)).count();
    assert_eq!(body_files, keys.len());
}

#[tokio::test]
async fn a_commit_that_does_not_land_leaves_no_body_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(dir.path()).unwrap();
    let alice = principal("alice");
    claim_ok(&store, claim_request(&alice, None, "ep", "t-1", 1_000)).await;
    let bodies = vec![body("a", json!(1)), body("b", json!(2))];
    // Run against a version the episode is not at: refused after the bodies were written.
    let stale = commit_of(
        &alice,
        5,
        turn_record("ep", 6, "t-1", 1_001),
        bodies.clone(),
    );
    assert_eq!(
        store.commit(&stale).await,
        Err(baton_core::ports::store::StoreError::Conflict)
    );
    assert_eq!(
        files_under(&dir.path().join(BODIES_DIR)),
        Vec::<PathBuf>::new()
    );

    let landed = commit_of(&alice, 0, turn_record("ep", 1, "t-1", 1_001), bodies);
    assert_eq!(store.commit(&landed).await, Ok(1));
    assert_eq!(files_under(&dir.path().join(BODIES_DIR)).len(), 2);
    assert_eq!(store.body(&alice, "ep", "b").await, Ok(json!(2)));
}
