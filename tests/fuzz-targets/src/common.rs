//! What the targets share: decoding an input as libfuzzer-sys does, a runtime, a server on a
//! loopback port, and cutting an input's bytes where the input says.

// `expect` only on what the harness builds from fixed values (a runtime, a loopback server):
// a failure there is a broken harness, not a finding.
#![allow(clippy::expect_used)]

use std::fmt::Debug;

use arbitrary::{Arbitrary, Unstructured};
use axum::Router;
use bytes::Bytes;

/// `data` as a `T`, exactly as libfuzzer-sys's `fuzz_target!` makes a typed target's input:
/// `None` (the target returns at once) when `data` is shorter than the type's least size or
/// does not decode. A `&str` is the longest UTF-8 prefix of the bytes (arbitrary's
/// `arbitrary_take_rest`), not a refusal of the rest.
pub(crate) fn input<'a, T: Arbitrary<'a>>(data: &'a [u8]) -> Option<T> {
    if data.len() < T::size_hint(0).0 {
        return None;
    }
    T::arbitrary_take_rest(Unstructured::new(data)).ok()
}

/// A current-thread runtime: the server's task runs while a target waits on the client.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

/// Serves `router` on a loopback port of `runtime`; its base URL.
pub(crate) fn serve(runtime: &tokio::runtime::Runtime, router: Router) -> String {
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let base = format!("http://{}", listener.local_addr().expect("an address"));
        tokio::spawn(async move { axum::serve(listener, router).await });
        base
    })
}

/// `bytes` cut at `cuts` (each taken modulo the length, in order).
pub(crate) fn cut(cuts: &[u16], bytes: &[u8]) -> Vec<Bytes> {
    let mut points: Vec<usize> = cuts
        .iter()
        .map(|c| usize::from(*c) % (bytes.len() + 1))
        .collect();
    points.sort_unstable();
    points.dedup();
    let mut pieces = Vec::new();
    let mut from = 0;
    for at in points.into_iter().chain(std::iter::once(bytes.len())) {
        pieces.push(Bytes::copy_from_slice(&bytes[from..at]));
        from = at;
    }
    pieces
}

/// Replaying one input by hand: with `FUZZ_SHOW=1`, prints what the target made of it.
pub(crate) fn show(what: &impl Debug) {
    if std::env::var_os("FUZZ_SHOW").is_some() {
        eprintln!("{what:#?}");
    }
}

/// `run` over `bytes` whole and over `bytes` cut at `cuts`: both must give the same.
pub(crate) fn same_however_cut<T: Debug + PartialEq>(
    cuts: &[u16],
    bytes: &[u8],
    mut run: impl FnMut(Vec<Bytes>) -> T,
) {
    let whole = run(vec![Bytes::copy_from_slice(bytes)]);
    show(&whole);
    let split = run(cut(cuts, bytes));
    assert_eq!(whole, split);
}
