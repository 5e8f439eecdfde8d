//! The recognisers: one small scanner per kind, and the checksums they use.
//!
//! Every scanner starts at one byte and reads forward; values are ASCII, so every start and
//! end is a character boundary. A scanner takes the longest run of the characters its kind
//! allows ("maximal munch") and judges that run as a whole: a run that is too long or fails a
//! check is no value at all, never a shorter one (except IBANs and phone numbers, which end
//! at a group and so take the longest run of groups that is valid).
//!
//! The rules themselves are listed in the parent module's documentation.
//!
//! Scanners read through a [`Cursor`]: reading past the bytes received so far answers
//! [`Stop::More`] (a stream then waits), reading past the scanner's window answers
//! [`Stop::Limit`] (no value, whatever follows). The window is checked first, so a decision
//! never depends on how the text was cut.

use super::policy::PiiKind;

/// The kinds in precedence order: when values of two kinds overlap, the earlier kind wins.
pub(crate) const PRECEDENCE: [PiiKind; 5] = [
    PiiKind::CardNumber,
    PiiKind::Iban,
    PiiKind::NationalId,
    PiiKind::Email,
    PiiKind::Phone,
];

/// The place of `kind` in [`PRECEDENCE`].
pub(crate) const fn rank(kind: PiiKind) -> usize {
    match kind {
        PiiKind::CardNumber => 0,
        PiiKind::Iban => 1,
        PiiKind::NationalId => 2,
        PiiKind::Email => 3,
        PiiKind::Phone => 4,
    }
}

/// How many bytes from its start a scanner of `kind` may read: the longest value of the kind
/// plus what must be seen after it to know it ended. A scan that would read further finds
/// nothing, whatever the text, so every decision depends on a bounded window.
pub(crate) const fn window(kind: PiiKind) -> usize {
    match kind {
        // 254 bytes, then a dot and the byte after it.
        PiiKind::Email => 256,
        // 34 characters and 8 spaces, then a space and up to five characters of what follows.
        PiiKind::Iban => 50,
        // 19 digits and 5 separators, then a separator and up to seven digits.
        PiiKind::CardNumber => 34,
        // Up to 15 digits with separators and parentheses, then a separator and a digit group.
        PiiKind::Phone => 40,
        // `AB 12 34 56 C` and two bytes after it.
        PiiKind::NationalId => 16,
    }
}

/// Why a scan ended without an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// It needs bytes that have not arrived yet.
    More,
    /// It reached the end of its window: there is no value here.
    Limit,
}

/// A scan's answer: the end of the value, no value, or no answer yet.
pub(crate) type Scan = Result<Option<usize>, Stop>;

/// The text as a scanner sees it: the bytes so far, whether more may follow, and how far
/// the scanner may read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cursor<'a> {
    bytes: &'a [u8],
    finished: bool,
    limit: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor over `bytes`; `finished` says no byte follows them.
    pub(crate) fn new(bytes: &'a [u8], finished: bool) -> Self {
        Cursor {
            bytes,
            finished,
            limit: usize::MAX,
        }
    }

    /// The same text, readable only below `limit`.
    pub(crate) fn limited(self, limit: usize) -> Self {
        Cursor { limit, ..self }
    }

    /// The byte at `i`, `None` at the end of the text.
    ///
    /// The window is checked before the end of the bytes so that a stream and a whole text
    /// give the same answer.
    #[inline]
    fn at(&self, i: usize) -> Result<Option<u8>, Stop> {
        if i >= self.limit {
            return Err(Stop::Limit);
        }
        match self.bytes.get(i) {
            Some(&b) => Ok(Some(b)),
            None if self.finished => Ok(None),
            None => Err(Stop::More),
        }
    }

    /// The bytes so far.
    pub(crate) fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Bytes already read (empty if out of range, which the scanners never ask for).
    fn slice(&self, from: usize, to: usize) -> &'a [u8] {
        self.bytes.get(from..to).unwrap_or_default()
    }
}

fn is_digit(b: Option<u8>) -> bool {
    b.is_some_and(|b| b.is_ascii_digit())
}

