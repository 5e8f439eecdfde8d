//! Memories, subject pointers and the count as DynamoDB attribute maps, and back.

use aws_sdk_dynamodb::types::AttributeValue;
use baton_core::recall::{Memory, MemoryId, MemoryKind, MemorySource, Origin, terms};
use baton_core::{Principal, ports::store::StoreError};
use sha2::{Digest, Sha256};

use super::error;
use super::keys;

/// One item as the SDK gives it.
pub(crate) use crate::attributes::{Item, n, s, string};

/// A non-negative integer attribute, if present.
///
/// # Errors
/// `Corrupt` when present but not such a number.
pub(crate) fn number(item: &Item, name: &str) -> Result<Option<u64>, StoreError> {
    crate::attributes::number(item, name, &error::FAULTS)
}

/// A signed integer attribute (the count may dip below zero for a moment under races).
pub(crate) fn signed(item: &Item, name: &str) -> Result<Option<i64>, StoreError> {
    crate::attributes::number(item, name, &error::FAULTS)
}

fn required<'a>(item: &'a Item, name: &str) -> Result<&'a str, StoreError> {
    string(item, name).ok_or_else(|| error::undecodable(name, &"missing or not a string"))
}

fn id(value: &str, what: &str) -> Result<MemoryId, StoreError> {
    MemoryId::parse(value).map_err(|e| error::undecodable(what, &e))
}

/// The stems a memory is indexed under: the stems of its subject's and statement's
/// content words (what `query_terms` can ask for), each short enough for a sort key. A
/// memory without one gets the empty stem, which no search asks for: every saved memory
/// then leaves a posting, so erasing everything finds what a failed save left.
pub(crate) fn stems(memory: &Memory) -> Vec<String> {
    let text = format!("{} {}", memory.subject, memory.text);
    let mut out: Vec<String> = Vec::new();
    for word in terms::content_words(&text) {
        let stem = terms::stem(&word);
        if stem.len() <= keys::MAX_STEM_BYTES && !out.iter().any(|s| s == stem) {
            out.push(stem.to_owned());
        }
    }
    if out.is_empty() {
        out.push(String::new());
    }
    out
}

