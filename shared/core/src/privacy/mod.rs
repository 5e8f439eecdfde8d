//! The privacy guard (D-23): deterministic masking of personal data in every outbound text.
//!
//! A [`PrivacyGuard`] compiles a [`PrivacyPolicy`] once; [`PrivacyGuard::mask`] masks a whole
//! text and a [`StreamMasker`] masks one arriving in chunks with the same result, holding
//! back at most [`PrivacyGuard::max_token_len`] bytes. Both count what they masked into a
//! [`PrivacyReceipt`].
//!
//! Recognition is by shape and checksum, with no dictionary and no model, so the same text
//! is always masked the same way:
//!
//! - card numbers (13–19 digits, Luhn), IBANs (mod 97), national ids (US SSN and UK National
//!   Insurance number), e-mail addresses and phone numbers (international, North American
//!   and national trunk-zero forms), by the rules below;
//! - a scanner takes the longest run of the characters its kind allows and judges it whole:
//!   a run that is too long or fails a check is no value, never a shorter one (IBANs and
//!   phone numbers, which end at a group, take the longest run of groups that is valid);
//! - values never overlap. Precedence, in this order: card number, IBAN, national id,
//!   e-mail, phone. At one position the kinds are tried in that order; a value is dropped
//!   when a value of an earlier kind starts inside it and runs past its end (`+44 4111 1111
//!   1111 1111` is `+44 ` and a card); a value wholly inside another is part of it (the
//!   digits of an IBAN are never a card number, even when Luhn-valid);
//! - kinds not in the policy are left as they are.
//!
//! ## Boundaries
//!
//! - A number-like value (card, IBAN, national id, phone) starts after the start of the text
//!   or after a character that is neither an ASCII letter or digit nor one of `. - + @ / \ # $ %`
//!   (so `A-12345`, `#123456`, `$12.50` and `v1.2.3` never start one).
//! - It ends before the end of the text or a character that is not an ASCII letter or digit
//!   and not `@`; and not before one of `. - / : +` followed by a digit (`4567.89` is one
//!   number, not a phone and a fraction).
//! - An e-mail address starts after a character that cannot be part of its local part.
//!
//! ## Rules per kind
//!
//! - **Card number**: 13–19 digits, Luhn-valid, either contiguous or grouped: a first group of
//!   4 digits, then groups of 3–6 digits, all separated by the same single space or hyphen
//!   (`4111 1111 1111 1111`, `3782-822463-10005`). As a grouped number cannot tell where it
//!   stops when more digit groups follow, the longest valid prefix that ends at a group
//!   wins: two card numbers back to back are two cards, and `4111 1111 1111 1111 2027` masks
//!   its first 16 digits (safety over the odd long reference). A card may also start right
//!   after a hyphen, and end before a space or hyphen that starts another number.
//! - **IBAN**: two letters, two check digits, 11–30 letters or digits (15–34 in all), letters
//!   in either case, mod 97 = 1; either contiguous or in groups of four separated by single
//!   spaces, the last group 1–4 long. As a grouped IBAN cannot tell where it stops when a
//!   short word follows, the longest valid prefix that ends at a group wins.
//! - **National id**: a US Social Security number `AAA-GG-SSSS` (hyphens required; area not
//!   000, 666 or 900–999, group not 00, serial not 0000), or a UK National Insurance number,
//!   upper case, `AB123456C` or `AB 12 34 56 C` (first letter not D F I Q U V, second not
//!   D F I O Q U V, prefix not BG GB NK KN TN NT ZZ, suffix A–D).
//! - **E-mail**: local part of ASCII letters, digits and `. _ % + -` (1–64, no leading,
//!   trailing or doubled dot), `@`, then at least two dot-separated labels of letters, digits
//!   and inner hyphens (1–63 each), the last all letters and at least two long; 254 bytes at
//!   most. A trailing dot (end of sentence) is not part of it; `_` or `@` right after it
//!   means it is none.
//! - **Phone**: digit groups separated by single spaces, hyphens or dots, or a group in
//!   parentheses (`(0)`, `(555)`), 15 digits at most; the longest run of such groups that
//!   has one of these shapes and may end where it stops is the number:
//!   - international: `+`, first digit 1–9, 8–15 digits in all (`+44 (0)20 7946 0958`);
//!   - North American: 3-3-4 digits, area code starting 2–9, as `(555) 123-4567`,
//!     `(555)123-4567`, `555-123-4567` or `555.123.4567` (same separator twice), optionally
//!     after a `1` and the same separator (`1-800-555-0199`, `1 (555) 123-4567`);
//!   - national with a trunk zero: first group `0` then a non-zero digit, 2–5 digits long,
//!     2–5 groups of at least 2 digits, 9–12 digits in all, one separator kind (space or
//!     hyphen), the first group maybe in parentheses: `0151 2345678`, `020 7946 0958`,
//!     `(020) 7946 0958`, `06 12 34 56 78`.
//!
//!   So dates (`2026-11-22`, `22.11.2026`), times, amounts (`1,234.56`), years, versions and
//!   bare digit runs are never phones. A plain `555 123 4567` and the `00` international
//!   prefix are not recognised.
//!
//! ## Streaming
//!
//! A decision at one position reads at most [`PrivacyGuard::max_token_len`] bytes from it:
//! the longest value of an enabled kind plus the bytes after it that show where it ends
//! (256 with e-mail enabled, 50 or less without). A [`StreamMasker`] releases everything
//! before the first position whose decision still needs bytes not yet received, so it holds
//! back at most that much; in ordinary text, the word a chunk ends in.
//! [`StreamMasker::held`] tells how much is held; the `privacy` bench prints, over a streamed
//! answer, the peak and mean held and how many deltas a byte waited before release.
//! [`StreamMasker::push_into`] appends to a caller's string instead of returning a new one.
//!
//! ## Masks
//!
//! `label` writes `[email]`, `[phone]`, `[card number]`, `[IBAN]`, `[national id]`;
//! `stars` writes one `*` per character of the value; `last_four` writes `*` for every
//! character before the fourth-last letter or digit and keeps the rest as written
//! (`4111 1111 1111 1111` becomes `***************1111`, `020 7946 0958` becomes
//! `*********0958`).

mod detect;
mod mask;
mod policy;
mod stream;

#[cfg(test)]
mod props;
#[cfg(test)]
mod tests;

pub use mask::PrivacyGuard;
pub use policy::{MaskStyle, PiiKind, PrivacyPolicy, PrivacyReceipt};
pub use stream::StreamMasker;