fn is_alnum(b: Option<u8>) -> bool {
    b.is_some_and(|b| b.is_ascii_alphanumeric())
}

fn is_alpha(b: Option<u8>) -> bool {
    b.is_some_and(|b| b.is_ascii_alphabetic())
}

fn is_upper(b: Option<u8>) -> bool {
    b.is_some_and(|b| b.is_ascii_uppercase())
}

/// A character of an e-mail local part.
pub(crate) fn is_local(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'%' | b'+' | b'-')
}

/// Whether `b` may be the first byte of a value of `kind`.
pub(crate) fn first_ok(kind: PiiKind, b: u8) -> bool {
    match kind {
        PiiKind::CardNumber => b.is_ascii_digit(),
        PiiKind::Iban => b.is_ascii_alphabetic(),
        PiiKind::NationalId => b.is_ascii_digit() || b.is_ascii_uppercase(),
        PiiKind::Email => is_local(b) && b != b'.',
        PiiKind::Phone => b.is_ascii_digit() || b == b'+' || b == b'(',
    }
}

/// Whether a value of `kind` may start right after the byte `prev`.
pub(crate) fn left_ok(kind: PiiKind, prev: u8) -> bool {
    match kind {
        PiiKind::Email => !is_local(prev),
        // Two card numbers joined by a hyphen are two card numbers.
        PiiKind::CardNumber if prev == b'-' => true,
        _ => {
            !(prev.is_ascii_alphanumeric()
                || matches!(
                    prev,
                    b'.' | b'-' | b'+' | b'@' | b'/' | b'\\' | b'#' | b'$' | b'%'
                ))
        }
    }
}

/// A shortcut for the common case of a word: true when the bytes after `p` that are already
/// here rule a value of `kind` out (the scan would say the same; it reads them first).
#[inline]
pub(crate) fn ruled_out(kind: PiiKind, bytes: &[u8], p: usize) -> bool {
    let byte = |i: usize| bytes.get(p + i).copied();
    let not = |b: Option<u8>, class: fn(&u8) -> bool| b.is_some_and(|b| !class(&b));
    match kind {
        PiiKind::Iban => not(byte(1), u8::is_ascii_alphabetic) || not(byte(2), u8::is_ascii_digit),
        PiiKind::NationalId if byte(0).is_some_and(|b| b.is_ascii_uppercase()) => {
            not(byte(1), u8::is_ascii_uppercase)
        }
        _ => false,
    }
}

/// Scans for a value of `kind` starting at `p` (whose first byte and left neighbour the
/// caller has checked with [`first_ok`] and [`left_ok`]).
pub(crate) fn scan(kind: PiiKind, c: Cursor<'_>, p: usize) -> Scan {
    match kind {
        PiiKind::CardNumber => card(c, p),
        PiiKind::Iban => iban(c, p),
        PiiKind::NationalId => national_id(c, p),
        PiiKind::Email => email(c, p),
        PiiKind::Phone => phone(c, p),
    }
}

/// Whether a number-like value may end at `i` (see the module docs).
fn right_ok(c: Cursor<'_>, i: usize) -> Result<bool, Stop> {
    Ok(match c.at(i)? {
        None => true,
        Some(b) if b.is_ascii_alphanumeric() || b == b'@' => false,
        Some(b'.' | b'-' | b'/' | b':' | b'+') => !is_digit(c.at(i + 1)?),
        Some(_) => true,
    })
}

/// Reads digits from `i`, at most `max + 1` of them: (how many, where they stop).
fn digits(c: Cursor<'_>, i: usize, max: usize) -> Result<(usize, usize), Stop> {
    let mut j = i;
    while j - i <= max && is_digit(c.at(j)?) {
        j += 1;
    }
    Ok((j - i, j))
}

/// Reads letters and digits from `i`, at most `max + 1` of them.
fn alnums(c: Cursor<'_>, i: usize, max: usize) -> Result<(usize, usize), Stop> {
    let mut j = i;
    while j - i <= max && is_alnum(c.at(j)?) {
        j += 1;
    }
    Ok((j - i, j))
}

