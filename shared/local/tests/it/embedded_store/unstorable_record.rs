//! A record JSON cannot hold is refused at commit, so it never breaks later reads.

use baton_core::ports::store::StoreError;
use baton_core::ports::store::TurnStore as _;
use baton_testkit::store::records::{
    claim_ok, claim_request, commit_of, principal, run_turn, turn_record,
};

#[tokio::test]
async fn a_record_with_a_non_finite_cost_is_refused_and_the_episode_stays_readable() {
    let fixture = super::TempStore::new();
    let store = &fixture.store;
    let alice = principal("alice");
    let first = run_turn(store, &alice, "ep-1", true, "t-1", 1_000).await;
    claim_ok(
        store,
        claim_request(&alice, Some("ep-1"), "unused", "t-2", 2_000),
    )
    .await;

    let mut record = turn_record("ep-1", 2, "t-2", 2_001);
    record.cost_usd = f64::NAN;
    let outcome = store.commit(&commit_of(&alice, 1, record, vec![])).await;
    assert!(
        matches!(outcome, Err(StoreError::Unavailable(_))),
        "{outcome:?}"
    );

    assert_eq!(
        store.turns(&alice, "ep-1", usize::MAX).await,
        Ok(vec![first])
    );
    let retry = turn_record("ep-1", 2, "t-2", 2_002);
    assert_eq!(
        store.commit(&commit_of(&alice, 1, retry, vec![])).await,
        Ok(2)
    );
}
