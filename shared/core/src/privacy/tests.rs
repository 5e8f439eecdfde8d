//! The guard on examples: each kind's positives and look-alikes, styles, policies, receipts
//! and streaming.

use std::sync::Arc;

use super::*;

fn guard(kinds: &[PiiKind], mask: MaskStyle) -> PrivacyGuard {
    PrivacyGuard::new(&PrivacyPolicy {
        kinds: kinds.to_vec(),
        mask,
    })
}

fn all() -> PrivacyGuard {
    PrivacyGuard::new(&PrivacyPolicy::default())
}

fn masked(text: &str) -> (String, PrivacyReceipt) {
    let mut receipt = PrivacyReceipt::default();
    (all().mask(text, &mut receipt), receipt)
}

/// Streams `text` in the given chunks through `guard`; checks `held()` on the way.
fn streamed(guard: &Arc<PrivacyGuard>, chunks: &[&str]) -> (String, PrivacyReceipt) {
    let mut stream = StreamMasker::new(guard.clone());
    let mut receipt = PrivacyReceipt::default();
    let mut out = String::new();
    for chunk in chunks {
        out += &stream.push(chunk, &mut receipt);
        assert!(stream.held() <= guard.max_token_len());
    }
    out += &stream.finish(&mut receipt);
    assert_eq!(stream.held(), 0);
    (out, receipt)
}

/// One value of each kind, as written in a sentence.
const SAMPLES: &[(PiiKind, &str)] = &[
    (PiiKind::Email, "ann.lee@example.com"),
    (PiiKind::Email, "j_doe+news@mail.example.co.uk"),
    (PiiKind::Phone, "+44 20 7946 0958"),
    (PiiKind::Phone, "+1 (555) 123-4567"),
    (PiiKind::Phone, "(555) 123-4567"),
    (PiiKind::Phone, "555-123-4567"),
    (PiiKind::Phone, "0151 2345678"),
    (PiiKind::Phone, "020 7946 0958"),
    (PiiKind::Phone, "(020) 7946 0958"),
    (PiiKind::Phone, "1-800-555-0199"),
    (PiiKind::Phone, "+49 (0)151 2345 6789"),
    (PiiKind::CardNumber, "4111 1111 1111 1111"),
    (PiiKind::CardNumber, "5500-0000-0000-0004"),
    (PiiKind::CardNumber, "378282246310005"),
    (PiiKind::CardNumber, "3782 822463 10005"),
    (PiiKind::Iban, "GB82 WEST 1234 5698 7654 32"),
    (PiiKind::Iban, "de89370400440532013000"),
    (PiiKind::Iban, "FR14 2004 1010 0505 0001 3M02 606"),
    (PiiKind::NationalId, "123-45-6789"),
    (PiiKind::NationalId, "AB 12 34 56 C"),
    (PiiKind::NationalId, "JG103759A"),
];

#[test]
fn every_kind_is_masked_with_its_label_and_counted() {
    for &(kind, value) in SAMPLES {
        let text = format!("Mine is {value}, thanks.");
        let (out, receipt) = masked(&text);
        let label = mask::label(kind);
        assert_eq!(out, format!("Mine is {label}, thanks."), "{value}");
        assert_eq!(receipt.total, 1, "{value}");
        assert_eq!(receipt.by_kind.get(&kind), Some(&1), "{value}");
    }
}

#[test]
fn values_are_found_at_the_edges_of_a_text_and_in_punctuation() {
    for &(_, value) in SAMPLES {
        for text in [
            value.to_owned(),
            format!("({value})"),
            format!("\"{value}\""),
            format!("**{value}**"),
            format!("`{value}`"),
            format!("x:{value}\n"),
            format!("« {value} »"),
        ] {
            let (out, receipt) = masked(&text);
            assert!(!out.contains(value), "{text} -> {out}");
            assert_eq!(receipt.total, 1, "{text}");
        }
    }
}

