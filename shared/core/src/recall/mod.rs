//! Long-term memory across conversations (D-43): what a principal told Baton, or what a
//! specialist found that stays true, kept beyond the episode it was said in.
//!
//! A memory is one statement with a kind and a subject. One subject holds one current
//! statement: a newer one of the same subject replaces it, and the older one is kept as
//! history (never a second truth). Everything here is pure: the items, their checks and
//! ids, the retrieval's fusion ([`fuse`]), the embedder that needs no model ([`embed`]),
//! the prompt block ([`block`]) and what extraction asks and reads back ([`extract`]).
//! Stores implement the `MemoryStore` port (`ports/memory.rs`).

pub mod block;
pub mod embed;
pub mod extract;
pub mod fuse;
pub mod terms;

#[cfg(test)]
mod tests;

use std::fmt;

use serde::{Deserialize, Serialize};

/// A memory's text at most, in characters: a statement, not a document.
pub const MAX_TEXT_CHARS: usize = 500;
/// A subject at most, in characters.
pub const MAX_SUBJECT_CHARS: usize = 80;
/// Current memories a principal keeps at most by default; past it a save lets the oldest
/// extracted one go (one the user saved in words goes only when none other is left).
pub const DEFAULT_MAX_MEMORIES: usize = 10_000;

/// What kind of thing a memory says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryKind {
    /// Something true of the user ("my dog is called Biscuit").
    Fact,
    /// What the user likes or wants things to be like ("I prefer oat milk").
    Preference,
    /// What the user is working towards ("I'm saving for a Trek FX 2").
    Goal,
    /// What a specialist found that stays true (a rejected receipt's id, a redemption).
    Finding,
}

impl MemoryKind {
    /// Every kind, in a fixed order.
    pub const ALL: [MemoryKind; 4] = [
        MemoryKind::Fact,
        MemoryKind::Preference,
        MemoryKind::Goal,
        MemoryKind::Finding,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryKind::Fact => "fact",
            MemoryKind::Preference => "preference",
            MemoryKind::Goal => "goal",
            MemoryKind::Finding => "finding",
        }
    }

    /// The kind of a wire name.
    pub fn parse(name: &str) -> Option<MemoryKind> {
        MemoryKind::ALL
            .into_iter()
            .find(|k| k.as_str().eq_ignore_ascii_case(name.trim()))
    }
}

impl fmt::Display for MemoryKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A memory's id: `mem_` and 32 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct MemoryId(String);

/// Why a string is not a memory id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a memory id is `mem_` and 32 hex digits")]
pub struct InvalidMemoryId;

impl MemoryId {
    /// The id of a memory with this content, from these parts: the same statement saved
    /// again from the same source at the same time has the same id, so a save that is
    /// retried stores one memory.
    pub fn derive(parts: &[&str]) -> MemoryId {
        use sha2::{Digest, Sha256};
        let mut hasher = Sha256::new();
        for part in parts {
            hasher.update(part.as_bytes());
            // A separator keeps ("ab", "c") apart from ("a", "bc").
            hasher.update([0u8]);
        }
        let digest = hasher.finalize();
        let mut id = String::with_capacity(36);
        id.push_str("mem_");
        for byte in &digest[..16] {
            id.push(hex_digit(byte >> 4));
            id.push(hex_digit(byte & 0xf));
        }
        MemoryId(id)
    }

    /// Checks an id given from outside (a path, a tool argument).
    ///
    /// # Errors
    /// Anything but `mem_` and 32 lowercase hex digits.
    pub fn parse(id: &str) -> Result<MemoryId, InvalidMemoryId> {
        let hex = id.strip_prefix("mem_").ok_or(InvalidMemoryId)?;
        let ok = hex.len() == 32 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if ok {
            Ok(MemoryId(id.to_owned()))
        } else {
            Err(InvalidMemoryId)
        }
    }

    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

fn hex_digit(nibble: u8) -> char {
    char::from(b"0123456789abcdef"[usize::from(nibble & 0xf)])
}

impl TryFrom<String> for MemoryId {
    type Error = InvalidMemoryId;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        MemoryId::parse(&value)
    }
}

impl From<MemoryId> for String {
    fn from(value: MemoryId) -> Self {
        value.0
    }
}

impl fmt::Display for MemoryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// How a memory came to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// The user asked for it in words ("remember that…"), through the memory skills.
    Said,
    /// Extraction found it in a committed turn.
    Extracted,
}

