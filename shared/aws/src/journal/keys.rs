//! The table's keys and attribute names (D-24): the one place that spells them, for the
//! journal and for the history writer, which reads the journal's items from the table's
//! stream and writes its own (`AGG`, `AUDIT#…`) beside them. The SAM template's stream
//! filter and index repeat some of these strings: change them together.

/// Partition key attribute.
pub const PK: &str = "pk";
/// Sort key attribute.
pub const SK: &str = "sk";

/// Prefix of an episode's partition key.
pub const EPISODE_PREFIX: &str = "EP#";
/// Prefix of a principal's partition key (the turn-id items).
pub const PRINCIPAL_PREFIX: &str = "PR#";
/// `META` sort key: the episode itself.
pub const META: &str = "META";
/// Prefix of a committed turn's sort key.
pub const TURN_PREFIX: &str = "TURN#";
/// Highest possible `TURN#` sort key: `~` sorts after every digit.
pub const TURN_MAX: &str = "TURN#~";
/// Prefix of a turn-id item's sort key.
pub const TURN_ID_PREFIX: &str = "TID#";
/// Prefix of a body's sort key.
pub const BODY_PREFIX: &str = "BODY#";
/// Prefix of a specialist's upstream conversation's sort key. Sorts after [`TURN_MAX`], so
/// the turns queries never read it; the history writer's stream filter passes only `TURN#`
/// and `BODY#` items, so it never sees it either.
pub const UPSTREAM_PREFIX: &str = "UPSTREAM#";
/// Prefix of a running turn's checkpoint's sort key. Sorts below [`META`], so the turns
/// queries never read it; the history writer's stream filter passes only `TURN#` and
/// `BODY#` items, so it never sees it either.
pub const CHECKPOINT_PREFIX: &str = "CKPT#";
/// Prefix of a picture's sort key (D-42): `IMG#<sha256>`, one item per picture an
/// episode's turns sent, naming its S3 object. Sorts below [`META`], so the turns queries
/// never read it; the history writer's stream filter passes only `TURN#` and `BODY#`
/// items, so it never sees it either.
pub const PICTURE_PREFIX: &str = "IMG#";
/// `AGG` sort key: the episode's aggregates (history writer).
pub const AGG: &str = "AGG";
/// Sort key prefix of a principal's account links (D-37), under `PR#<principal>`.
pub const LINK_PREFIX: &str = "LINK#";
/// A link's sealed tokens.
pub const SEALED: &str = "sealed";
/// Prefix of an audit item's sort key (history writer).
pub const AUDIT_PREFIX: &str = "AUDIT#";

/// Owner principal (META, TURN, BODY, UPSTREAM).
pub const OWNER: &str = "owner";
/// META: the episode state as JSON; TURN-ID: `claimed` or `done`.
pub const STATE: &str = "state";
/// The turn id (TURN, BODY, CKPT).
pub const TURN_ID: &str = "turn_id";
/// A turn's position in its episode (TURN, TURN-ID once done).
pub const SEQ: &str = "seq";
/// Creation time, epoch ms.
pub const CREATED_MS: &str = "created_ms";
/// The episode a turn id ran on (TURN-ID).
pub const EPISODE_ID: &str = "episode_id";
/// What the turn's request asked, hashed (TURN-ID).
pub const FINGERPRINT: &str = "fingerprint";
/// End of a lease, epoch ms (META, TURN-ID while claimed).
pub const LEASE_EXPIRES_MS: &str = "lease_expires_ms";
/// TTL attribute, epoch seconds (TURN-ID while claimed, UPSTREAM).
pub const EXPIRES_AT: &str = "expires_at";

/// META: committed turns, the optimistic-concurrency version.
pub const VERSION: &str = "version";
/// META: last commit time, epoch ms.
pub const UPDATED_MS: &str = "updated_ms";
/// META: the summary compaction wrote, as JSON text.
pub const SUMMARY: &str = "summary";
/// META: the turn holding the lease.
pub const LEASE_TURN: &str = "lease_turn";
/// META: the principal holding the lease.
pub const LEASE_PRINCIPAL: &str = "lease_principal";