#[test]
fn ordinary_numbers_are_never_masked() {
    for text in [
        "The meeting is on 2026-11-22 at 10:30.",
        "Am 22.11.2026 um 14.30 Uhr.",
        "It costs 1,234.56 or $12.50 (or €1.234,56).",
        "We sold 1234567 units in 2025 and 12,000,000 in total.",
        "Order #123456 and ticket A-12345 are closed.",
        "Upgrade from v1.2.3 to 10.0.4; see RFC 5322 section 3.4.1.",
        "Call extension 4567 or room 101.",
        "Pi is 3.14159265358979 and e is 2.718281828459045.",
        "The IP was 192.168.100.200 and the port 8080.",
        "Scores: 10-12, 15-20, 100-200-300.",
        "Tracking 1Z999AA10123456784 shipped.",
        "Page 12 of 345, 6 items, 78% done.",
        "Between 100 200 3000 and 555 123 4567 no phone is written.",
        "A list: 2024 2025 2026 2027.",
        "An amount of 5551234567.89 is large.",
        "ISBN 978-3-16-148410-0, UUID 123e4567-e89b-12d3-a456-426614174000.",
        "At 10:30:45 on 11/22/2026, at 51.5074, -0.1278, 1 000 000 people came.",
        "Version 1.2.3.4, build 20261122, hash a3f5c2e1b4d6.",
    ] {
        let (out, receipt) = masked(text);
        assert_eq!(out, text);
        assert_eq!(receipt.total, 0, "{text}");
    }
}

#[test]
fn failed_checksums_are_not_masked() {
    for text in [
        "Card 4111 1111 1111 1112 declined.",
        "Card 4111111111111112 declined.",
        "IBAN GB82 WEST 1234 5698 7654 33 is wrong.",
        "IBAN DE89370400440532013001 is wrong.",
        "SSN 000-12-3456, 666-12-3456, 900-12-3456, 123-00-4567, 123-45-0000.",
        "NINO GB123456A, AB123456E, DA123456A.",
    ] {
        let (out, receipt) = masked(text);
        assert_eq!(out, text);
        assert_eq!(receipt.total, 0, "{text}");
    }
}

#[test]
fn card_numbers_inside_longer_digit_runs_are_not_masked() {
    for text in [
        "ref 94111111111111111",
        "ref 41111111111111119999",
        "ref 1.4111111111111111",
    ] {
        let (out, _) = masked(text);
        assert_eq!(out, text);
    }
}

#[test]
fn card_numbers_back_to_back_are_each_masked_even_if_a_reference_is_masked_too() {
    for (text, want) in [
        (
            "cards 4111 1111 1111 1111 5555 5555 5555 4444 on file",
            "cards [card number] [card number] on file",
        ),
        (
            "cards 4111-1111-1111-1111-5555-5555-5555-4444.",
            "cards [card number]-[card number].",
        ),
        (
            "cards 4111111111111111 5555555555554444",
            "cards [card number] [card number]",
        ),
        (
            "cards 4111111111111111-5555555555554444",
            "cards [card number]-[card number]",
        ),
        // The price of safety: a card's digits followed by more groups are masked.
        ("ref 4111 1111 1111 1111 2027", "ref [card number] 2027"),
        ("ref 4111-1111-1111-1111-55", "ref [card number]-55"),
    ] {
        let (out, receipt) = masked(text);
        assert_eq!(out, want, "{text}");
        assert!(receipt.total >= 1);
    }
}

#[test]
fn precedence_card_then_iban_then_national_id_then_email_then_phone() {
    // A card that starts inside a phone shape and runs past it wins.
    let (out, receipt) = masked("Call +44 4111 1111 1111 1111 now");
    assert_eq!(out, "Call +44 [card number] now");
    assert_eq!(receipt.by_kind.get(&PiiKind::CardNumber), Some(&1));
    // A value wholly inside another is part of it: the digits of an IBAN are no card
    // (3704 0044 0001 0000 alone is Luhn-valid).
    let (out, receipt) = masked("Pay DE18 3704 0044 0001 0000 00 today");
    assert!(crate::privacy::detect::luhn(b"3704004400010000"));
    assert_eq!(out, "Pay [IBAN] today");
    assert_eq!(receipt.total, 1);
    let (out, _) = masked("Call +1 4222222222222 now");
    assert_eq!(out, "Call [phone] now");
    // Digits before an at sign are an e-mail's local part, not a phone or a card.
    let (out, _) = masked("Mail 4111111111111111@example.com or 0151-2345678@example.com.");
    assert_eq!(out, "Mail [email] or [email].");
    // With cards off, the crossing phone is kept.
    let g = guard(&[PiiKind::Phone], MaskStyle::Label);
    let mut receipt = PrivacyReceipt::default();
    assert_eq!(
        g.mask("Call +44 4111 1111 1111 1111 now", &mut receipt),
        "Call [phone] 1111 now"
    );
}