impl Origin {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Said => "said",
            Origin::Extracted => "extracted",
        }
    }

    /// The origin of a wire name.
    pub fn parse(name: &str) -> Option<Origin> {
        [Origin::Said, Origin::Extracted]
            .into_iter()
            .find(|o| o.as_str() == name)
    }
}

/// Where a memory was said or found.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct MemorySource {
    /// The episode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub episode_id: Option<String>,
    /// The turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// The specialist whose answer it came from (a finding), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub specialist: Option<String>,
}

/// One memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Memory {
    /// Its id.
    pub id: MemoryId,
    /// What kind of thing it says.
    pub kind: MemoryKind,
    /// What it is about, normalised ([`subject_key`]): one current memory a subject.
    pub subject: String,
    /// The statement.
    pub text: String,
    /// How it came to be.
    pub origin: Origin,
    /// Where it was said or found.
    pub source: MemorySource,
    /// When it was saved, epoch ms.
    pub created_ms: u64,
    /// When it stops being true, epoch ms, if it has an end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_ms: Option<u64>,
    /// The memory that replaced it: set, it is history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaced_by: Option<MemoryId>,
}

/// Why a memory cannot be saved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MemoryError {
    /// No text.
    #[error("a memory needs some text")]
    Empty,
    /// The text is too long.
    #[error("a memory holds at most {MAX_TEXT_CHARS} characters; this one has {0}")]
    TooLong(usize),
    /// The subject is too long.
    #[error("a memory's subject holds at most {MAX_SUBJECT_CHARS} characters")]
    SubjectTooLong,
}

/// A memory to save, before it has an id.
#[derive(Debug, Clone, PartialEq)]
pub struct NewMemory {
    /// Its kind.
    pub kind: MemoryKind,
    /// What it is about (any wording; normalised on [`NewMemory::build`]); empty: the
    /// statement's own leading words.
    pub subject: String,
    /// The statement.
    pub text: String,
    /// How it came to be.
    pub origin: Origin,
    /// Where.
    pub source: MemorySource,
    /// How long it stays true, if it has an end, in ms from now.
    pub ttl_ms: Option<u64>,
}

impl NewMemory {
    /// The memory, checked, with its id and times.
    ///
    /// # Errors
    /// An empty or too long text or subject.
    pub fn build(self, now_ms: u64) -> Result<Memory, MemoryError> {
        let text = collapse_spaces(&self.text);
        if text.is_empty() {
            return Err(MemoryError::Empty);
        }
        let chars = text.chars().count();
        if chars > MAX_TEXT_CHARS {
            return Err(MemoryError::TooLong(chars));
        }
        if self.subject.chars().count() > MAX_SUBJECT_CHARS {
            return Err(MemoryError::SubjectTooLong);
        }
        let subject = match subject_key(&self.subject) {
            s if s.is_empty() => default_subject(&text),
            s => s,
        };
        let now = now_ms.to_string();
        let id = MemoryId::derive(&[
            self.kind.as_str(),
            &subject,
            &text,
            self.source.episode_id.as_deref().unwrap_or(""),
            self.source.turn_id.as_deref().unwrap_or(""),
            &now,
        ]);
        Ok(Memory {
            id,
            kind: self.kind,
            subject,
            text,
            origin: self.origin,
            source: self.source,
            created_ms: now_ms,
            expires_ms: self.ttl_ms.map(|ttl| now_ms.saturating_add(ttl)),
            replaced_by: None,
        })
    }
}

