//! Masking a text that arrives in chunks (model deltas).
//!
//! Each push appends the chunk to a buffer and runs the guard's left-to-right pass over it
//! with "more may follow": the pass stops at the first position whose decision would read a
//! byte not yet received. Everything before that position is final (a decision at a
//! position depends only on the bytes it read, so it is the one the whole text would get)
//! and is released; the rest is held. A decision reads at most
//! [`PrivacyGuard::max_token_len`] bytes from its position, so no more is ever held. The
//! next push resumes the pass at the first held byte. Released bytes are never read again,
//! except the one before that byte (whether a value may start depends on it); they stay in
//! the buffer until a few kilobytes have gathered and are then dropped together.

use std::sync::Arc;

use super::mask::PrivacyGuard;
use super::policy::PrivacyReceipt;

/// Released bytes kept as context when the buffer is compacted (one is read; a few keep a
/// whole character).
const CONTEXT: usize = 4;

/// The buffer is compacted once this many bytes have been released. Tiny in tests, so that
/// the property tests' short texts are compacted at every kind of position.
const COMPACT_AT: usize = if cfg!(test) { 16 } else { 4096 };

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
///
/// // The same, appending to one string with no allocation per chunk.
/// let mut out = String::new();
/// stream.push_into("Card 4111 1111 ", &mut receipt, &mut out);
/// stream.push_into("1111 1111, thanks", &mut receipt, &mut out);
/// stream.finish_into(&mut receipt, &mut out);
/// assert_eq!(out, "Card [card number], thanks");
/// assert_eq!(receipt.total, 2);
/// ```
#[derive(Debug, Clone)]
pub struct StreamMasker {
    guard: Arc<PrivacyGuard>,
    /// Released bytes (context only), then the held text.
    buf: String,
    /// Where the held text starts in `buf`.
    start: usize,
    /// Reused by [`push`](Self::push) for the text it releases.
    out: String,
}

impl StreamMasker {
    /// A masker for one text at a time, sharing `guard`.
    pub fn new(guard: Arc<PrivacyGuard>) -> Self {
        StreamMasker {
            guard,
            buf: String::new(),
            start: 0,
            out: String::new(),
        }
    }

    /// Takes a chunk; returns the masked text that can be released now (maybe empty).
    pub fn push(&mut self, chunk: &str, receipt: &mut PrivacyReceipt) -> String {
        // Masked into a reused buffer, then copied out at its final size: one allocation,
        // none when nothing is released.
        let mut out = std::mem::take(&mut self.out);
        self.push_into(chunk, receipt, &mut out);
        let released = String::from(out.as_str());
        out.clear();
        self.out = out;
        released
    }

    /// Takes a chunk; appends the masked text that can be released now to `out` (what
    /// [`push`](Self::push) returns), with no new string per chunk.
    pub fn push_into(&mut self, chunk: &str, receipt: &mut PrivacyReceipt, out: &mut String) {
        self.buf.push_str(chunk);
        let done = self.guard.run(&self.buf, self.start, false, out, receipt);
        self.release(done);
    }

    /// End of this text: releases everything still held. The masker is then ready for a new
    /// text.
    pub fn finish(&mut self, receipt: &mut PrivacyReceipt) -> String {
        let mut out = String::with_capacity(self.held());
        self.finish_into(receipt, &mut out);
        out
    }

    /// End of this text: appends everything still held, masked, to `out` (what
    /// [`finish`](Self::finish) returns). The masker is then ready for a new text.
    pub fn finish_into(&mut self, receipt: &mut PrivacyReceipt, out: &mut String) {
        self.guard.run(&self.buf, self.start, true, out, receipt);
        self.buf.clear();
        self.start = 0;
    }

    /// Bytes currently held back (never more than the guard's `max_token_len()`).
    pub fn held(&self) -> usize {
        self.buf.len() - self.start
    }

    /// Marks everything before `done` (a character boundary) as released. Released bytes are
    /// dropped once [`COMPACT_AT`] have gathered, not on every push: that moved the held
    /// bytes down each time.
    fn release(&mut self, done: usize) {
        self.start = done;
        if done < COMPACT_AT {
            return;
        }
        let mut cut = done.saturating_sub(CONTEXT);
        while cut < done && !self.buf.is_char_boundary(cut) {
            cut += 1;
        }
        if self.buf.is_char_boundary(cut) {
            self.buf.drain(..cut);
            self.start = done - cut;
        }
    }
}
