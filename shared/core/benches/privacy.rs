//! Throughput of the privacy guard on a model-sized answer.
//!
//! The answer is ~16 KB of ordinary English (with dates, amounts, order numbers and versions
//! that must stay) and six personal values, one of each kind and two phones. Three cases, all
//! reported in bytes per second:
//!
//! - `mask_whole`: `PrivacyGuard::mask` over the whole answer;
//! - `stream_20b`: the same answer through a `StreamMasker` in ~20-byte chunks, as model
//!   deltas arrive, each chunk's output returned by `push` (a new `String`, as the runtime
//!   takes it);
//! - `stream_20b_into`: the same chunks through `push_into`, appending to one string.
//!
//! Both streams give output identical to the whole-text mask. Before measuring, it prints the
//! hold-back seen while streaming: how many bytes were held after each chunk (peak and mean,
//! against the guard's bound `max_token_len`) and how many chunks each byte waited for before
//! it was released (peak and mean; see `HoldBack`).
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

/// Streams `chunks` with `push`, as the runtime does.
fn stream(guard: &Arc<PrivacyGuard>, chunks: &[&str], receipt: &mut PrivacyReceipt) -> String {
    let mut masker = StreamMasker::new(guard.clone());
    let mut out = String::new();
    for chunk in chunks {
        out.push_str(&masker.push(chunk, receipt));
    }
    out.push_str(&masker.finish(receipt));
    out
}

/// Streams `chunks` with `push_into`, appending to one string.
fn stream_into(guard: &Arc<PrivacyGuard>, chunks: &[&str], receipt: &mut PrivacyReceipt) -> String {
    let mut masker = StreamMasker::new(guard.clone());
    let mut out = String::new();
    for chunk in chunks {
        masker.push_into(chunk, receipt, &mut out);
    }
    masker.finish_into(receipt, &mut out);
    out
}

/// What a stream held back, in bytes and in chunks.
///
/// Each chunk is one model delta, so a byte that waited `n` chunks reached the reader about
/// `n` inter-delta intervals later than it would have unguarded: at Bedrock's typical 20–40
/// ms between deltas, `n` × 20–40 ms. The end of the stream counts as one more chunk for the
/// bytes still held when it comes (the end event follows the last delta the same way).
struct HoldBack {
    chunks: usize,
    /// Bytes held after a chunk: the most and the mean over the chunks.
    peak_held: usize,
    mean_held: f64,
    /// Chunks a byte waited after the one that brought it (0: released at once): the most
    /// and the mean over the bytes.
    peak_wait: usize,
    mean_wait: f64,
}

/// Streams `chunks` and measures the hold-back.
fn hold_back(guard: &Arc<PrivacyGuard>, chunks: &[&str], receipt: &mut PrivacyReceipt) -> HoldBack {
    let mut masker = StreamMasker::new(guard.clone());
    // The chunk each byte arrived with, the bytes received and released so far, each byte's
    // wait.
    let mut arrived: Vec<usize> = Vec::new();
    let (mut received, mut released) = (0usize, 0usize);
    let mut waits: Vec<usize> = Vec::new();
    let (mut peak_held, mut total_held) = (0usize, 0usize);
    for (k, chunk) in chunks.iter().enumerate() {
        masker.push(chunk, receipt);
        arrived.resize(arrived.len() + chunk.len(), k);
        received += chunk.len();
        let held = masker.held();
        peak_held = peak_held.max(held);
        total_held += held;
        // The held bytes are the last ones received: everything before them is out.
        let done = received - held;
        waits.extend(arrived[released..done].iter().map(|&a| k - a));
        released = done;
    }
    masker.finish(receipt);
    waits.extend(arrived[released..].iter().map(|&a| chunks.len() - a));
    assert_eq!(waits.len(), received);
    HoldBack {
        chunks: chunks.len(),
        peak_held,
        mean_held: total_held as f64 / chunks.len().max(1) as f64,
        peak_wait: waits.iter().copied().max().unwrap_or(0),
        mean_wait: waits.iter().sum::<usize>() as f64 / waits.len().max(1) as f64,
    }
}

/// Prints the hold-back seen while streaming the answer, and checks the streams' output.
fn report_hold_back(guard: &Arc<PrivacyGuard>, text: &str) {
    // Bytes are characters here, so the figures in bytes are also in characters.
    assert!(text.is_ascii());
    let pieces = chunks(text);
    let mut whole_receipt = PrivacyReceipt::default();
    let whole = guard.mask(text, &mut whole_receipt);
    for streamed in [stream, stream_into] {
        let mut receipt = PrivacyReceipt::default();
        assert_eq!(streamed(guard, &pieces, &mut receipt), whole);
        assert_eq!(receipt, whole_receipt);
    }
    let mut receipt = PrivacyReceipt::default();
    let held = hold_back(guard, &pieces, &mut receipt);
    assert_eq!(receipt, whole_receipt);
    println!(
        "privacy: {} bytes in {} deltas of ~20 bytes, {} values masked; held after a delta: \
         peak {} bytes, mean {:.1} (bound {}); deltas a byte waited: peak {}, mean {:.3} \
         (at 20-40 ms between deltas: peak {}-{} ms, mean {:.1}-{:.1} ms)",
        text.len(),
        held.chunks,
        receipt.total,
        held.peak_held,
        held.mean_held,
        guard.max_token_len(),
        held.peak_wait,
        held.mean_wait,
        held.peak_wait * 20,
        held.peak_wait * 40,
        held.mean_wait * 20.0,
        held.mean_wait * 40.0,
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
    group.bench_function("stream_20b_into", |b| {
        b.iter(|| {
            let mut receipt = PrivacyReceipt::default();
            black_box(stream_into(&guard, black_box(&pieces), &mut receipt))
        })
    });
    group.finish();
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    benches(&mut criterion);
    criterion.final_summary();
}
