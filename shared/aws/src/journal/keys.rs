//! The table's keys and attribute names (D-24): the one place that spells them.
//!
//! The history writer reads the same items, so these strings are a contract: change them
//! only together with `functions/history-writer` and the SAM template.

/// Partition key attribute.
pub(crate) const PK: &str = "pk";
/// Sort key attribute.
pub(crate) const SK: &str = "sk";

/// `META` sort key.
pub(crate) const META: &str = "META";
/// Highest possible `TURN#` sort key: `~` sorts after every digit.
pub(crate) const TURN_MAX: &str = "TURN#~";

// Attribute names shared by several items.
pub(crate) const OWNER: &str = "owner";
pub(crate) const STATE: &str = "state";
pub(crate) const TURN_ID: &str = "turn_id";
pub(crate) const SEQ: &str = "seq";
pub(crate) const CREATED_MS: &str = "created_ms";
pub(crate) const EPISODE_ID: &str = "episode_id";
pub(crate) const LEASE_EXPIRES_MS: &str = "lease_expires_ms";
/// TTL attribute, epoch seconds.
pub(crate) const EXPIRES_AT: &str = "expires_at";

// META only.
pub(crate) const VERSION: &str = "version";
pub(crate) const UPDATED_MS: &str = "updated_ms";
pub(crate) const ROLLING_SUMMARY: &str = "rolling_summary";
pub(crate) const LEASE_TURN: &str = "lease_turn";
pub(crate) const LEASE_PRINCIPAL: &str = "lease_principal";

// TURN only.
pub(crate) const RECORD: &str = "record";

// BODY only.
pub(crate) const JSON: &str = "json";
pub(crate) const S3_KEY: &str = "s3_key";

// The sparse compaction index (written by the history writer; declared by the schema).
pub(crate) const COMPACTION_INDEX: &str = "compaction-due";
pub(crate) const DUE_PK: &str = "due_pk";
pub(crate) const COMPACTION_DUE: &str = "compaction_due";

/// TURN-ID `state` while the turn runs.
pub(crate) const CLAIMED: &str = "claimed";
/// TURN-ID `state` once the turn committed.
pub(crate) const DONE: &str = "done";

/// DynamoDB's limit on a sort key, in bytes.
const MAX_SORT_KEY_BYTES: usize = 1024;
/// DynamoDB's limit on a partition key, in bytes.
const MAX_PARTITION_KEY_BYTES: usize = 2048;

/// `EP#<episode_id>`.
pub(crate) fn episode_pk(episode_id: &str) -> String {
    format!("EP#{episode_id}")
}

/// `PR#<principal>`.
pub(crate) fn principal_pk(principal: &str) -> String {
    format!("PR#{principal}")
}

/// `TURN#<seq>`, zero-padded to 10 digits so that sort order is seq order.
pub(crate) fn turn_sk(seq: u64) -> String {
    format!("TURN#{seq:010}")
}

/// `TID#<turn_id>`.
pub(crate) fn turn_id_sk(turn_id: &str) -> String {
    format!("TID#{turn_id}")
}

/// `BODY#<key>`: the key is taken literally (any characters).
pub(crate) fn body_sk(key: &str) -> String {
    format!("BODY#{key}")
}

/// Where a large body goes in the bucket: `bodies/<episode_id>/<turn_id>/<n>.json`.
pub(crate) fn body_object_key(episode_id: &str, turn_id: &str, n: usize) -> String {
    format!("bodies/{episode_id}/{turn_id}/{n}.json")
}

/// Whether a partition and sort key fit DynamoDB's key limits (checked before sending,
/// so an oversized id is a plain refusal rather than a validation failure).
pub(crate) fn fits(pk: &str, sk: &str) -> bool {
    pk.len() <= MAX_PARTITION_KEY_BYTES && sk.len() <= MAX_SORT_KEY_BYTES
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turn_sort_keys_sort_in_seq_order_and_below_the_bound() {
        let keys: Vec<String> = [1, 9, 10, 99, 1_000_000_000].map(turn_sk).to_vec();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted);
        assert_eq!(turn_sk(7), "TURN#0000000007");
        assert!(
            keys.iter()
                .all(|k| k.as_str() < TURN_MAX && k.as_str() > META)
        );
    }

    #[test]
    fn items_the_turns_query_must_skip_sort_outside_its_range() {
        // The turns query reads `META ..= TURN#~`; bodies and the history writer's items
        // must fall outside it.
        for sk in ["AGG", "AUDIT#0000000001#offers", "BODY#zzz", "BODY#~"] {
            assert!(sk < META, "{sk}");
        }
    }

    #[test]
    fn oversized_keys_do_not_fit() {
        assert!(fits("EP#e", &body_sk(&"k".repeat(1_019))));
        assert!(!fits("EP#e", &body_sk(&"k".repeat(1_020))));
        assert!(!fits(&episode_pk(&"e".repeat(2_046)), META));
    }
}
