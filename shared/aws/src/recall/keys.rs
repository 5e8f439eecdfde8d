//! Where long-term memory lives in the journal's table and in the vector index: the one
//! place that spells its sort keys, attribute names and vector keys.
//!
//! Every item is under the principal's own partition key, `PR#<principal>` (the journal's
//! turn-id items and account links are there too), so one principal's memory is one item
//! collection, and the turn function's role, which may delete only under `PR#`, can erase
//! it. The sort keys all start with `MEM#` except the setting's (`MEMSET`), so that
//! erasing everything is one Query of `MEM#` that leaves the setting; none starts with
//! `TURN#` or `BODY#`, so the history writer's stream filter never passes them.

use sha2::{Digest, Sha256};

use crate::journal::keys;

/// What every erasable memory item's sort key starts with.
pub const DATA_PREFIX: &str = "MEM#";
/// A memory (current or history): `MEM#I#<memory id>`.
pub const ITEM_PREFIX: &str = "MEM#I#";
/// A subject's pointer to its current memory: `MEM#S#<subject key>`.
pub const SUBJECT_PREFIX: &str = "MEM#S#";
/// A full-text posting: `MEM#T#<stem>#<memory id>`.
pub const TERM_PREFIX: &str = "MEM#T#";
/// The count of the principal's memories that nothing replaced.
pub const COUNT: &str = "MEM#N";
/// The principal's own setting: outside [`DATA_PREFIX`], so erasing everything keeps it.
pub const SETTING: &str = "MEMSET";

/// Memory item: its kind (`fact` …).
pub const KIND: &str = "kind";
/// Memory item: its subject key.
pub const SUBJECT: &str = "subject";
/// Memory item: the statement.
pub const TEXT: &str = "text";
/// Memory item: `said` or `extracted`.
pub const ORIGIN: &str = "origin";
/// Memory item: the specialist whose answer it came from.
pub const SPECIALIST: &str = "specialist";
/// Memory item: the memory that replaced it (set: history).
pub const REPLACED_BY: &str = "replaced_by";
/// Memory item: the memory it replaced (the chain that erasing it erases too).
pub const REPLACES: &str = "replaces";
/// Memory item: the stems it was indexed under (its postings, to erase them).
pub const STEMS: &str = "stems";
/// Memory item: the model of its vector, when it has one in the index.
pub const MODEL: &str = "model";
/// Subject pointer: the current memory's id.
pub const CURRENT: &str = "current";
/// Subject pointer: a hash of the current statement's words (no copy of the words).
pub const STATEMENT: &str = "statement";
/// Count item: memories nothing replaced (expired ones included).
pub const LIVE: &str = "live";
/// Setting item: on or off.
pub const ENABLED: &str = "enabled";

/// Re-exported journal names the memory items share (same meaning, same spelling).
pub use keys::{CREATED_MS, EPISODE_ID, EXPIRES_MS, OWNER, PK, SK, TURN_ID, principal_pk};

/// A stem longer than this many bytes is not indexed (a sort key holds 1,024).
pub const MAX_STEM_BYTES: usize = 200;

/// `PR#<principal>`: the journal's principal partition.
pub fn partition(principal: &str) -> String {
    principal_pk(principal)
}

/// `MEM#I#<id>`.
pub fn item_sk(id: &str) -> String {
    format!("{ITEM_PREFIX}{id}")
}

/// `MEM#S#<subject key>`.
pub fn subject_sk(subject: &str) -> String {
    format!("{SUBJECT_PREFIX}{subject}")
}

/// `MEM#T#<stem>#`: what every posting of `stem` starts with. Indexed stems never hold
/// `#` (they are runs of letters and digits), so one stem's prefix never takes in
/// another's postings.
pub fn term_prefix(stem: &str) -> String {
    format!("{TERM_PREFIX}{stem}#")
}

/// `MEM#T#<stem>#<id>`.
pub fn term_sk(stem: &str, id: &str) -> String {
    format!("{}{id}", term_prefix(stem))
}

/// The memory id at the end of a posting's sort key.
pub fn posting_id(sk: &str) -> Option<&str> {
    sk.strip_prefix(TERM_PREFIX)?.rsplit('#').next()
}

/// The principal as the vector index knows it: 32 hex digits of its SHA-256, so that
/// neither vector keys nor metadata name anyone.
pub fn pseudonym(principal: &str) -> String {
    let digest = Sha256::digest(principal.as_bytes());
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// A memory's vector key: `<pseudonym>/<memory id>`, unique per principal and memory
/// (two principals saving the same words at the same time have the same memory id).
pub fn vector_key(pseudonym: &str, id: &str) -> String {
    format!("{pseudonym}/{id}")
}

/// The memory id of one of the principal's vector keys; `None` for another's.
pub fn vector_id<'a>(pseudonym: &str, key: &'a str) -> Option<&'a str> {
    key.strip_prefix(pseudonym)?.strip_prefix('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_keys_cannot_meet_the_journals() {
        // The journal's keys under PR# are TID# and LINK#; its stream filter passes TURN#
        // and BODY#. Every memory key starts with MEM, and the setting is outside MEM#.
        for sk in [
            item_sk("mem_1"),
            subject_sk("dog"),
            term_sk("dog", "mem_1"),
            COUNT.to_owned(),
        ] {
            assert!(sk.starts_with(DATA_PREFIX), "{sk}");
            for journal in ["TID#", "LINK#", "TURN#", "BODY#"] {
                assert!(!sk.starts_with(journal), "{sk}");
            }
        }
        assert!(!SETTING.starts_with(DATA_PREFIX));
    }

    #[test]
    fn postings_name_their_memory_and_keep_stems_apart() {
        let sk = term_sk("dog", "mem_0123");
        assert_eq!(posting_id(&sk), Some("mem_0123"));
        assert!(sk.starts_with(&term_prefix("dog")));
        assert!(!sk.starts_with(&term_prefix("do")));
    }

    #[test]
    fn vector_keys_belong_to_one_principal() {
        let alice = pseudonym("alice");
        let bob = pseudonym("bob");
        assert_eq!(alice.len(), 32);
        assert_ne!(alice, bob);
        let key = vector_key(&alice, "mem_1");
        assert_eq!(vector_id(&alice, &key), Some("mem_1"));
        assert_eq!(vector_id(&bob, &key), None);
    }
}