/// TURN: the turn record as JSON.
pub const RECORD: &str = "record";

/// UPSTREAM: the chat service's id for the conversation.
pub const CONVERSATION_ID: &str = "conversation_id";
/// UPSTREAM: the exchange awaiting the user's reply (absent when there is none).
pub const PENDING: &str = "pending";
/// UPSTREAM: when the conversation stops being usable, epoch ms (what the caller checks;
/// `expires_at` only lets DynamoDB delete it some time after).
pub const EXPIRES_MS: &str = "expires_ms";

/// BODY: the body as JSON, when inline.
pub const JSON: &str = "json";
/// BODY: the S3 object holding the body, when it is too large to be inline; CKPT: the
/// one holding the checkpoint, likewise; PICTURE: the one holding the picture, always.
pub const S3_KEY: &str = "s3_key";
/// PICTURE: what the picture's bytes are (`image/png` …), also its object's Content-Type.
pub const MEDIA_TYPE: &str = "media_type";
/// CKPT: the checkpoint's text, when inline.
pub const CHECKPOINT: &str = "checkpoint";
/// META: the S3 object holding the episode state, when it is too large for the item (a
/// long conversation waiting for the user); then META has no `state`.
pub const STATE_S3_KEY: &str = "state_s3_key";

/// The sparse compaction index: META items due for compaction, with their `owner`.
pub const COMPACTION_INDEX: &str = "compaction-due";
/// The index's partition key, present (always [`DUE`]) only on episodes due: set by the
/// commit of a turn that leaves its episode due, removed when a summary is saved.
pub const DUE_PK: &str = "due_pk";
/// The index's one partition value.
pub const DUE: &str = "DUE";
/// The index's sort key: when the episode became due, epoch ms.
pub const COMPACTION_DUE: &str = "compaction_due";

/// TURN-ID `state` while the turn runs.
pub const CLAIMED: &str = "claimed";
/// TURN-ID `state` once the turn committed.
pub const DONE: &str = "done";

/// DynamoDB's limit on a sort key, in bytes.
const MAX_SORT_KEY_BYTES: usize = 1024;
/// DynamoDB's limit on a partition key, in bytes.
const MAX_PARTITION_KEY_BYTES: usize = 2048;

/// `EP#<episode_id>`.
pub fn episode_pk(episode_id: &str) -> String {
    format!("{EPISODE_PREFIX}{episode_id}")
}

/// `PR#<principal>`.
pub fn principal_pk(principal: &str) -> String {
    format!("{PRINCIPAL_PREFIX}{principal}")
}

/// `TURN#<seq>`, zero-padded to 10 digits so that sort order is seq order.
pub fn turn_sk(seq: u64) -> String {
    format!("{TURN_PREFIX}{seq:010}")
}

/// `TID#<turn_id>`.
pub fn turn_id_sk(turn_id: &str) -> String {
    format!("{TURN_ID_PREFIX}{turn_id}")
}

/// `BODY#<key>`: the key is taken literally (any characters).
pub fn body_sk(key: &str) -> String {
    format!("{BODY_PREFIX}{key}")
}

/// `IMG#<sha256>`: the picture's SHA-256 is taken literally.
pub fn picture_sk(sha256: &str) -> String {
    format!("{PICTURE_PREFIX}{sha256}")
}

/// `LINK#<server>`: the server's key is taken literally.
pub fn link_sk(server: &str) -> String {
    format!("{LINK_PREFIX}{server}")
}

/// `UPSTREAM#<agent_id>`: the agent id is taken literally.
pub fn upstream_sk(agent_id: &str) -> String {
    format!("{UPSTREAM_PREFIX}{agent_id}")
}

/// `CKPT#<turn_id>`: the turn id is taken literally.
pub fn checkpoint_sk(turn_id: &str) -> String {
    format!("{CHECKPOINT_PREFIX}{turn_id}")
}

