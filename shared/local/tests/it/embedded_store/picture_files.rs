//! Pictures are files beside their episode's bodies: one per picture however often it is
//! sent, none left by a commit that does not land.

use std::path::{Path, PathBuf};

use baton_core::picture::MediaType;
use baton_core::ports::store::{StoreError, TurnStore as _};
use baton_local::embedded_store::{BODIES_DIR, EmbeddedStore};
use baton_testkit::store::records::{
    claim_ok, claim_request, commit_of, picture, principal, turn_record,
};

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return files;
    };
    for entry in entries {
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
async fn a_picture_is_one_file_however_often_it_is_sent_and_a_refused_commit_leaves_none() {
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(dir.path()).unwrap();
    let pictures_dir = dir.path().join(BODIES_DIR).join("ep").join("pictures");
    let alice = principal("alice");
    let (photo, drawing) = (picture(MediaType::Jpeg, 1), picture(MediaType::Png, 2));

    claim_ok(&store, claim_request(&alice, None, "ep", "t-1", 1_000)).await;
    let mut first = commit_of(&alice, 0, turn_record("ep", 1, "t-1", 1_001), vec![]);
    first.pictures = vec![photo.clone(), photo.clone()];
    assert_eq!(store.commit(&first).await, Ok(1));
    let files = files_under(&pictures_dir);
    assert_eq!(files.len(), 1, "{files:?}");
    let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with(&photo.sha256) && name.ends_with(".jpg"),
        "{name}"
    );

    claim_ok(
        &store,
        claim_request(&alice, Some("ep"), "unused", "t-2", 2_000),
    )
    .await;
    // Refused after its files were written: they go with it.
    let mut stale = commit_of(&alice, 5, turn_record("ep", 6, "t-2", 2_001), vec![]);
    stale.pictures = vec![photo.clone(), drawing.clone()];
    assert_eq!(store.commit(&stale).await, Err(StoreError::Conflict));
    assert_eq!(files_under(&pictures_dir), files);

    // Landed: the copy of the picture the episode held goes, the new one stays.
    let mut landed = commit_of(&alice, 1, turn_record("ep", 2, "t-2", 2_001), vec![]);
    landed.pictures = vec![photo.clone(), drawing.clone()];
    assert_eq!(store.commit(&landed).await, Ok(2));
    let after = files_under(&pictures_dir);
    assert_eq!(after.len(), 2, "{after:?}");
    assert!(after.contains(&files[0]), "the first file is kept");
    let stored = store.picture(&alice, "ep", &photo.sha256).await.unwrap();
    assert_eq!(stored.bytes, photo.bytes);
    let stored = store.picture(&alice, "ep", &drawing.sha256).await.unwrap();
    assert_eq!(
        (stored.media_type, stored.bytes),
        (MediaType::Png, drawing.bytes)
    );
}

#[tokio::test]
async fn a_picture_file_gone_from_the_disk_is_corrupt_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(dir.path()).unwrap();
    let alice = principal("alice");
    let sent = picture(MediaType::Png, 3);
    claim_ok(&store, claim_request(&alice, None, "ep", "t-1", 1_000)).await;
    let mut commit = commit_of(&alice, 0, turn_record("ep", 1, "t-1", 1_001), vec![]);
    commit.pictures = vec![sent.clone()];
    assert_eq!(store.commit(&commit).await, Ok(1));
    for file in files_under(&dir.path().join(BODIES_DIR)) {
        std::fs::remove_file(file).unwrap();
    }
    assert!(matches!(
        store.picture(&alice, "ep", &sent.sha256).await,
        Err(StoreError::Corrupt(_))
    ));
}
