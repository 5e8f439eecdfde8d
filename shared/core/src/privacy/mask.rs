//! The compiled guard and whole-text masking.
//!
//! The text is read left to right. At each position the enabled kinds are tried in
//! precedence order (card number, IBAN, national id, e-mail, phone); the first value found is
//! kept unless a value of a kind earlier in that order starts inside it and runs past its
//! end (then the next kind is tried at the same position). A kept value is masked and
//! reading resumes after it, so values never overlap. Every decision reads a bounded window of text (see
//! [`PrivacyGuard::max_token_len`]), which is what lets [`StreamMasker`](super::StreamMasker)
//! give the same answer chunk by chunk.

use std::fmt;

use super::detect::{self, Cursor, PRECEDENCE, Stop};
use super::policy::{MaskStyle, PiiKind, PrivacyPolicy, PrivacyReceipt};

/// Every kind's bit (kinds are bits by their place in [`PRECEDENCE`]).
const ALL: u8 = (1 << PRECEDENCE.len()) - 1;

/// The e-mail kind's bit.
const EMAIL: u8 = 1 << detect::rank(PiiKind::Email);

/// Compiled guard for one policy; cheap to share (`Send + Sync`, held in an `Arc`).
///
/// # Example
///
/// ```
/// use baton_core::privacy::{PrivacyGuard, PrivacyPolicy, PrivacyReceipt};
///
/// let guard = PrivacyGuard::new(&PrivacyPolicy::default());
/// let mut receipt = PrivacyReceipt::default();
/// let masked = guard.mask("Write to ann@example.com or call 020 7946 0958.", &mut receipt);
/// assert_eq!(masked, "Write to [email] or call [phone].");
/// assert_eq!(receipt.total, 2);
/// ```
#[derive(Clone)]
pub struct PrivacyGuard {
    style: MaskStyle,
    /// The enabled kinds' bits.
    enabled: u8,
    /// Per byte: the enabled kinds a value may start with.
    first: [u8; 256],
    /// Per byte: the kinds a value may start right after.
    after: [u8; 256],
    /// The widest window of the enabled kinds.
    window: usize,
}

impl fmt::Debug for PrivacyGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PrivacyGuard")
            .field("kinds", &self.kinds())
            .field("style", &self.style)
            .field("max_token_len", &self.window)
            .finish()
    }
}

impl PrivacyGuard {
    /// Compiles `policy`.
    pub fn new(policy: &PrivacyPolicy) -> Self {
        let mut enabled = 0u8;
        let mut window = 0usize;
        for (rank, kind) in PRECEDENCE.iter().enumerate() {
            if policy.kinds.contains(kind) {
                enabled |= 1 << rank;
                window = window.max(detect::window(*kind));
            }
        }
        let mut first = [0u8; 256];
        let mut after = [0u8; 256];
        for (b, (first, after)) in (0..=u8::MAX).zip(first.iter_mut().zip(after.iter_mut())) {
            for (rank, kind) in PRECEDENCE.iter().enumerate() {
                if detect::first_ok(*kind, b) {
                    *first |= 1 << rank;
                }
                if detect::left_ok(*kind, b) {
                    *after |= 1 << rank;
                }
            }
            *first &= enabled;
        }
        PrivacyGuard {
            style: policy.mask,
            enabled,
            first,
            after,
            window,
        }
    }

    /// The kinds this guard masks, in precedence order.
    pub(crate) fn kinds(&self) -> Vec<PiiKind> {
        PRECEDENCE
            .iter()
            .enumerate()
            .filter(|(rank, _)| self.enabled & (1 << rank) != 0)
            .map(|(_, kind)| *kind)
            .collect()
    }

    /// Masks a whole text, counting what it masked into `receipt`.
    pub fn mask(&self, text: &str, receipt: &mut PrivacyReceipt) -> String {
        let mut out = String::with_capacity(text.len());
        self.run(text, 0, true, &mut out, receipt);
        out
    }

    /// The longest value (in bytes) any enabled kind can match, plus the few bytes after it
    /// that show it ended: the hold-back bound of a [`StreamMasker`](super::StreamMasker).
    /// 0 when no kind is enabled.
    pub fn max_token_len(&self) -> usize {
        self.window
    }