/// Runs of whitespace become one space; the ends are trimmed.
fn collapse_spaces(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A subject as stores compare it: lower case, words only, without a leading article or
/// possessive ("My Bike" and "the bike" are one subject).
pub fn subject_key(subject: &str) -> String {
    let words: Vec<String> = terms::words(subject).collect();
    let skip = words
        .iter()
        .take_while(|w| matches!(w.as_str(), "my" | "the" | "a" | "an" | "our" | "your"))
        .count();
    words[skip..].join(" ")
}

/// The subject of a statement saved without one: what comes before its verb ("my locker
/// code is 4417" is about "locker code"), else its first content words.
fn default_subject(text: &str) -> String {
    let lower = text.to_lowercase();
    let before = [" is ", " are ", " was ", " were ", " = "]
        .iter()
        .filter_map(|verb| lower.find(verb))
        .min()
        .map(|at| &text[..at]);
    if let Some(before) = before {
        let words: Vec<String> = terms::content_words(before).take(4).collect();
        if !words.is_empty() {
            return words.join(" ");
        }
    }
    let words: Vec<String> = terms::content_words(text).take(3).collect();
    if words.is_empty() {
        "note".to_owned()
    } else {
        words.join(" ")
    }
}

impl Memory {
    /// Whether it is current: not replaced and not past its end.
    pub fn is_current(&self, now_ms: u64) -> bool {
        self.replaced_by.is_none() && self.expires_ms.is_none_or(|end| end > now_ms)
    }
}

/// Which memories a list or a search takes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MemoryFilter {
    /// These kinds only (none: every kind).
    pub kinds: Vec<MemoryKind>,
    /// Saved at or after, epoch ms.
    pub since_ms: Option<u64>,
    /// Saved before, epoch ms.
    pub until_ms: Option<u64>,
    /// From this episode only.
    pub episode_id: Option<String>,
    /// From this specialist's answers only.
    pub specialist: Option<String>,
    /// Replaced and expired ones too (history); otherwise current ones only.
    pub include_history: bool,
    /// Now, epoch ms: what has expired.
    pub now_ms: u64,
}

impl MemoryFilter {
    /// Current memories of every kind, as of `now_ms`.
    pub fn current(now_ms: u64) -> MemoryFilter {
        MemoryFilter {
            now_ms,
            ..MemoryFilter::default()
        }
    }

    /// Whether `memory` passes (a store may apply the same test in its own query).
    pub fn admits(&self, memory: &Memory) -> bool {
        (self.include_history || memory.is_current(self.now_ms))
            && (self.kinds.is_empty() || self.kinds.contains(&memory.kind))
            && self.since_ms.is_none_or(|t| memory.created_ms >= t)
            && self.until_ms.is_none_or(|t| memory.created_ms < t)
            && self
                .episode_id
                .as_ref()
                .is_none_or(|e| memory.source.episode_id.as_ref() == Some(e))
            && self
                .specialist
                .as_ref()
                .is_none_or(|s| memory.source.specialist.as_ref() == Some(s))
    }
}

/// A memory a search found, with its score in that search (higher is better).
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    /// The memory.
    pub memory: Memory,
    /// Its score: a text rank's relevance, or a cosine similarity.
    pub score: f32,
}

/// What a save did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Saved {
    /// Stored as a new memory; `replaced` is the one of its subject it replaced, if any,
    /// and `evicted` what went to keep the principal under their cap.
    New {
        /// The replaced memory.
        replaced: Option<MemoryId>,
        /// Memories let go for the cap.
        evicted: Vec<MemoryId>,
    },
    /// The current memory of its subject already says this: nothing changed.
    Unchanged(MemoryId),
}

/// What the user asked to be remembered, without the asking: "remember that my locker
/// code is 4417" keeps "my locker code is 4417".
pub fn said(text: &str) -> &str {
    let trimmed = text.trim();
    let lower = trimmed.to_lowercase();
    for ask in [
        "please remember that ",
        "please remember ",
        "remember that ",
        "remember: ",
        "remember ",
        "don't forget that ",
        "note that ",
    ] {
        if lower.starts_with(ask) && trimmed.is_char_boundary(ask.len()) {
            return trimmed[ask.len()..].trim().trim_end_matches('.');
        }
    }
    trimmed.trim_end_matches('.')
}

/// Whether `text` asks rather than states ("do you remember my dog's name?"): a question
/// is never a memory, whoever proposes it.
pub fn is_question(text: &str) -> bool {
    let trimmed = text.trim();
    if trimmed.ends_with('?') {
        return true;
    }
    let first: Vec<String> = terms::words(trimmed).take(2).collect();
    let opener = first.first().map(String::as_str).unwrap_or_default();
    matches!(
        opener,
        "what" | "what's" | "who" | "whom" | "whose" | "where" | "when" | "why" | "how" | "which"
    ) || (matches!(
        opener,
        "do" | "did" | "does" | "can" | "could" | "would" | "is" | "are"
    ) && first
        .get(1)
        .is_some_and(|w| matches!(w.as_str(), "you" | "i" | "we" | "my" | "it" | "there")))
}

/// Whether two statements say the same (for [`Saved::Unchanged`]): equal words, case and
/// punctuation aside.
pub fn same_statement(a: &str, b: &str) -> bool {
    terms::words(a).eq(terms::words(b))
}
