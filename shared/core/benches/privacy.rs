//! Throughput of the privacy guard on a model-sized answer.
//!
//! The answer is ~16 KB of ordinary English (with dates, amounts, order numbers and versions
//! that must stay) and six personal values, one of each kind and two phones. Two cases, both
//! reported in bytes per second:
//!
//! - `mask_whole`: `PrivacyGuard::mask` over the whole answer;
//! - `stream_20b`: the same answer through a `StreamMasker` in ~20-byte chunks, as model
//!   deltas arrive (output identical to the whole-text mask).
//!
//! Before measuring, it prints the hold-back seen while streaming: the most bytes held at once
//! and the guard's bound (`max_token_len`).
//!
//! Run: `cargo bench -p baton-core --bench privacy` (add `-- --quick` for a short run).
//! Microseconds per KB = 1000 / (throughput in MiB/s × 1.048576).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::hint::black_box;
use std::sync::Arc;

use baton_core::privacy::{PrivacyGuard, PrivacyPolicy, PrivacyReceipt, StreamMasker};
use criterion::{Criterion, Throughput};

const SENTENCES: [&str; 12] = [
    "Thanks for your patience while I looked into this for you.",
    "Your order #482913 shipped on 2026-11-22 and should arrive within three to five working days.",
    "The refund of $12.50 was issued to the original payment method, which usually takes a week.",
    "If the parcel has not arrived by Friday, let me know and I will open an investigation with the carrier.",
    "Version 2.14.3 of the app fixes the sync problem you described; please update when you can.",
    "Our opening hours are 9:00 to 17:30 on weekdays, and 10:00 to 14:00 on Saturdays.",
    "The total for the three items came to 1,234.56 including delivery and tax.",
    "I have added a note to your account so that the next agent can see the whole history.",
    "You can also track the shipment yourself from the orders page, under the heading Deliveries.",
    "In 2025 we changed the returns policy: items can now be sent back within 60 days.",
    "Is there anything else I can help you with today?",
    "Ticket A-12345 is now closed, but replying to this message will reopen it.",
];

const VALUES: [&str; 6] = [
    "You can reach the billing team at billing.support@example.com at any time.",
    "For urgent questions call +44 20 7946 0958 or, from the US, (555) 123-4567.",
    "The charge was made on the card 4111 1111 1111 1111, which we have now blocked.",
    "The refund goes to IBAN GB82 WEST 1234 5698 7654 32 as you asked.",
    "For the tax form we used the number 123-45-6789 you gave us.",
    "Please keep this reference safe.",
];

/// ~16 KB of answer: the sentences in a rotating order, a value every ~2.7 KB.
fn answer() -> String {
    let mut text = String::new();
    let mut i = 0usize;
    let mut next_value = 0usize;
    while text.len() < 16 * 1024 {
        text.push_str(SENTENCES[(i * 7) % SENTENCES.len()]);
        text.push(if i % 5 == 4 { '\n' } else { ' ' });
        if text.len() > (next_value + 1) * 2700 && next_value < VALUES.len() {
            text.push_str(VALUES[next_value]);
            text.push(' ');
            next_value += 1;
        }
        i += 1;
    }
    text
}

/// The answer cut into ~20-byte chunks on character boundaries.
fn chunks(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut cut = rest.len().min(20);
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        out.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    out
}

fn stream(
    guard: &Arc<PrivacyGuard>,
    chunks: &[&str],
    receipt: &mut PrivacyReceipt,
) -> (String, usize) {
    let mut masker = StreamMasker::new(guard.clone());
    let mut out = String::new();
    let mut peak = 0;
    for chunk in chunks {
        out.push_str(&masker.push(chunk, receipt));
        peak = peak.max(masker.held());
    }
    out.push_str(&masker.finish(receipt));
    (out, peak)
}

/// Prints the hold-back seen while streaming the answer, and checks the stream's output.
fn report_hold_back(guard: &Arc<PrivacyGuard>, text: &str) {
    let mut whole_receipt = PrivacyReceipt::default();
    let whole = guard.mask(text, &mut whole_receipt);
    let mut receipt = PrivacyReceipt::default();
    let (streamed, peak) = stream(guard, &chunks(text), &mut receipt);
    assert_eq!(streamed, whole);
    assert_eq!(receipt, whole_receipt);
    println!(
        "privacy: {} bytes, {} values masked, hold-back peak {} bytes (bound {})",
        text.len(),
        receipt.total,
        peak,
        guard.max_token_len()
    );
}

fn benches(c: &mut Criterion) {
    let guard = Arc::new(PrivacyGuard::new(&PrivacyPolicy::default()));
    let text = answer();
    report_hold_back(&guard, &text);
    let pieces = chunks(&text);

    let mut group = c.benchmark_group("privacy");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function("mask_whole", |b| {
        b.iter(|| {
            let mut receipt = PrivacyReceipt::default();
            black_box(guard.mask(black_box(&text), &mut receipt))
        })
    });
    group.bench_function("stream_20b", |b| {
        b.iter(|| {
            let mut receipt = PrivacyReceipt::default();
            black_box(stream(&guard, black_box(&pieces), &mut receipt))
        })
    });
    group.finish();
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    benches(&mut criterion);
    criterion.final_summary();
}