#[test]
fn mask_styles() {
    let cases = [
        (
            MaskStyle::Stars,
            "Card 4111 1111 1111 1111, mail ann@example.com.",
            "Card *******************, mail ***************.",
        ),
        (
            MaskStyle::LastFour,
            "Card 4111 1111 1111 1111, phone 020 7946 0958.",
            "Card ***************1111, phone *********0958.",
        ),
        (
            MaskStyle::LastFour,
            "NI AB 12 34 56 C, mail ann@example.com.",
            "NI *******4 56 C, mail **********e.com.",
        ),
        (
            MaskStyle::Label,
            "IBAN GB82WEST12345698765432.",
            "IBAN [IBAN].",
        ),
    ];
    for (style, text, want) in cases {
        let mut receipt = PrivacyReceipt::default();
        let g = PrivacyGuard::new(&PrivacyPolicy {
            kinds: PiiKind::ALL.to_vec(),
            mask: style,
        });
        assert_eq!(g.mask(text, &mut receipt), want);
        assert!(receipt.total > 0);
    }
}

#[test]
fn disabled_kinds_are_left_alone() {
    let text =
        "ann@example.com, 020 7946 0958, 4111111111111111, GB82WEST12345698765432, 123-45-6789";
    let g = guard(&[PiiKind::Email, PiiKind::Iban], MaskStyle::Label);
    let mut receipt = PrivacyReceipt::default();
    assert_eq!(
        g.mask(text, &mut receipt),
        "[email], 020 7946 0958, 4111111111111111, [IBAN], 123-45-6789"
    );
    assert_eq!(receipt.total, 2);
    assert_eq!(receipt.by_kind.len(), 2);

    let none = guard(&[], MaskStyle::Label);
    let mut receipt = PrivacyReceipt::default();
    assert_eq!(none.mask(text, &mut receipt), text);
    assert_eq!(receipt, PrivacyReceipt::default());
    assert_eq!(none.max_token_len(), 0);
}

#[test]
fn receipts_count_every_value_by_kind() {
    let (_, receipt) = masked(
        "a@example.com b@example.org 4111111111111111 020 7946 0958 555-123-4567 \
         123-45-6789; AB123456C GB82WEST12345698765432",
    );
    assert_eq!(receipt.total, 8);
    assert_eq!(receipt.by_kind.get(&PiiKind::Email), Some(&2));
    assert_eq!(receipt.by_kind.get(&PiiKind::Phone), Some(&2));
    assert_eq!(receipt.by_kind.get(&PiiKind::CardNumber), Some(&1));
    assert_eq!(receipt.by_kind.get(&PiiKind::Iban), Some(&1));
    assert_eq!(receipt.by_kind.get(&PiiKind::NationalId), Some(&2));
}

#[test]
fn max_token_len_follows_the_enabled_kinds() {
    assert!(all().max_token_len() >= 254);
    let numbers = guard(&[PiiKind::CardNumber, PiiKind::Phone], MaskStyle::Label);
    assert!(numbers.max_token_len() < 64);
    assert!(numbers.max_token_len() >= "4111 1111 1111 1111 111".len());
}

#[test]
fn a_value_split_at_every_position_of_two_chunks_is_masked() {
    let g = Arc::new(all());
    for &(kind, value) in SAMPLES {
        let text = format!("Reach me at {value} today.");
        let mut receipt = PrivacyReceipt::default();
        let whole = g.mask(&text, &mut receipt);
        for cut in (0..=text.len()).filter(|&i| text.is_char_boundary(i)) {
            let (out, streamed_receipt) = streamed(&g, &[&text[..cut], &text[cut..]]);
            assert_eq!(out, whole, "{value} cut at {cut}");
            assert!(!out.contains(value), "{value} cut at {cut}");
            assert_eq!(streamed_receipt, receipt, "{value} cut at {cut}");
            assert_eq!(streamed_receipt.by_kind.get(&kind), Some(&1));
        }
    }
}

#[test]
fn one_character_chunks_give_the_whole_text_answer() {
    let g = Arc::new(all());
    let text = "Héllo — write to ann@example.com, call +44 20 7946 0958 or 555-123-4567; \
                card 4111 1111 1111 1111, IBAN GB82 WEST 1234 5698 7654 32, SSN 123-45-6789 🎉";
    let chunks: Vec<String> = text.chars().map(String::from).collect();
    let chunks: Vec<&str> = chunks.iter().map(String::as_str).collect();
    let mut receipt = PrivacyReceipt::default();
    let whole = g.mask(text, &mut receipt);
    assert_eq!(receipt.total, 6);
    assert_eq!(streamed(&g, &chunks), (whole, receipt));
}

