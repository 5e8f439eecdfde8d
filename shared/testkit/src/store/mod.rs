//! The store conformance suite (D-24 … D-26, D-42): one set of scenarios every [`Store`]
//! must pass.
//!
//! Each scenario is a `pub async fn` over `&dyn Store` that starts from an empty store and
//! panics on the first broken expectation. An adapter runs the whole suite with one line:
//!
//! ```ignore
//! baton_testkit::store_conformance!(MyStore::new());
//! ```
//!
//! The expression is evaluated once per scenario, so every scenario gets a fresh store. It
//! may be a store or any [`StoreFixture`], e.g. a store together with the temporary folder
//! it lives in.

// Test code: a failed expectation is meant to panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use baton_core::ports::store::Store;

pub mod account_links;
pub mod checkpoint;
pub mod claim;
pub mod commit;
pub mod memory;
pub mod picture;
pub mod read;
pub mod records;
pub mod upstream;

/// What a scenario runs against: a store plus whatever must outlive it (a temp folder).
pub trait StoreFixture {
    /// The store under test.
    fn store(&self) -> &dyn Store;
}

impl<S: Store> StoreFixture for S {
    fn store(&self) -> &dyn Store {
        self
    }
}

/// Expands to one `#[tokio::test]` per conformance scenario, each on a fresh store built by
/// the given expression (a [`Store`] or a [`StoreFixture`]). The calling crate needs
/// `tokio` (with `macros` and `rt`) and `baton-runtime`'s `testkit` feature in its tests.
#[macro_export]
macro_rules! store_conformance {
    ($make:expr) => {
        $crate::store_conformance!(@scenarios $make;
            claim::new_episode_claim_creates_an_empty_owned_episode,
            claim::completed_duplicate_replays_its_record,
            claim::running_duplicate_is_in_flight,
            claim::second_turn_on_a_claimed_episode_is_busy,
            claim::expired_lease_can_be_taken_over,
            claim::expired_duplicate_can_be_claimed_again,
            claim::release_frees_the_episode,
            claim::a_released_turn_sent_again_runs_on_its_own_episode,
            claim::turn_ids_are_namespaced_by_principal,
            claim::taken_new_episode_id_is_a_conflict,
            claim::reused_turn_id_with_another_request_is_a_mismatch,
            claim::interrupted_turn_restarts_on_its_own_episode,
            commit::stale_commit_conflicts_and_retry_at_next_seq_succeeds,
            commit::refused_commit_loses_nothing,
            commit::turn_id_commits_only_once,
            commit::reused_body_key_conflicts_and_keeps_the_first_body,
            commit::commit_is_visible_to_the_next_claim_and_to_turns,
            commit::episode_state_round_trips,
            read::other_principal_sees_not_found,
            read::unknown_episode_is_not_found,
            read::turns_are_oldest_first_and_limited,
            read::bodies_round_trip,
            picture::pictures_round_trip_with_their_turn,
            picture::another_principal_cannot_read_a_picture,
            picture::a_picture_sent_again_commits_and_reads_back,
            picture::a_refused_commit_leaves_its_pictures_unreadable,
            picture::a_picture_not_named_by_its_sha256_is_refused,
            memory::turns_after_a_seq_are_oldest_first_and_limited,
            memory::a_summary_round_trips_and_clears_the_due_mark,
            memory::due_episodes_are_listed_longest_due_first,
            memory::a_turn_committed_meanwhile_makes_the_summary_conflict,
            memory::another_principal_cannot_summarise,
            upstream::a_conversation_round_trips_per_specialist_and_is_refreshed,
            upstream::an_expired_conversation_is_still_returned_for_the_caller_to_judge,
            upstream::another_principal_neither_reads_nor_writes_a_conversation,
            upstream::a_conversation_survives_commits_and_summaries,
            checkpoint::a_checkpoint_round_trips_and_is_replaced,
            checkpoint::only_the_claiming_turn_saves_and_a_commit_removes_it,
            checkpoint::a_turn_claimed_again_finds_its_checkpoint,
            checkpoint::a_large_checkpoint_is_kept_whole,
            account_links::a_link_round_trips_is_listed_by_server_and_replaced,
            account_links::another_principal_neither_reads_nor_removes_a_link,
            account_links::a_removed_link_is_gone,
        );
    };
    (@scenarios $make:expr; $($module:ident :: $name:ident),* $(,)?) => {
        $(
            #[::tokio::test]
            async fn $name() {
                let fixture = $make;
                $crate::store::$module::$name(
                    $crate::store::StoreFixture::store(&fixture),
                )
                .await;
            }
        )*
    };
}
