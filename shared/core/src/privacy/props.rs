//! Property tests: streaming equals whole-text masking for any chunking, the hold-back stays
//! bounded, and values written between words are always masked.

use std::sync::Arc;

use proptest::prelude::*;

use super::*;

/// Appends the Luhn check digit to `digits`.
fn with_luhn_digit(digits: &str) -> String {
    (0..10)
        .map(|d| format!("{digits}{d}"))
        .find(|n| detect::luhn(n.as_bytes()))
        .unwrap_or_default()
}

fn card() -> impl Strategy<Value = String> {
    ("[3-6][0-9]{14}", 0..3usize).prop_map(|(body, style)| {
        let number = with_luhn_digit(&body);
        let groups: Vec<&str> = (0..4).map(|i| &number[i * 4..i * 4 + 4]).collect();
        match style {
            0 => number,
            1 => groups.join(" "),
            _ => groups.join("-"),
        }
    })
}

/// A valid IBAN: random country and account, check digits computed, grouped or not, either
/// case.
fn iban() -> impl Strategy<Value = String> {
    ("[A-Z]{2}", "[0-9A-Z]{11,30}", any::<bool>(), any::<bool>()).prop_map(
        |(country, bban, grouped, lower)| {
            let digits: String = format!("{bban}{country}00")
                .chars()
                .map(|c| c.to_digit(36).unwrap_or(0).to_string())
                .collect();
            let rest = digits
                .bytes()
                .fold(0u32, |r, d| (r * 10 + u32::from(d - b'0')) % 97);
            let compact = format!("{country}{:02}{bban}", 98 - rest);
            let value = if grouped {
                compact
                    .as_bytes()
                    .chunks(4)
                    .map(|c| String::from_utf8_lossy(c).into_owned())
                    .collect::<Vec<_>>()
                    .join(" ")
            } else {
                compact
            };
            if lower { value.to_lowercase() } else { value }
        },
    )
}

fn national_id() -> impl Strategy<Value = String> {
    prop_oneof![
        (1..900u32, 1..100u32, 1..10000u32)
            .prop_filter("no 666 area", |(a, _, _)| *a != 666)
            .prop_map(|(a, g, s)| format!("{a:03}-{g:02}-{s:04}")),
        (
            prop::sample::select(vec!["AB", "CE", "JG", "NA", "ZA", "PX"]),
            "[0-9]{6}",
            "[A-D]",
            any::<bool>()
        )
            .prop_map(|(prefix, d, suffix, spaced)| if spaced {
                format!("{prefix} {} {} {} {suffix}", &d[..2], &d[2..4], &d[4..])
            } else {
                format!("{prefix}{d}{suffix}")
            }),
    ]
}

fn email() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9]{0,7}([._+-][a-z0-9]{1,6})?@[a-z][a-z0-9]{1,8}\\.(com|org|io|co\\.uk)"
}

fn phone() -> impl Strategy<Value = String> {
    prop_oneof![
        "\\+44 20 [0-9]{4} [0-9]{4}",
        "\\+1 \\([2-9][0-9]{2}\\) [0-9]{3}-[0-9]{4}",
        "\\+49 151 [0-9]{8}",
        "\\([2-9][0-9]{2}\\) [0-9]{3}-[0-9]{4}",
        "[2-9][0-9]{2}-[0-9]{3}-[0-9]{4}",
        "0[1-9][0-9]{2} [0-9]{7}",
        "0[1-9]0 [0-9]{4} [0-9]{4}",
    ]
}

/// A value of some kind, as written.
fn value() -> impl Strategy<Value = (PiiKind, String)> {
    prop_oneof![
        card().prop_map(|v| (PiiKind::CardNumber, v)),
        iban().prop_map(|v| (PiiKind::Iban, v)),
        national_id().prop_map(|v| (PiiKind::NationalId, v)),
        email().prop_map(|v| (PiiKind::Email, v)),
        phone().prop_map(|v| (PiiKind::Phone, v)),
    ]
}

/// Ordinary tokens, including the look-alikes the guard must leave alone.
fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-zA-Z]{1,10}",
        1 => prop::sample::select(vec![
            "the", "and", "Order", "#123456", "A-12345", "2026-11-22", "22.11.2026", "12:30",
            "1,234.56", "$12.50", "v1.2.3", "2026", "IBAN", "card", "@", "+", "(", ")", "x@", "é",
            "—", "🎉", "日本", "0", "00",
        ]).prop_map(str::to_owned),
        2 => "[0-9]{1,8}",
        1 => "[0-9]{2,4}[ .-][0-9]{2,4}",
    ]
}

fn separator() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        " ", " ", " ", "  ", ", ", ". ", "\n", "", "-", ":", "(", ") ", ".", "@", "+", " é ",
    ])
    .prop_map(str::to_owned)
}

/// Text of words, numbers and values, glued by separators (sometimes none).
fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        (
            prop_oneof![3 => token(), 1 => value().prop_map(|(_, v)| v)],
            separator(),
        ),
        0..24,
    )
    .prop_map(|parts| parts.into_iter().map(|(t, s)| t + &s).collect())
}

fn policy() -> impl Strategy<Value = PrivacyPolicy> {
    (
        prop::sample::subsequence(PiiKind::ALL.to_vec(), 0..=5),
        prop::sample::select(vec![
            MaskStyle::Label,
            MaskStyle::Stars,
            MaskStyle::LastFour,
        ]),
    )
        .prop_map(|(kinds, mask)| PrivacyPolicy { kinds, mask })
}

