#!/usr/bin/env bash
# Baton's whole test suite: formatting, lints, every crate's tests (unit, golden
# transcripts, store conformance, HTTP and CLI black-box tests) and a smoke run of the
# benchmark. CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
  echo "error: cargo is not installed; install Rust with rustup (the toolchain is pinned in rust-toolchain.toml)" >&2
  exit 1
fi
# Builds are kept outside the checkout so that later runs (and CI on this machine) reuse them.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/baton/target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

step() { printf '\n== %s\n' "$*"; }

step "format"
cargo fmt --all -- --check

step "lints"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "tests"
cargo test --workspace --locked

step "benchmark smoke run"
cargo run --locked -q -p baton-bench -- --smoke