#[test]
fn ordinary_text_is_released_at_once_up_to_the_last_word() {
    let g = Arc::new(all());
    let mut stream = StreamMasker::new(g);
    let mut receipt = PrivacyReceipt::default();
    assert_eq!(stream.push("Hello there, ", &mut receipt), "Hello there, ");
    assert_eq!(stream.held(), 0);
    assert_eq!(stream.push("friend", &mut receipt), "");
    assert_eq!(stream.held(), "friend".len());
    assert_eq!(stream.push("ly", &mut receipt), "");
    assert_eq!(stream.push(" folks", &mut receipt), "friendly ");
    assert_eq!(stream.finish(&mut receipt), "folks");
    // Finished: the next text starts afresh.
    assert_eq!(stream.push("4111111111111111", &mut receipt), "");
    assert_eq!(stream.finish(&mut receipt), "[card number]");
    assert_eq!(receipt.total, 1);
}

#[test]
fn hold_back_stays_small_on_a_streamed_answer() {
    let g = Arc::new(all());
    let answer = "Thanks for waiting. I checked your account: the card ending in 1111 \
                  (4111 1111 1111 1111) was charged twice on 2026-11-22. I refunded $12.50 to \
                  IBAN GB82 WEST 1234 5698 7654 32. Questions? Write to help@example.com or \
                  call +44 20 7946 0958 between 9:00 and 17:00. Your reference is #123456.";
    let mut stream = StreamMasker::new(g.clone());
    let mut receipt = PrivacyReceipt::default();
    let mut peak = 0;
    let mut out = String::new();
    let mut rest = answer;
    while !rest.is_empty() {
        let mut cut = rest.len().min(20);
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        out += &stream.push(&rest[..cut], &mut receipt);
        peak = peak.max(stream.held());
        rest = &rest[cut..];
    }
    out += &stream.finish(&mut receipt);
    assert_eq!(out, g.mask(answer, &mut PrivacyReceipt::default()));
    assert_eq!(receipt.total, 4);
    // The longest hold is a value in flight (the IBAN, 27 bytes), far under the bound.
    assert!(peak <= 27 + 20, "peak hold-back {peak}");
    assert!(peak <= g.max_token_len());
}

#[test]
fn push_into_appends_what_push_returns() {
    let g = Arc::new(all());
    let text = "Hi — write to ann@example.com or call 020 7946 0958, card 4111 1111 1111 1111.";
    let mut by_push = StreamMasker::new(g.clone());
    let mut by_into = StreamMasker::new(g.clone());
    let (mut receipt, mut into_receipt) = (PrivacyReceipt::default(), PrivacyReceipt::default());
    let mut out = String::from("kept: ");
    let mut rest = text;
    while !rest.is_empty() {
        let mut cut = rest.len().min(7);
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        let before = out.len();
        by_into.push_into(&rest[..cut], &mut into_receipt, &mut out);
        assert_eq!(out[before..], by_push.push(&rest[..cut], &mut receipt));
        assert_eq!(by_into.held(), by_push.held());
        rest = &rest[cut..];
    }
    let before = out.len();
    by_into.finish_into(&mut into_receipt, &mut out);
    assert_eq!(out[before..], by_push.finish(&mut receipt));
    assert_eq!(
        out,
        format!("kept: {}", g.mask(text, &mut PrivacyReceipt::default()))
    );
    assert_eq!(into_receipt, receipt);
    assert_eq!(receipt.total, 3);
    assert_eq!(by_into.held(), 0);
}

#[test]
fn long_streams_equal_the_whole_text_across_buffer_compaction() {
    // Far longer than the stream's buffer keeps released text, with values (and non-ASCII
    // characters) at shifting offsets, so compaction happens in every state.
    let g = Arc::new(all());
    let mut text = String::new();
    for i in 0..1200 {
        text.push_str(["Ordinary words — ", "then 2026-11-22, ", "and ", "€12.50 "][i % 4]);
        if i % 7 == 3 {
            text.push_str(SAMPLES[i % SAMPLES.len()].1);
            text.push(' ');
        }
    }
    assert!(text.len() > 3 * 4096);
    let mut whole_receipt = PrivacyReceipt::default();
    let whole = g.mask(&text, &mut whole_receipt);
    for size in [1, 3, 20, 64, 333, 4095, 4097] {
        let mut pieces = Vec::new();
        let mut rest = text.as_str();
        while !rest.is_empty() {
            let mut cut = rest.len().min(size);
            while !rest.is_char_boundary(cut) {
                cut += 1;
            }
            pieces.push(&rest[..cut]);
            rest = &rest[cut..];
        }
        let (out, receipt) = streamed(&g, &pieces);
        assert_eq!(out, whole, "chunks of {size}");
        assert_eq!(receipt, whole_receipt, "chunks of {size}");
    }
    assert!(whole_receipt.total > 50);
}