/// Cuts `text` at the given fractions of its length, moved to character boundaries.
fn chunks(text: &str, cuts: &[f64]) -> Vec<String> {
    let mut at: Vec<usize> = cuts
        .iter()
        .map(|f| {
            let mut i = ((text.len() as f64) * f) as usize;
            while !text.is_char_boundary(i) {
                i += 1;
            }
            i
        })
        .collect();
    at.push(0);
    at.push(text.len());
    at.sort_unstable();
    at.windows(2).map(|w| text[w[0]..w[1]].to_owned()).collect()
}

/// Streams `chunks`; returns the output, the receipt and the largest hold.
fn stream(guard: &Arc<PrivacyGuard>, chunks: &[String]) -> (String, PrivacyReceipt, usize) {
    let mut masker = StreamMasker::new(guard.clone());
    let mut receipt = PrivacyReceipt::default();
    let mut out = String::new();
    let mut peak = 0;
    for chunk in chunks {
        out += &masker.push(chunk, &mut receipt);
        peak = peak.max(masker.held());
    }
    out += &masker.finish(&mut receipt);
    (out, receipt, peak)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn streaming_equals_whole_text_masking(
        text in text(),
        policy in policy(),
        cuts in prop::collection::vec(0.0..1.0f64, 0..12),
    ) {
        let guard = Arc::new(PrivacyGuard::new(&policy));
        let mut whole_receipt = PrivacyReceipt::default();
        let whole = guard.mask(&text, &mut whole_receipt);
        let (out, receipt, peak) = stream(&guard, &chunks(&text, &cuts));
        prop_assert_eq!(&out, &whole);
        prop_assert_eq!(&receipt, &whole_receipt);
        prop_assert!(peak <= guard.max_token_len());
    }

    #[test]
    fn one_character_chunks_equal_whole_text_masking(text in text(), policy in policy()) {
        let guard = Arc::new(PrivacyGuard::new(&policy));
        let mut whole_receipt = PrivacyReceipt::default();
        let whole = guard.mask(&text, &mut whole_receipt);
        let chars: Vec<String> = text.chars().map(String::from).collect();
        let (out, receipt, peak) = stream(&guard, &chars);
        prop_assert_eq!(&out, &whole);
        prop_assert_eq!(&receipt, &whole_receipt);
        prop_assert!(peak <= guard.max_token_len());
    }

    #[test]
    fn a_value_between_words_is_always_masked(
        (kind, value) in value(),
        before in "[a-z]{5,9}",
        after in "[a-z]{5,9}",
        end in prop::sample::select(vec![".", ",", "", "!", ")"]),
    ) {
        let text = format!("{before} {value} {after}{end}");
        let mut receipt = PrivacyReceipt::default();
        let out = PrivacyGuard::new(&PrivacyPolicy::default()).mask(&text, &mut receipt);
        prop_assert!(!out.contains(&value), "{} -> {}", text, out);
        prop_assert_eq!(receipt.total, 1);
        prop_assert_eq!(receipt.by_kind.get(&kind), Some(&1));
    }

    #[test]
    fn words_and_plain_numbers_are_never_masked(
        pairs in prop::collection::vec(
            ("[a-zA-Z]{1,12}", prop_oneof!["[1-9][0-9]{0,5}", "[0-9]{1,3}[.,:][0-9]{2}", "[0-9]{4}-[0-9]{2}-[0-9]{2}"]),
            0..20,
        ),
    ) {
        let text = pairs.iter().map(|(w, n)| format!("{w} {n}")).collect::<Vec<_>>().join(" ");
        let mut receipt = PrivacyReceipt::default();
        let out = PrivacyGuard::new(&PrivacyPolicy::default()).mask(&text, &mut receipt);
        prop_assert_eq!(out, text);
        prop_assert_eq!(receipt.total, 0);
    }
}

proptest! {
    // Each case streams several kilobytes: fewer cases.
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn long_streams_equal_whole_text_masking(
        texts in prop::collection::vec(text(), 40..90),
        sizes in prop::collection::vec(1..80usize, 1..8),
        policy in policy(),
    ) {
        // Several kilobytes (the buffer is compacted many times), chunks by `push` and
        // `push_into` in turn.
        let text: String = texts.concat();
        let guard = Arc::new(PrivacyGuard::new(&policy));
        let mut whole_receipt = PrivacyReceipt::default();
        let whole = guard.mask(&text, &mut whole_receipt);
        let mut masker = StreamMasker::new(guard.clone());
        let mut receipt = PrivacyReceipt::default();
        let mut out = String::new();
        let mut rest = text.as_str();
        for (k, size) in sizes.iter().cycle().enumerate() {
            if rest.is_empty() {
                break;
            }
            let mut cut = rest.len().min(*size);
            while !rest.is_char_boundary(cut) {
                cut += 1;
            }
            if k % 2 == 0 {
                out += &masker.push(&rest[..cut], &mut receipt);
            } else {
                masker.push_into(&rest[..cut], &mut receipt, &mut out);
            }
            prop_assert!(masker.held() <= guard.max_token_len());
            rest = &rest[cut..];
        }
        masker.finish_into(&mut receipt, &mut out);
        prop_assert_eq!(&out, &whole);
        prop_assert_eq!(&receipt, &whole_receipt);
    }
}
