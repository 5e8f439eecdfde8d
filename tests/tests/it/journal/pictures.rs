//! The DynamoDB journal's pictures (D-42): always S3 objects, however small, named by their
//! episode and SHA-256, with an `IMG#` item the commit's transaction writes and every read
//! checks first.

use baton_core::picture::MediaType;

use super::*;

#[tokio::test]
async fn a_picture_goes_to_s3_with_its_media_type_and_an_item_names_it() {
    let j = journal().await;
    let alice = principal("alice");
    claim_ok(&j.store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
    let sent = baton_testkit::store::records::picture(MediaType::Png, 1);
    assert!(
        sent.bytes.len() < 1_024,
        "a small picture: {}",
        sent.bytes.len()
    );
    let mut commit = commit_of(&alice, 0, turn_record("ep-1", 1, "t-1", 1_001), vec![]);
    commit.pictures = vec![sent.clone()];

    let (version, requests) = j.counted(j.store.commit(&commit)).await;
    assert_eq!(version, Ok(1));
    assert_eq!(
        requests.to_string(),
        "DynamoDB.GetItem=1 DynamoDB.TransactWriteItems=1 S3.PutObject=1"
    );
    let object_key = format!("pictures/ep-1/{}", sent.sha256);
    let item = j
        .item("EP#ep-1", &format!("IMG#{}", sent.sha256))
        .await
        .unwrap();
    let mut attributes: Vec<&str> = item.keys().map(String::as_str).collect();
    attributes.sort_unstable();
    assert_eq!(
        attributes,
        ["media_type", "owner", "pk", "s3_key", "sk"],
        "the bytes are never in the item"
    );
    assert_eq!(text(&item, "media_type"), "image/png");
    assert_eq!(text(&item, "s3_key"), object_key);
    assert_eq!(text(&item, "owner"), "alice");
    assert_eq!(j.object(&object_key).await.unwrap(), sent.bytes.as_ref());
    let head =
        j.s3.client()
            .head_object()
            .bucket(baton_tests::dynamodb_local::BODIES_BUCKET)
            .key(&object_key)
            .send()
            .await
            .unwrap();
    assert_eq!(head.content_type(), Some("image/png"));

    let (read, requests) = j
        .counted(j.store.picture(&alice, "ep-1", &sent.sha256))
        .await;
    let read = read.unwrap();
    assert_eq!(
        (read.media_type, read.bytes),
        (MediaType::Png, sent.bytes.clone())
    );
    assert_eq!(requests.to_string(), "DynamoDB.GetItem=1 S3.GetObject=1");
    // The item is read first: no picture of another's, or none at all, reaches the bucket.
    let unknown = "0".repeat(64);
    for (who, sha256) in [
        (principal("mallory"), sent.sha256.as_str()),
        (alice.clone(), unknown.as_str()),
    ] {
        let (read, requests) = j.counted(j.store.picture(&who, "ep-1", sha256)).await;
        assert_eq!(read.map(|_| ()), Err(StoreError::NotFound));
        assert_eq!(requests.to_string(), "DynamoDB.GetItem=1");
    }
}

#[tokio::test]
async fn a_picture_whose_object_is_gone_is_corrupt_not_a_panic() {
    let j = journal().await;
    let alice = principal("alice");
    claim_ok(&j.store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
    let sent = baton_testkit::store::records::picture(MediaType::Jpeg, 2);
    let mut commit = commit_of(&alice, 0, turn_record("ep-1", 1, "t-1", 1_001), vec![]);
    commit.pictures = vec![sent.clone()];
    assert_eq!(j.store.commit(&commit).await, Ok(1));
    j.delete_object(&format!("pictures/ep-1/{}", sent.sha256))
        .await;
    assert!(matches!(
        j.store.picture(&alice, "ep-1", &sent.sha256).await,
        Err(StoreError::Corrupt(_))
    ));
}

#[tokio::test]
async fn a_picture_that_cannot_be_stored_fails_its_commit_and_leaves_no_trace() {
    let j = LocalJournal::start_with(|c| c, JournalBucket::Broken).await;
    let alice = principal("alice");
    claim_ok(&j.store, claim_request(&alice, None, "ep-1", "t-1", 1_000)).await;
    let sent = baton_testkit::store::records::picture(MediaType::Png, 3);
    let mut commit = commit_of(&alice, 0, turn_record("ep-1", 1, "t-1", 1_001), vec![]);
    commit.pictures = vec![sent.clone()];

    let (result, requests) = j.counted(j.store.commit(&commit)).await;
    assert!(
        matches!(result, Err(StoreError::Unavailable(_))),
        "{result:?}"
    );
    assert_eq!(requests.get("DynamoDB", "TransactWriteItems"), 0);
    assert_eq!(j.sort_keys("EP#ep-1").await, vec!["META"]);
    assert_eq!(
        j.store.picture(&alice, "ep-1", &sent.sha256).await,
        Err(StoreError::NotFound)
    );
}
