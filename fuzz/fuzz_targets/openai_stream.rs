//! An OpenAI-compatible model's stream (server-sent events, each chunk's JSON, the tool-call
//! deltas assembled into calls) over any bytes, in pieces cut anywhere: events or a plain
//! error, never a panic, and the same answer however the bytes arrive.
#![no_main]

use std::sync::OnceLock;

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;

/// The decoder bounds its waits with tokio's timer, as a live stream's are.
fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a runtime")
    })
}

fuzz_target!(|input: (Vec<u16>, &[u8])| {
    let (cuts, stream) = input;
    let whole = runtime().block_on(baton_openai::decode(vec![Bytes::copy_from_slice(stream)]));
    let mut points: Vec<usize> = cuts
        .iter()
        .map(|c| usize::from(*c) % (stream.len() + 1))
        .collect();
    points.sort_unstable();
    points.dedup();
    let mut pieces = Vec::new();
    let mut from = 0;
    for at in points.into_iter().chain(std::iter::once(stream.len())) {
        pieces.push(Bytes::copy_from_slice(&stream[from..at]));
        from = at;
    }
    let split = runtime().block_on(baton_openai::decode(pieces));
    assert_eq!(format!("{whole:?}"), format!("{split:?}"));
});