    /// Masks `text` from `from` (a character boundary; earlier bytes are context only) and
    /// returns how far it got: the end of the text, or, when `finished` is false, the first
    /// position whose answer depends on bytes not yet seen.
    pub(crate) fn run(
        &self,
        text: &str,
        from: usize,
        finished: bool,
        out: &mut String,
        receipt: &mut PrivacyReceipt,
    ) -> usize {
        let bytes = text.as_bytes();
        let cursor = Cursor::new(bytes, finished);
        let mut allowed = self.allowed_after(bytes, from);
        let (mut p, mut copied) = (from, from);
        // E-mail scans are skipped where they cannot find anything from the bytes already
        // here, so the answer is the same: most words are far from an `@`, and scanning
        // each would read every word twice. `next_at` is the next `@` at or after `p` (or the
        // end); `tail` is where the run of local-part characters at the end starts.
        let mut next_at = 0usize;
        let tail = bytes.len()
            - bytes
                .iter()
                .rev()
                .take_while(|&&b| detect::is_local(b))
                .count();
        while let Some(&b) = bytes.get(p) {
            let mut candidates = self.first[usize::from(b)] & allowed;
            if candidates & EMAIL != 0 {
                if next_at < p {
                    next_at = bytes
                        .get(p..)
                        .and_then(|rest| rest.iter().position(|&b| b == b'@'))
                        .map_or(bytes.len(), |i| p + i);
                }
                let hopeless = if next_at < bytes.len() {
                    // No local part is longer than 64.
                    next_at > p + 64
                } else {
                    // No `@` yet: only a run still open at the end may meet one.
                    finished || p < tail || bytes.len() > p + 64
                };
                if hopeless {
                    candidates &= !EMAIL;
                }
            }
            if candidates != 0 {
                match self.decide(cursor, p, candidates) {
                    Err(Stop::More) => break,
                    Ok(Some((kind, end))) => {
                        push_slice(out, text, copied, p);
                        self.render(kind, bytes.get(p..end).unwrap_or_default(), out);
                        receipt.add(kind);
                        allowed = self.allowed_after(bytes, end);
                        p = end;
                        copied = end;
                        continue;
                    }
                    Ok(None) | Err(Stop::Limit) => {}
                }
            }
            allowed = self.after[usize::from(b)];
            p += 1;
        }
        push_slice(out, text, copied, p);
        p
    }

    /// The kinds a value may start with at `p`, given the byte before it.
    fn allowed_after(&self, bytes: &[u8], p: usize) -> u8 {
        match p.checked_sub(1).and_then(|i| bytes.get(i)) {
            Some(&b) => self.after[usize::from(b)],
            None => ALL,
        }
    }

    /// The value kept at `p`, if any (`candidates`: the kinds that may start there).
    fn decide(
        &self,
        cursor: Cursor<'_>,
        p: usize,
        candidates: u8,
    ) -> Result<Option<(PiiKind, usize)>, Stop> {
        for (rank, kind) in PRECEDENCE.iter().enumerate() {
            if candidates & (1 << rank) == 0 || detect::ruled_out(*kind, cursor.bytes(), p) {
                continue;
            }
            let limit = p + detect::window(*kind);
            let end = match detect::scan(*kind, cursor.limited(limit), p) {
                Ok(Some(end)) => end,
                Ok(None) | Err(Stop::Limit) => continue,
                Err(Stop::More) => return Err(Stop::More),
            };
            if !self.outranked(cursor, p, end, rank)? {
                return Ok(Some((*kind, end)));
            }
        }
        Ok(None)
    }

    /// Whether a value of a kind ranked before `rank` starts inside `p..end` and runs past
    /// `end` (one wholly inside is part of this value: the digits of an IBAN are no card).
    /// Those scans stay inside the window of `p`, so the decision at `p` reads a bounded
    /// window too.
    fn outranked(
        &self,
        cursor: Cursor<'_>,
        p: usize,
        end: usize,
        rank: usize,
    ) -> Result<bool, Stop> {
        let higher = ((1u8 << rank) - 1) & self.enabled;
        if higher == 0 {
            return Ok(false);
        }
        let bytes = cursor.bytes();
        let bound = p + self.window;
        for s in p + 1..end {
            let (Some(&prev), Some(&b)) = (bytes.get(s - 1), bytes.get(s)) else {
                break;
            };
            let candidates = self.first[usize::from(b)] & self.after[usize::from(prev)] & higher;
            for (h, kind) in PRECEDENCE.iter().enumerate() {
                if candidates & (1 << h) == 0 {
                    continue;
                }
                let limit = bound.min(s + detect::window(*kind));
                match detect::scan(*kind, cursor.limited(limit), s) {
                    Ok(Some(inner_end)) if inner_end > end => return Ok(true),
                    Err(Stop::More) => return Err(Stop::More),
                    Ok(_) | Err(Stop::Limit) => {}
                }
            }
        }
        Ok(false)
    }

    /// Writes the mask of `value` (ASCII, as every value is).
    fn render(&self, kind: PiiKind, value: &[u8], out: &mut String) {
        match self.style {
            MaskStyle::Label => out.push_str(label(kind)),
            MaskStyle::Stars => out.extend(std::iter::repeat_n('*', value.len())),
            MaskStyle::LastFour => {
                let keep_from = value
                    .iter()
                    .enumerate()
                    .rev()
                    .filter(|(_, b)| b.is_ascii_alphanumeric())
                    .nth(3)
                    .map_or(value.len(), |(i, _)| i);
                out.extend(std::iter::repeat_n('*', keep_from));
                out.extend(value.iter().skip(keep_from).map(|&b| char::from(b)));
            }
        }
    }
}

/// The label a value of `kind` becomes in the `label` style.
pub(crate) fn label(kind: PiiKind) -> &'static str {
    match kind {
        PiiKind::Email => "[email]",
        PiiKind::Phone => "[phone]",
        PiiKind::CardNumber => "[card number]",
        PiiKind::Iban => "[IBAN]",
        PiiKind::NationalId => "[national id]",
    }
}

/// Copies `text[from..to]` (both character boundaries: values are ASCII).
fn push_slice(out: &mut String, text: &str, from: usize, to: usize) {
    if let Some(s) = text.get(from..to) {
        out.push_str(s);
    }
}
