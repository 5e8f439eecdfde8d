//! Any text as what memory reads from outside (D-43): a model's extraction reply, a
//! statement to remember, a message to search for. No panic, and what each step promises
//! holds: a proposed memory fits the limits, a saved one reads back in the prompt block
//! quoted whole (one block, its text masked and unable to close it), a search's terms are
//! words of the text.

use baton_core::privacy::{PrivacyGuard, PrivacyPolicy, PrivacyReceipt};
use baton_core::recall::block::render;
use baton_core::recall::extract::{read_reply, worth_asking};
use baton_core::recall::terms::query_terms;
use baton_core::recall::{
    MAX_SUBJECT_CHARS, MAX_TEXT_CHARS, MemoryKind, MemorySource, NewMemory, Origin, is_question,
    said,
};

/// One input: the bytes as text.
pub fn run(data: &[u8]) {
    let Some(text) = crate::common::input::<&str>(data) else {
        return;
    };
    for proposed in read_reply(text) {
        assert!(!proposed.text.is_empty() && proposed.text.chars().count() <= MAX_TEXT_CHARS);
        assert!(proposed.subject.chars().count() <= MAX_SUBJECT_CHARS);
    }
    let _ = (is_question(text), worth_asking(text, &[("support", text)]));
    // Terms are lower-cased word by word, which for some scripts differs from lower-casing
    // the whole text: only ASCII terms are checked against it.
    let lower = text.to_lowercase().replace('’', "'");
    for term in query_terms(text) {
        assert!(!term.is_empty());
        assert!(
            !term.is_ascii() || lower.contains(&term),
            "{term:?} is not in the text"
        );
    }
    let built = NewMemory {
        kind: MemoryKind::Fact,
        subject: String::new(),
        text: said(text).to_owned(),
        origin: Origin::Said,
        source: MemorySource::default(),
        ttl_ms: None,
    }
    .build(1);
    let Ok(memory) = built else {
        return;
    };
    assert!(!memory.subject.is_empty());
    let guard = PrivacyGuard::new(&PrivacyPolicy::default());
    let block = render(&[&memory], 10_000, &guard, &mut PrivacyReceipt::default());
    assert_eq!(block.ids, std::slice::from_ref(&memory.id));
    assert_eq!(block.text.matches("</memory>").count(), 1, "{}", block.text);
    assert!(block.text.ends_with("</memory>"));
}
