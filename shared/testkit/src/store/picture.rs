//! Picture scenarios (D-42): the pictures a turn's user sent are committed with the turn,
//! read back by SHA-256 by their owner only, and stored once however often they are sent.

use baton_core::picture::{MediaType, Picture};
use baton_core::ports::store::{Claim, Commit, Store, StoreError, StoredPicture};

use super::records::{
    claim_ok, claim_request, commit_of, picture, principal, run_turn, turn_record,
};

/// What reading `sent` back must give.
fn stored(sent: &Picture) -> StoredPicture {
    StoredPicture {
        media_type: sent.media_type,
        bytes: sent.bytes.clone(),
    }
}

/// A commit of turn `seq` (`turn_id`) of `ep-1` by alice against `expected_version`,
/// carrying `pictures`, which its record names.
fn commit_with(expected_version: u64, seq: u64, turn_id: &str, pictures: Vec<Picture>) -> Commit {
    let mut record = turn_record("ep-1", seq, turn_id, seq * 1_000 + 1);
    record.pictures = pictures.iter().map(Picture::reference).collect();
    Commit {
        pictures,
        ..commit_of(&principal("alice"), expected_version, record, vec![])
    }
}

/// Two pictures committed with a turn read back byte for byte, with their media types; the
/// record names them; a SHA-256 no turn sent, or any other text, is "not found".
pub async fn pictures_round_trip_with_their_turn(store: &dyn Store) {
    let alice = principal("alice");
    let meta = claim_ok(store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
    let (photo, drawing) = (picture(MediaType::Jpeg, 10), picture(MediaType::Png, 20));
    assert_ne!(photo.sha256, drawing.sha256);
    let commit = commit_with(meta.version, 1, "t-1", vec![photo.clone(), drawing.clone()]);
    assert_eq!(store.commit(&commit).await, Ok(1));

    for sent in [&photo, &drawing] {
        assert_eq!(
            store.picture(&alice, "ep-1", &sent.sha256).await,
            Ok(stored(sent)),
            "{sent:?}"
        );
    }
    assert_eq!(
        store.turns(&alice, "ep-1", usize::MAX).await,
        Ok(vec![commit.record.clone()])
    );
    let unknown = picture(MediaType::Png, 30);
    for sha256 in [
        unknown.sha256.as_str(),
        &photo.sha256.to_uppercase(),
        "",
        "../x",
        &format!("{}/../{}", photo.sha256, drawing.sha256),
    ] {
        assert_eq!(
            store.picture(&alice, "ep-1", sha256).await,
            Err(StoreError::NotFound),
            "{sha256:?}"
        );
    }
    // A replay of the turn does not disturb its pictures.
    let replay = claim_request(&alice, Some("ep-1"), "unused", "t-1", 2_000);
    assert!(matches!(store.claim(replay).await, Ok(Claim::Completed(_))));
    assert_eq!(
        store.picture(&alice, "ep-1", &photo.sha256).await,
        Ok(stored(&photo))
    );
}

/// Another principal's episode, or one nobody created, holds no picture for the caller.
pub async fn another_principal_cannot_read_a_picture(store: &dyn Store) {
    let alice = principal("alice");
    let bob = principal("bob");
    claim_ok(store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
    let sent = picture(MediaType::Png, 40);
    let commit = commit_with(0, 1, "t-1", vec![sent.clone()]);
    assert_eq!(store.commit(&commit).await, Ok(1));
    run_turn(store, &bob, "ep-2", true, "b-1", 1_500).await;

    assert_eq!(
        store.picture(&bob, "ep-1", &sent.sha256).await,
        Err(StoreError::NotFound)
    );
    assert_eq!(
        store.picture(&bob, "ep-2", &sent.sha256).await,
        Err(StoreError::NotFound),
        "a picture belongs to its episode"
    );
    assert_eq!(
        store.picture(&alice, "ep-404", &sent.sha256).await,
        Err(StoreError::NotFound)
    );
    assert_eq!(
        store.picture(&alice, "ep-1", &sent.sha256).await,
        Ok(stored(&sent))
    );
}

/// The same picture sent again in a later turn (and twice in one turn) commits: it is the
/// same picture, stored once, and reads back as it was.
pub async fn a_picture_sent_again_commits_and_reads_back(store: &dyn Store) {
    let alice = principal("alice");
    claim_ok(store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
    let (again, new) = (picture(MediaType::Png, 50), picture(MediaType::Jpeg, 60));
    assert_eq!(
        store
            .commit(&commit_with(0, 1, "t-1", vec![again.clone()]))
            .await,
        Ok(1)
    );

    claim_ok(
        store,
        claim_request(&alice, Some("ep-1"), "unused", "t-2", 2_000),
    )
    .await;
    let second = commit_with(1, 2, "t-2", vec![again.clone(), new.clone(), again.clone()]);
    assert_eq!(store.commit(&second).await, Ok(2));

    assert_eq!(
        store.picture(&alice, "ep-1", &again.sha256).await,
        Ok(stored(&again))
    );
    assert_eq!(
        store.picture(&alice, "ep-1", &new.sha256).await,
        Ok(stored(&new))
    );
    assert_eq!(store.episode(&alice, "ep-1").await.unwrap().version, 2);
}

/// A commit that fails leaves its pictures unreadable, and nothing in the way of the retry
/// that carries them.
pub async fn a_refused_commit_leaves_its_pictures_unreadable(store: &dyn Store) {
    let alice = principal("alice");
    let kept = picture(MediaType::Png, 70);
    claim_ok(store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
    assert_eq!(
        store
            .commit(&commit_with(0, 1, "t-1", vec![kept.clone()]))
            .await,
        Ok(1)
    );

    claim_ok(
        store,
        claim_request(&alice, Some("ep-1"), "unused", "t-2", 2_000),
    )
    .await;
    let lost = picture(MediaType::Jpeg, 80);
    let stale = commit_with(0, 1, "t-2", vec![lost.clone(), kept.clone()]);
    assert_eq!(store.commit(&stale).await, Err(StoreError::Conflict));
    assert_eq!(
        store.picture(&alice, "ep-1", &lost.sha256).await,
        Err(StoreError::NotFound),
        "a refused commit's picture is not part of the episode"
    );
    assert_eq!(
        store.picture(&alice, "ep-1", &kept.sha256).await,
        Ok(stored(&kept)),
        "a refused commit does not disturb a picture the episode held"
    );
    // At the episode's version, refused only at the end: its turn id has committed already.
    let reused = commit_with(1, 2, "t-1", vec![lost.clone()]);
    assert_eq!(store.commit(&reused).await, Err(StoreError::Conflict));
    assert_eq!(
        store.picture(&alice, "ep-1", &lost.sha256).await,
        Err(StoreError::NotFound),
        "a commit refused at the end leaves its picture unreadable too"
    );

    let retry = commit_with(1, 2, "t-2", vec![lost.clone(), kept.clone()]);
    assert_eq!(store.commit(&retry).await, Ok(2));
    assert_eq!(
        store.picture(&alice, "ep-1", &lost.sha256).await,
        Ok(stored(&lost))
    );
    assert_eq!(
        store.picture(&alice, "ep-1", &kept.sha256).await,
        Ok(stored(&kept))
    );
}

/// A picture whose name is not its SHA-256 in hex (which a store builds file names and
/// object keys from) is refused with its turn: nothing of the turn is saved.
pub async fn a_picture_not_named_by_its_sha256_is_refused(store: &dyn Store) {
    let alice = principal("alice");
    let meta = claim_ok(store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
    let mut misnamed = picture(MediaType::Png, 90);
    misnamed.sha256 = "../../escaped".into();
    let commit = commit_with(meta.version, 1, "t-1", vec![misnamed.clone()]);
    assert!(
        matches!(store.commit(&commit).await, Err(StoreError::Unavailable(_))),
        "refused"
    );
    assert_eq!(store.episode(&alice, "ep-1").await.unwrap().version, 0);
    assert_eq!(
        store.picture(&alice, "ep-1", &misnamed.sha256).await,
        Err(StoreError::NotFound)
    );
}