/// A statement's fingerprint: a hash of its words, so that the subject pointer can tell
/// "the same words again" ([`baton_core::recall::same_statement`]) without a copy of them.
pub(crate) fn statement_hash(text: &str) -> String {
    let mut hasher = Sha256::new();
    for word in terms::words(text) {
        hasher.update(word.as_bytes());
        // A separator keeps ("ab", "c") apart from ("a", "bc").
        hasher.update([0u8]);
    }
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The memory item of `memory`, indexed under `stems`, its vector made by `model` (if
/// one is stored), replacing `replaces` (if it does).
pub(crate) fn memory_item(
    principal: &Principal,
    memory: &Memory,
    stems: &[String],
    model: Option<&str>,
    replaces: Option<&MemoryId>,
) -> Item {
    let mut item = Item::from([
        (keys::PK.to_owned(), s(keys::partition(principal.as_str()))),
        (keys::SK.to_owned(), s(keys::item_sk(memory.id.as_str()))),
        (keys::OWNER.to_owned(), s(principal.as_str())),
        (keys::KIND.to_owned(), s(memory.kind.as_str())),
        (keys::SUBJECT.to_owned(), s(memory.subject.clone())),
        (keys::TEXT.to_owned(), s(memory.text.clone())),
        (keys::ORIGIN.to_owned(), s(memory.origin.as_str())),
        (keys::CREATED_MS.to_owned(), n(memory.created_ms)),
        (
            keys::STEMS.to_owned(),
            AttributeValue::L(stems.iter().map(|t| s(t.clone())).collect()),
        ),
    ]);
    let optional = [
        (keys::EPISODE_ID, memory.source.episode_id.as_deref()),
        (keys::TURN_ID, memory.source.turn_id.as_deref()),
        (keys::SPECIALIST, memory.source.specialist.as_deref()),
        (keys::MODEL, model),
        (keys::REPLACES, replaces.map(MemoryId::as_str)),
        (
            keys::REPLACED_BY,
            memory.replaced_by.as_ref().map(MemoryId::as_str),
        ),
    ];
    for (name, value) in optional {
        if let Some(value) = value {
            item.insert(name.to_owned(), s(value));
        }
    }
    if let Some(end) = memory.expires_ms {
        item.insert(keys::EXPIRES_MS.to_owned(), n(end));
    }
    item
}

/// A memory item read back.
#[derive(Debug, Clone)]
pub(crate) struct Stored {
    pub memory: Memory,
    /// The stems its postings are under.
    pub stems: Vec<String>,
    /// The model of its vector, if the index holds one.
    pub model: Option<String>,
    /// The memory it replaced.
    pub replaces: Option<MemoryId>,
}

/// Decodes a memory item, if it is the principal's (its `owner`).
///
/// # Errors
/// `Corrupt` when it does not decode.
pub(crate) fn stored(item: &Item, principal: &Principal) -> Result<Option<Stored>, StoreError> {
    if string(item, keys::OWNER) != Some(principal.as_str()) {
        return Ok(None);
    }
    let sk = required(item, keys::SK)?;
    let memory_id = sk
        .strip_prefix(keys::ITEM_PREFIX)
        .ok_or_else(|| error::undecodable("a memory's key", &sk))?;
    let kind = required(item, keys::KIND)?;
    let origin = required(item, keys::ORIGIN)?;
    let optional = |name: &str| string(item, name).map(str::to_owned);
    let memory = Memory {
        id: id(memory_id, "a memory's id")?,
        kind: MemoryKind::parse(kind)
            .ok_or_else(|| error::undecodable("a memory's kind", &kind))?,
        subject: required(item, keys::SUBJECT)?.to_owned(),
        text: required(item, keys::TEXT)?.to_owned(),
        origin: Origin::parse(origin)
            .ok_or_else(|| error::undecodable("a memory's origin", &origin))?,
        source: MemorySource {
            episode_id: optional(keys::EPISODE_ID),
            turn_id: optional(keys::TURN_ID),
            specialist: optional(keys::SPECIALIST),
        },
        created_ms: number(item, keys::CREATED_MS)?
            .ok_or_else(|| error::undecodable(keys::CREATED_MS, &"missing"))?,
        expires_ms: number(item, keys::EXPIRES_MS)?,
        replaced_by: string(item, keys::REPLACED_BY)
            .map(|r| id(r, "a memory's replacement"))
            .transpose()?,
    };
    let stems = match item.get(keys::STEMS) {
        Some(AttributeValue::L(list)) => list
            .iter()
            .map(|v| match v {
                AttributeValue::S(stem) => Ok(stem.clone()),
                _ => Err(error::undecodable("a memory's stems", &"not a string")),
            })
            .collect::<Result<Vec<_>, _>>()?,
        _ => return Err(error::undecodable("a memory's stems", &"missing")),
    };
    Ok(Some(Stored {
        memory,
        stems,
        model: optional(keys::MODEL),
        replaces: string(item, keys::REPLACES)
            .map(|r| id(r, "a memory's predecessor"))
            .transpose()?,
    }))
}

/// A subject's pointer: its current memory, that memory's words' hash and end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pointer {
    pub current: MemoryId,
    pub statement: String,
    pub expires_ms: Option<u64>,
}

impl Pointer {
    /// Whether the memory it points at is still current at `now_ms` (it may have
    /// expired: then a new statement of the subject does not replace it).
    pub(crate) fn live_at(&self, now_ms: u64) -> bool {
        self.expires_ms.is_none_or(|end| end > now_ms)
    }
}

/// The pointer item of `memory`'s subject, pointing at it.
pub(crate) fn pointer_item(principal: &Principal, memory: &Memory) -> Item {
    let mut item = Item::from([
        (keys::PK.to_owned(), s(keys::partition(principal.as_str()))),
        (keys::SK.to_owned(), s(keys::subject_sk(&memory.subject))),
        (keys::OWNER.to_owned(), s(principal.as_str())),
        (keys::CURRENT.to_owned(), s(memory.id.as_str())),
        (keys::STATEMENT.to_owned(), s(statement_hash(&memory.text))),
    ]);
    if let Some(end) = memory.expires_ms {
        item.insert(keys::EXPIRES_MS.to_owned(), n(end));
    }
    item
}

/// Decodes a subject pointer.
///
/// # Errors
/// `Corrupt` when it does not decode.
pub(crate) fn pointer(item: &Item) -> Result<Pointer, StoreError> {
    Ok(Pointer {
        current: id(required(item, keys::CURRENT)?, "a subject's memory")?,
        statement: required(item, keys::STATEMENT)?.to_owned(),
        expires_ms: number(item, keys::EXPIRES_MS)?,
    })
}

/// One posting: `stem` occurs in memory `id`, saved at `created_ms` (kept on the posting
/// so that ranking needs no read of the memory).
pub(crate) fn posting_item(principal: &Principal, stem: &str, memory: &Memory) -> Item {
    Item::from([
        (keys::PK.to_owned(), s(keys::partition(principal.as_str()))),
        (
            keys::SK.to_owned(),
            s(keys::term_sk(stem, memory.id.as_str())),
        ),
        (keys::CREATED_MS.to_owned(), n(memory.created_ms)),
    ])
}

/// The primary key of the principal's item `sk`.
pub(crate) fn key(principal: &Principal, sk: String) -> Item {
    Item::from([
        (keys::PK.to_owned(), s(keys::partition(principal.as_str()))),
        (keys::SK.to_owned(), s(sk)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_core::recall::NewMemory;

    fn memory(text: &str) -> Memory {
        NewMemory {
            kind: MemoryKind::Fact,
            subject: "dog".into(),
            text: text.into(),
            origin: Origin::Said,
            source: MemorySource {
                episode_id: Some("ep_1".into()),
                turn_id: None,
                specialist: Some("support".into()),
            },
            ttl_ms: Some(5),
        }
        .build(10)
        .unwrap()
    }

    #[test]
    fn a_memory_round_trips_for_its_owner_only() {
        let alice = Principal::new("alice").unwrap();
        let m = memory("my dog is called Biscuit");
        let stems = stems(&m);
        let item = memory_item(&alice, &m, &stems, Some("m1"), None);
        let back = stored(&item, &alice).unwrap().unwrap();
        assert_eq!(back.memory, m);
        assert_eq!(back.stems, ["dog", "call", "biscuit"]);
        assert_eq!(back.model.as_deref(), Some("m1"));
        let bob = Principal::new("bob").unwrap();
        assert!(stored(&item, &bob).unwrap().is_none());
    }

    #[test]
    fn a_damaged_item_is_corrupt_not_a_panic() {
        let alice = Principal::new("alice").unwrap();
        let m = memory("my dog is called Biscuit");
        let mut item = memory_item(&alice, &m, &stems(&m), None, None);
        item.insert(keys::KIND.into(), s("poem"));
        assert!(matches!(stored(&item, &alice), Err(StoreError::Corrupt(_))));
    }

    #[test]
    fn the_same_words_have_the_same_fingerprint() {
        assert_eq!(
            statement_hash("My dog is called biscuit."),
            statement_hash("my dog is called Biscuit")
        );
        assert_ne!(statement_hash("ab c"), statement_hash("a bc"));
    }

    #[test]
    fn a_memory_without_content_words_still_leaves_a_posting() {
        let m = Memory {
            subject: "it".into(),
            ..memory("it is")
        };
        assert_eq!(stems(&m), [""]);
    }
}