fn card(c: Cursor<'_>, p: usize) -> Scan {
    let (first, mut i) = digits(c, p, 19)?;
    let grouped = match c.at(i)? {
        Some(sep @ (b' ' | b'-')) if first == 4 => Some(sep),
        _ => None,
    };
    let Some(sep) = grouped else {
        // Contiguous: the whole run, which may be followed by another number.
        if !(13..=19).contains(&first) || !(right_ok(c, i)? || next_group(c, i)?) {
            return Ok(None);
        }
        return Ok(luhn(c.slice(p, i)).then_some(i));
    };
    // Grouped: every group end where the digits so far could be a card. The longest valid
    // one wins, so a card followed by more digit groups (a second card, a date, a
    // reference) is still masked: for safety, a long reference is sometimes masked too.
    let mut ends = [0usize; 5];
    let mut found = 0usize;
    let mut total = first;
    while c.at(i)? == Some(sep) && is_digit(c.at(i + 1)?) {
        let (group, j) = digits(c, i + 1, 6)?;
        if !(3..=6).contains(&group) || total + group > 19 {
            break;
        }
        total += group;
        i = j;
        if total >= 13
            && let Some(slot) = ends.get_mut(found)
        {
            *slot = i;
            found += 1;
        }
    }
    for &end in ends[..found].iter().rev() {
        if (right_ok(c, end)? || next_group(c, end)?) && luhn(c.slice(p, end)) {
            return Ok(Some(end));
        }
    }
    Ok(None)
}

/// Whether a space or hyphen and a digit follow `i`: another number starts there.
fn next_group(c: Cursor<'_>, i: usize) -> Result<bool, Stop> {
    Ok(matches!(c.at(i)?, Some(b' ' | b'-')) && is_digit(c.at(i + 1)?))
}

/// The Luhn check over the digits of `value` (separators skipped).
pub(crate) fn luhn(value: &[u8]) -> bool {
    let mut sum = 0u32;
    let mut count = 0usize;
    for &b in value.iter().rev().filter(|b| b.is_ascii_digit()) {
        let mut d = u32::from(b - b'0');
        if count % 2 == 1 {
            d *= 2;
            if d > 9 {
                d -= 9;
            }
        }
        sum += d;
        count += 1;
    }
    count > 0 && sum.is_multiple_of(10)
}

fn iban(c: Cursor<'_>, p: usize) -> Scan {
    // Country code and check digits first: ordinary words fail here.
    if !is_alpha(c.at(p + 1)?) || !is_digit(c.at(p + 2)?) || !is_digit(c.at(p + 3)?) {
        return Ok(None);
    }
    let (run, i) = alnums(c, p, 34)?;
    if run >= 15 {
        if run > 34 || !right_ok(c, i)? {
            return Ok(None);
        }
        return Ok(mod97(c.slice(p, i)).then_some(i));
    }
    if run != 4 {
        return Ok(None);
    }
    // Grouped: remember where each group that could close the IBAN ends.
    let mut ends = [0usize; 8];
    let mut found = 0usize;
    let (mut i, mut total) = (i, 4usize);
    while c.at(i)? == Some(b' ') && is_alnum(c.at(i + 1)?) {
        let (group, j) = alnums(c, i + 1, 4)?;
        if group > 4 || total + group > 34 {
            break;
        }
        total += group;
        i = j;
        if total >= 15
            && let Some(slot) = ends.get_mut(found)
        {
            *slot = i;
            found += 1;
        }
        if group < 4 {
            break;
        }
    }
    for &end in ends.get(..found).unwrap_or_default().iter().rev() {
        if right_ok(c, end)? && mod97(c.slice(p, end)) {
            return Ok(Some(end));
        }
    }
    Ok(None)
}