/// `AUDIT#<seq, 10 digits>#<agent_id>`: one per sub-agent execution, in turn order; a
/// specialist asked again in the same turn gets `#<n>` after, from 2.
pub fn audit_sk(seq: u64, agent_id: &str, nth: usize) -> String {
    match nth {
        0 | 1 => format!("{AUDIT_PREFIX}{seq:010}#{agent_id}"),
        n => format!("{AUDIT_PREFIX}{seq:010}#{agent_id}#{n}"),
    }
}

/// Where a large body goes in the bucket: `bodies/<episode_id>/<turn_id>/<n>.json`.
pub fn body_object_key(episode_id: &str, turn_id: &str, n: usize) -> String {
    format!("bodies/{episode_id}/{turn_id}/{n}.json")
}

/// Where a picture goes in the bucket: `pictures/<episode_id>/<sha256>`. Named by its
/// content, so the same picture sent again is written over itself with the same bytes.
/// Not under `bodies/`, whose lifecycle rule expires what is there: a picture is kept as
/// long as the turn that names it.
pub fn picture_object_key(episode_id: &str, sha256: &str) -> String {
    format!("pictures/{episode_id}/{sha256}")
}

/// Where a large checkpoint goes in the bucket:
/// `bodies/<episode_id>/<turn_id>/checkpoint-<unique>.json`, a new object per save (so a
/// refused save never overwrites the one in use). Under `bodies/`, whose lifecycle rule
/// expires the objects a later save or the turn's commit left unreferenced.
pub fn checkpoint_object_key(episode_id: &str, turn_id: &str, unique: &str) -> String {
    format!("bodies/{episode_id}/{turn_id}/checkpoint-{unique}.json")
}

/// Where an episode state too large for META goes in the bucket:
/// `bodies/<episode_id>/<turn_id>/state.json`, one per committing turn (a turn id commits
/// once, so no commit overwrites the object another META names). Under `bodies/`: the
/// lifecycle rule expires it, and everything in a state is short-lived (a wait lasts a
/// day, the rate window minutes).
pub fn state_object_key(episode_id: &str, turn_id: &str) -> String {
    format!("bodies/{episode_id}/{turn_id}/state.json")
}

/// Whether a partition and sort key fit DynamoDB's key limits (checked before sending,
/// so an oversized id is a plain refusal rather than a validation failure).
pub fn fits(pk: &str, sk: &str) -> bool {
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
        // The turns query reads `META ..= TURN#~`; bodies, checkpoints, pictures and the
        // history writer's items must fall outside it.
        for sk in [
            "AGG",
            "AUDIT#0000000001#offers",
            "BODY#zzz",
            "BODY#~",
            "CKPT#~",
            "IMG#~",
        ] {
            assert!(sk < META, "{sk}");
        }
    }

    #[test]
    fn upstream_keys_sort_above_every_turn() {
        // The turns queries end at `TURN#~`; a conversation is never read as a turn.
        for agent in ["", "!", "a", "~", "support"] {
            assert!(upstream_sk(agent).as_str() > TURN_MAX, "{agent}");
        }
        assert_eq!(upstream_sk("support"), "UPSTREAM#support");
    }

    #[test]
    fn audit_keys_sort_by_turn() {
        assert_eq!(audit_sk(7, "billing", 1), "AUDIT#0000000007#billing");
        assert_eq!(audit_sk(7, "billing", 2), "AUDIT#0000000007#billing#2");
        assert!(audit_sk(9, "z", 1) < audit_sk(10, "a", 1));
    }

    #[test]
    fn oversized_keys_do_not_fit() {
        assert!(fits("EP#e", &body_sk(&"k".repeat(1_019))));
        assert!(!fits("EP#e", &body_sk(&"k".repeat(1_020))));
        assert!(!fits(&episode_pk(&"e".repeat(2_046)), META));
    }
}
