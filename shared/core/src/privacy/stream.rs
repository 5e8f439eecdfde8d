//! Masking a text that arrives in chunks (model deltas).
//!
//! Each push appends the chunk to a buffer and runs the guard's left-to-right pass over it
//! with "more may follow": the pass stops at the first position whose decision would read a
//! byte not yet received. Everything before that position is final (a decision at a
//! position depends only on the bytes it read, so it is the one the whole text would get)
//! and is released; the rest is held. A decision reads at most
//! [`PrivacyGuard::max_token_len`] bytes from its position, so no more is ever held. A few
//! released bytes stay as context, because whether a value may start depends on the byte
//! before it.

use std::sync::Arc;

use super::mask::PrivacyGuard;
use super::policy::PrivacyReceipt;

/// Released bytes kept as context (one is read; a few keep a whole character).
const CONTEXT: usize = 4;

/// Masks a text that arrives in chunks: the output of [`push`](Self::push)…
/// [`finish`](Self::finish) concatenated equals [`PrivacyGuard::mask`] of the whole text for
/// any chunking, and the receipt counts are identical.
///
/// # Example
///
/// ```
/// use std::sync::Arc;
/// use baton_core::privacy::{PrivacyGuard, PrivacyPolicy, PrivacyReceipt, StreamMasker};
///
/// let guard = Arc::new(PrivacyGuard::new(&PrivacyPolicy::default()));
/// let mut stream = StreamMasker::new(guard);
/// let mut receipt = PrivacyReceipt::default();
/// let mut out = stream.push("Card 4111 1111 ", &mut receipt);
/// out += &stream.push("1111 1111, thanks", &mut receipt);
/// out += &stream.finish(&mut receipt);
/// assert_eq!(out, "Card [card number], thanks");
/// assert_eq!(receipt.total, 1);
/// ```
#[derive(Debug, Clone)]
pub struct StreamMasker {
    guard: Arc<PrivacyGuard>,
    /// Context bytes, then the held text.
    buf: String,
    /// Where the held text starts in `buf`.
    start: usize,
}

impl StreamMasker {
    /// A masker for one text at a time, sharing `guard`.
    pub fn new(guard: Arc<PrivacyGuard>) -> Self {
        StreamMasker {
            guard,
            buf: String::new(),
            start: 0,
        }
    }

    /// Takes a chunk; returns the masked text that can be released now (maybe empty).
    pub fn push(&mut self, chunk: &str, receipt: &mut PrivacyReceipt) -> String {
        self.buf.push_str(chunk);
        let mut out = String::new();
        let done = self
            .guard
            .run(&self.buf, self.start, false, &mut out, receipt);
        self.release(done);
        out
    }

    /// End of this text: releases everything still held. The masker is then ready for a new
    /// text.
    pub fn finish(&mut self, receipt: &mut PrivacyReceipt) -> String {
        let mut out = String::with_capacity(self.held());
        self.guard
            .run(&self.buf, self.start, true, &mut out, receipt);
        self.buf.clear();
        self.start = 0;
        out
    }

    /// Bytes currently held back (never more than the guard's `max_token_len()`).
    pub fn held(&self) -> usize {
        self.buf.len() - self.start
    }

    /// Forgets what was released before `done` (a character boundary), keeping a little
    /// context.
    fn release(&mut self, done: usize) {
        let mut cut = done.saturating_sub(CONTEXT);
        while cut < done && !self.buf.is_char_boundary(cut) {
            cut += 1;
        }
        if self.buf.is_char_boundary(cut) {
            self.buf.drain(..cut);
            self.start = done - cut;
        } else {
            self.start = done;
        }
    }
}