/// The IBAN check (ISO 13616): the first four characters moved to the end, letters as
/// 10…35, the number mod 97 is 1. Spaces are skipped; letters may be either case.
pub(crate) fn mod97(value: &[u8]) -> bool {
    let chars = || value.iter().copied().filter(u8::is_ascii_alphanumeric);
    let mut rest = 0u32;
    for b in chars().skip(4).chain(chars().take(4)) {
        rest = if b.is_ascii_digit() {
            (rest * 10 + u32::from(b - b'0')) % 97
        } else {
            (rest * 100 + u32::from(b.to_ascii_uppercase() - b'A') + 10) % 97
        };
    }
    chars().count() >= 5 && rest == 1
}

fn national_id(c: Cursor<'_>, p: usize) -> Scan {
    if is_digit(c.at(p)?) {
        ssn(c, p)
    } else {
        nino(c, p)
    }
}

/// Reads `shape` from `p`: `d` a digit, `L` an upper-case letter, `S` a letter A–D, any other
/// byte itself. Returns whether it matched.
fn shaped(c: Cursor<'_>, p: usize, shape: &[u8]) -> Result<bool, Stop> {
    for (k, &want) in shape.iter().enumerate() {
        let got = c.at(p + k)?;
        let ok = match want {
            b'd' => is_digit(got),
            b'L' => is_upper(got),
            b'S' => matches!(got, Some(b'A'..=b'D')),
            _ => got == Some(want),
        };
        if !ok {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The number written by the digits of `bytes`.
fn number(bytes: &[u8]) -> u32 {
    bytes
        .iter()
        .filter(|b| b.is_ascii_digit())
        .fold(0, |n, &b| n * 10 + u32::from(b - b'0'))
}

fn ssn(c: Cursor<'_>, p: usize) -> Scan {
    if !shaped(c, p, b"ddd-dd-dddd")? || !right_ok(c, p + 11)? {
        return Ok(None);
    }
    let area = number(c.slice(p, p + 3));
    let group = number(c.slice(p + 4, p + 6));
    let serial = number(c.slice(p + 7, p + 11));
    let valid = area != 0 && area != 666 && area < 900 && group != 0 && serial != 0;
    Ok(valid.then_some(p + 11))
}

fn nino(c: Cursor<'_>, p: usize) -> Scan {
    let shape: &[u8] = if c.at(p + 2)? == Some(b' ') {
        b"LL dd dd dd S"
    } else {
        b"LLddddddS"
    };
    if !shaped(c, p, shape)? || !right_ok(c, p + shape.len())? {
        return Ok(None);
    }
    let valid = match c.slice(p, p + 2) {
        &[first, second] => {
            !b"DFIQUV".contains(&first)
                && !b"DFIOQUV".contains(&second)
                && !matches!(
                    &[first, second],
                    b"BG" | b"GB" | b"NK" | b"KN" | b"TN" | b"NT" | b"ZZ"
                )
        }
        _ => false,
    };
    Ok(valid.then_some(p + shape.len()))
}

/// At most this many digit groups in a phone number.
const PHONE_GROUPS: usize = 8;

/// One digit group of a phone number.
#[derive(Debug, Clone, Copy)]
struct Group {
    digits: usize,
    /// Its first two digits (0 where absent).
    lead: [u8; 2],
    paren: bool,
    /// The separator before it (`None` for the first group or none written).
    sep: Option<u8>,
    /// Where it ends.
    end: usize,
}

/// A digit group at `i`: digits, or digits in parentheses.
fn phone_group(c: Cursor<'_>, i: usize) -> Result<Option<Group>, Stop> {
    let (paren, from) = match c.at(i)? {
        Some(b'(') => (true, i + 1),
        Some(b) if b.is_ascii_digit() => (false, i),
        _ => return Ok(None),
    };
    let (n, mut j) = digits(c, from, if paren { 5 } else { 15 })?;
    if n == 0 || (paren && n > 5) {
        return Ok(None);
    }
    if paren {
        if c.at(j)? != Some(b')') {
            return Ok(None);
        }
        j += 1;
    }
    let lead = match c.slice(from, from + 2) {
        [a, b] => [*a, *b],
        [a] => [*a, 0],
        _ => [0, 0],
    };
    Ok(Some(Group {
        digits: n,
        lead,
        paren,
        sep: None,
        end: j,
    }))
}

fn phone(c: Cursor<'_>, p: usize) -> Scan {
    let plus = c.at(p)? == Some(b'+');
    let Some(first) = phone_group(c, if plus { p + 1 } else { p })? else {
        return Ok(None);
    };
    if first.digits > 15 {
        return Ok(None);
    }
    let mut groups = [first; PHONE_GROUPS];
    let mut count = 1usize;
    let mut total = first.digits;
    while count < PHONE_GROUPS {
        let last = groups.get(count - 1).copied().unwrap_or(first);
        let (sep, next) = match c.at(last.end)? {
            Some(s @ (b' ' | b'-' | b'.')) => (Some(s), last.end + 1),
            // Without a separator only a parenthesised group may touch another group.
            Some(b'(') if !last.paren => (None, last.end),
            Some(b) if last.paren && b.is_ascii_digit() => (None, last.end),
            _ => break,
        };
        if sep.is_some() && !matches!(c.at(next)?, Some(b'(' | b'0'..=b'9')) {
            break;
        }
        let Some(mut group) = phone_group(c, next)? else {
            break;
        };
        if total + group.digits > 15 {
            break;
        }
        group.sep = sep;
        if let Some(slot) = groups.get_mut(count) {
            *slot = group;
        }
        count += 1;
        total += group.digits;
    }
    // The longest run of groups that is a phone number and may end where it does.
    for k in (1..=count).rev() {
        let run = groups.get(..k).unwrap_or_default();
        let digits = run.iter().map(|g| g.digits).sum::<usize>();
        let valid = if plus {
            (b'1'..=b'9').contains(&first.lead[0]) && (8..=15).contains(&digits)
        } else {
            north_american(run) || trunk(run, digits) || with_country_one(run)
        };
        let end = run.last().map_or(p, |g| g.end);
        if valid && right_ok(c, end)? {
            return Ok(Some(end));
        }
    }
    Ok(None)
}

/// `(555) 123-4567`, `555-123-4567`, `555.123.4567`.
fn north_american(groups: &[Group]) -> bool {
    let [area, exchange, line] = groups else {
        return false;
    };
    let shape = area.digits == 3 && exchange.digits == 3 && line.digits == 4;
    let area_ok = (b'2'..=b'9').contains(&area.lead[0]);
    let seps = if area.paren {
        matches!(exchange.sep, None | Some(b' ')) && matches!(line.sep, Some(b'-' | b' ' | b'.'))
    } else {
        matches!(exchange.sep, Some(b'-' | b'.')) && exchange.sep == line.sep
    };
    shape && area_ok && seps && !exchange.paren && !line.paren
}

/// `1-800-555-0199`, `1 (555) 123-4567`: the North American form after its country code.
fn with_country_one(groups: &[Group]) -> bool {
    let [one, area, exchange, line] = groups else {
        return false;
    };
    let sep_ok = if area.paren {
        area.sep == Some(b' ')
    } else {
        area.sep == exchange.sep
    };
    one.digits == 1 && one.lead[0] == b'1' && sep_ok && north_american(&[*area, *exchange, *line])
}

/// A national number with a trunk zero: `0151 2345678`, `020 7946 0958`, `(020) 7946 0958`.
fn trunk(groups: &[Group], total: usize) -> bool {
    let Some((first, rest)) = groups.split_first() else {
        return false;
    };
    let Some((second, tail)) = rest.split_first() else {
        return false;
    };
    let same =
        |sep: Option<u8>| matches!(sep, Some(b' ' | b'-')) && tail.iter().all(|g| g.sep == sep);
    let seps = if first.paren {
        matches!(second.sep, None | Some(b' ')) && tail.first().is_none_or(|g| same(g.sep))
    } else {
        same(second.sep)
    };
    first.lead[0] == b'0'
        && first.lead[1] != b'0'
        && (2..=5).contains(&first.digits)
        && rest.len() <= 4
        && (9..=12).contains(&total)
        && seps
        && rest.iter().all(|g| !g.paren && g.digits >= 2)
}

fn email(c: Cursor<'_>, p: usize) -> Scan {
    let mut i = p;
    let mut last = 0u8;
    while let Some(b) = c.at(i)? {
        if !is_local(b) {
            break;
        }
        if b == b'.' && last == b'.' {
            return Ok(None);
        }
        last = b;
        i += 1;
        if i - p > 64 {
            return Ok(None);
        }
    }
    if last == b'.' || c.at(i)? != Some(b'@') {
        return Ok(None);
    }
    i += 1;
    let mut labels = 0usize;
    let mut tld_ok;
    loop {
        let start = i;
        while let Some(b) = c.at(i)? {
            if !(b.is_ascii_alphanumeric() || b == b'-') {
                break;
            }
            i += 1;
        }
        let label = c.slice(start, i);
        if label.is_empty()
            || label.len() > 63
            || label.first() == Some(&b'-')
            || label.last() == Some(&b'-')
        {
            return Ok(None);
        }
        labels += 1;
        tld_ok = label.len() >= 2 && label.iter().all(u8::is_ascii_alphabetic);
        if c.at(i)? == Some(b'.') && is_alnum(c.at(i + 1)?) {
            i += 1;
        } else {
            break;
        }
    }
    if labels < 2 || !tld_ok || i - p > 254 || matches!(c.at(i)?, Some(b'_' | b'@')) {
        return Ok(None);
    }
    Ok(Some(i))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value of `kind` starting at the first byte of `text`, if any.
    fn at_start(kind: PiiKind, text: &str) -> Option<&str> {
        let c = Cursor::new(text.as_bytes(), true).limited(window(kind));
        scan(kind, c, 0).ok().flatten().map(|end| &text[..end])
    }

    #[test]
    fn rank_is_the_place_in_precedence() {
        for (place, kind) in PRECEDENCE.iter().enumerate() {
            assert_eq!(rank(*kind), place);
        }
    }

    #[test]
    fn luhn_accepts_known_numbers_and_rejects_a_changed_digit() {
        assert!(luhn(b"4111111111111111"));
        assert!(luhn(b"4111 1111 1111 1111"));
        assert!(luhn(b"378282246310005"));
        assert!(!luhn(b"4111111111111112"));
        assert!(!luhn(b""));
    }

    #[test]
    fn mod97_accepts_known_ibans_in_any_case_and_rejects_a_changed_digit() {
        assert!(mod97(b"GB82WEST12345698765432"));
        assert!(mod97(b"gb82 west 1234 5698 7654 32"));
        assert!(mod97(b"DE89370400440532013000"));
        assert!(!mod97(b"GB82WEST12345698765433"));
        assert!(!mod97(b"GB82"));
    }

    #[test]
    fn a_scan_that_reads_past_the_bytes_so_far_asks_for_more() {
        let c = Cursor::new(b"4111 1111 1111 1111", false).limited(window(PiiKind::CardNumber));
        assert_eq!(scan(PiiKind::CardNumber, c, 0), Err(Stop::More));
        let c = Cursor::new(b"4111 1111 1111 1111", true).limited(window(PiiKind::CardNumber));
        assert_eq!(scan(PiiKind::CardNumber, c, 0), Ok(Some(19)));
    }

    #[test]
    fn a_scan_never_reads_past_its_window() {
        // A 300-letter word cannot be a local part: the e-mail scan gives up, it does not wait.
        let text = "a".repeat(300);
        let c = Cursor::new(text.as_bytes(), false).limited(window(PiiKind::Email));
        assert_eq!(scan(PiiKind::Email, c, 0), Ok(None));
        let text = format!("a@{}", "b".repeat(300));
        let c = Cursor::new(text.as_bytes(), false).limited(window(PiiKind::Email));
        assert_eq!(scan(PiiKind::Email, c, 0), Err(Stop::Limit));
    }

    #[test]
    fn card_groups_and_their_ends() {
        let k = PiiKind::CardNumber;
        assert_eq!(
            at_start(k, "4111-1111-1111-1111."),
            Some("4111-1111-1111-1111")
        );
        assert_eq!(at_start(k, "3782 822463 10005"), Some("3782 822463 10005"));
        assert_eq!(
            at_start(k, "4111 1111 1111 1111 12/27"),
            Some("4111 1111 1111 1111")
        );
        // A card followed by more digits is still a card (for safety).
        assert_eq!(
            at_start(k, "4111 1111 1111 1111 2027"),
            Some("4111 1111 1111 1111")
        );
        assert_eq!(
            at_start(k, "4111-1111-1111-1111-12"),
            Some("4111-1111-1111-1111")
        );
        assert_eq!(
            at_start(k, "4111 1111 1111 1111 5555 5555 5555 4444"),
            Some("4111 1111 1111 1111")
        );
        assert_eq!(
            at_start(k, "4111111111111111-5555555555554444"),
            Some("4111111111111111")
        );
        assert_eq!(at_start(k, "4111 1111-1111 1111"), None);
        assert_eq!(at_start(k, "41111111111111111111"), None);
    }

    #[test]
    fn iban_takes_the_longest_valid_prefix_of_groups() {
        let k = PiiKind::Iban;
        let v = "AT61 1904 3002 3457 3201";
        assert_eq!(at_start(k, &format!("{v} text and more")), Some(v));
        assert_eq!(at_start(k, v), Some(v));
        assert_eq!(
            at_start(k, "GB82 WEST 1234 5698 7654 32 is mine"),
            Some("GB82 WEST 1234 5698 7654 32")
        );
        assert_eq!(at_start(k, "GB82WEST12345698765432x"), None);
    }

    #[test]
    fn national_insurance_prefixes_and_suffixes() {
        let k = PiiKind::NationalId;
        assert_eq!(at_start(k, "AB123456C"), Some("AB123456C"));
        assert_eq!(at_start(k, "AB 12 34 56 C."), Some("AB 12 34 56 C"));
        assert_eq!(at_start(k, "GB123456C"), None);
        assert_eq!(at_start(k, "DA123456C"), None);
        assert_eq!(at_start(k, "AO123456C"), None);
        assert_eq!(at_start(k, "AB123456E"), None);
        assert_eq!(at_start(k, "ab123456c"), None);
        assert_eq!(at_start(k, "AB 123456 C"), None);
    }

    #[test]
    fn phone_shapes() {
        let k = PiiKind::Phone;
        for yes in [
            "+44 (0)20 7946 0958",
            "+1 (555) 123-4567",
            "+4915123456789",
            "+33 6 12 34 56 78",
            "(555) 123-4567",
            "(555)123-4567",
            "555-123-4567",
            "555.123.4567",
            "1-800-555-0199",
            "1 (555) 123-4567",
            "0151 2345678",
            "020 7946 0958",
            "0151-2345678",
            "(020) 7946 0958",
            "(0151)2345678",
            "06 12 34 56 78",
        ] {
            assert_eq!(at_start(k, yes), Some(yes), "{yes}");
        }
        for no in [
            "+0 123 456 789",
            "+123 4567",
            "555 123 4567",
            "155-123-4567",
            "555-123.4567",
            "1-800 555 0199",
            "2-800-555-0199",
            "0012 3456 7890",
            "0 151 2345678",
            "2026-11-22",
            "22.11.2026",
            "12345678901",
            "555-123-4567.5",
            "(555 123-4567",
        ] {
            assert_eq!(at_start(k, no), None, "{no}");
        }
    }

    #[test]
    fn email_shapes() {
        let k = PiiKind::Email;
        assert_eq!(
            at_start(k, "ann.lee+x@mail.example.co.uk."),
            Some("ann.lee+x@mail.example.co.uk")
        );
        for no in [
            "ann..lee@example.com",
            "ann.@example.com",
            "ann@localhost",
            "ann@example.c",
            "ann@example.123",
            "ann@-example.com",
            "ann@example.com_x",
            "ann@@example.com",
        ] {
            assert_eq!(at_start(k, no), None, "{no}");
        }
        let long = format!("{}@example.com", "a".repeat(65));
        assert_eq!(at_start(k, &long), None);
    }
}
