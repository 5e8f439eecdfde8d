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

/// The IBAN kind's bit.
const IBAN: u8 = 1 << detect::rank(PiiKind::Iban);

/// The national id kind's bit.
const NATIONAL_ID: u8 = 1 << detect::rank(PiiKind::NationalId);

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
        let (mut p, mut copied) = (from, from);
        // E-mail scans are skipped where they cannot find anything from the bytes already
        // here, so the answer is the same: most words are far from an `@`, and scanning
        // each would read every word twice. `next_at` is the next `@` at or after `p` (or the
        // end); `tail` is where the run of local-part characters at the end starts. Both are
        // found when first needed: a stream's run over a short chunk often needs neither.
        let mut next_at: Option<usize> = None;
        let mut tail: Option<usize> = None;
        loop {
            p = self.next_start(bytes, p);
            let Some(&b) = bytes.get(p) else {
                break;
            };
            let mut candidates = not_ruled_out(
                bytes,
                p,
                self.first[usize::from(b)] & self.allowed_after(bytes, p),
            );
            if candidates & EMAIL != 0 {
                let at = match next_at {
                    Some(at) if at >= p => at,
                    _ => *next_at.insert(find_at(bytes, p)),
                };
                let hopeless = if at < bytes.len() {
                    // No local part is longer than 64.
                    at > p + 64
                } else {
                    // No `@` yet: only a run still open at the end may meet one.
                    finished
                        || bytes.len() > p + 64
                        || p < *tail.get_or_insert_with(|| local_tail(bytes, from))
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
                        p = end;
                        copied = end;
                        continue;
                    }
                    Ok(None) | Err(Stop::Limit) => {}
                }
            }
            p += 1;
        }
        push_slice(out, text, copied, p);
        p
    }

    /// The first position at or after `p` where a value of some enabled kind may start (its
    /// byte and the byte before it allow one), or the end of the text. Most bytes are
    /// skipped here: inside a word nothing can start.
    #[inline]
    fn next_start(&self, bytes: &[u8], p: usize) -> usize {
        if p == 0 {
            match bytes.first() {
                Some(&b) if self.first[usize::from(b)] == 0 => {}
                _ => return 0,
            }
        }
        let from = p.max(1);
        let (Some(prev), Some(next)) = (bytes.get(from - 1..), bytes.get(from..)) else {
            return bytes.len();
        };
        prev.iter()
            .zip(next)
            .position(|(&a, &b)| self.first[usize::from(b)] & self.after[usize::from(a)] != 0)
            .map_or(bytes.len(), |i| from + i)
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
        let mut left = candidates;
        while left != 0 {
            let rank = left.trailing_zeros() as usize;
            left &= left - 1;
            let Some(kind) = PRECEDENCE.get(rank) else {
                break;
            };
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

/// `candidates` without the kinds the bytes after `p` already rule out (see
/// [`detect::ruled_out`]): most words stop here, before any scan.
#[inline]
fn not_ruled_out(bytes: &[u8], p: usize, mut candidates: u8) -> u8 {
    for (bit, kind) in [(IBAN, PiiKind::Iban), (NATIONAL_ID, PiiKind::NationalId)] {
        if candidates & bit != 0 && detect::ruled_out(kind, bytes, p) {
            candidates &= !bit;
        }
    }
    candidates
}

/// The first `@` at or after `from`, or the end of `bytes`.
///
/// Eight bytes at a time: a stream searches every chunk it receives, and a byte loop made
/// streaming about a fifth slower.
fn find_at(bytes: &[u8], from: usize) -> usize {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    const ATS: u64 = u64::from_ne_bytes([b'@'; 8]);
    let rest = bytes.get(from..).unwrap_or_default();
    let mut words = rest.chunks_exact(8);
    let mut at = from;
    for word in &mut words {
        let mut eight = [0u8; 8];
        eight.copy_from_slice(word);
        // A zero byte of `x` is an `@`; the lowest flagged byte is the first zero (a flag
        // can be wrong only above a true zero).
        let x = u64::from_le_bytes(eight) ^ ATS;
        let flags = x.wrapping_sub(ONES) & !x & HIGHS;
        if flags != 0 {
            return at + (flags.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    words
        .remainder()
        .iter()
        .position(|&b| b == b'@')
        .map_or(bytes.len(), |i| at + i)
}

/// Where the run of e-mail local-part characters at the end of `bytes` starts, or `from` if
/// it starts earlier (no position before `from` is asked about).
fn local_tail(bytes: &[u8], from: usize) -> usize {
    let rest = bytes.get(from..).unwrap_or_default();
    bytes.len()
        - rest
            .iter()
            .rev()
            .take_while(|&&b| detect::is_local(b))
            .count()
}

/// Copies `text[from..to]` (both character boundaries: values are ASCII).
fn push_slice(out: &mut String, text: &str, from: usize, to: usize) {
    if let Some(s) = text.get(from..to) {
        out.push_str(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_at_finds_the_first_at_sign_in_every_lane() {
        // Every place within and across the eight-byte words, and the tail after them.
        for len in 0..40 {
            for at in 0..len {
                let mut text = vec![b'x'; len];
                text[at] = b'@';
                for from in 0..=len {
                    let want = if from <= at { at } else { len };
                    assert_eq!(
                        find_at(&text, from),
                        want,
                        "len {len}, @ at {at}, from {from}"
                    );
                }
            }
            assert_eq!(find_at(&vec![b'x'; len], 0), len);
        }
        // Bytes next to `@` (`?` and `A`), several `@`, and non-ASCII bytes do not confuse it.
        assert_eq!(find_at("?A?A?A?A?A@@".as_bytes(), 0), 10);
        assert_eq!(find_at("ééééé@".as_bytes(), 0), 10);
        assert_eq!(find_at("a@b@c".as_bytes(), 2), 3);
        assert_eq!(find_at(b"abc", 7), 3);
    }

    #[test]
    fn local_tail_is_the_start_of_the_last_local_part_run() {
        assert_eq!(local_tail(b"write to ann.lee+x", 0), 9);
        assert_eq!(local_tail(b"ends in a space ", 0), 16);
        assert_eq!(local_tail(b"", 0), 0);
        // Never before `from`.
        assert_eq!(local_tail(b"abcdef", 4), 4);
        assert_eq!(local_tail(b"ab cdef", 1), 3);
    }

    #[test]
    fn next_start_stops_only_where_a_value_may_start() {
        let guard = PrivacyGuard::new(&PrivacyPolicy::default());
        let text = b"words only, then 42 and (x";
        // Word starts (IBAN, e-mail), the digits, the parenthesis and the word after it;
        // never inside a word.
        assert_eq!(guard.next_start(text, 0), 0);
        assert_eq!(guard.next_start(text, 1), 6);
        assert_eq!(guard.next_start(text, 12), 12);
        assert_eq!(guard.next_start(text, 13), 17);
        assert_eq!(guard.next_start(text, 18), 20);
        assert_eq!(guard.next_start(text, 21), 24);
        assert_eq!(guard.next_start(text, 25), 25);
        assert_eq!(guard.next_start(text, 26), text.len());
        // With no kind enabled nothing may start anywhere.
        let none = PrivacyGuard::new(&PrivacyPolicy {
            kinds: Vec::new(),
            mask: MaskStyle::Label,
        });
        assert_eq!(none.next_start(text, 0), text.len());
    }
}
