#!/usr/bin/env bash
# Baton's benchmark of the reference turn: builds the server build (profile `dist`, feature
# `jemalloc`) of `baton` and the benchmark, runs the in-process
# figures on both tokio schedulers, then the figures against a real `baton serve`
# (cold start, memory idle and under 1,000 concurrent streaming turns).
#
#   ./infra/bench.sh                      # everything; JSON results under $OUT
#   ./infra/bench.sh --reference FILE     # also print ratios against a reference run
#   ./infra/bench.sh local-model          # time to first token and tokens/s through Baton's
#                                         # OpenAI-compatible provider against llama.cpp's
#                                         # server read raw (./infra/local-model.sh)
#   ./infra/bench.sh memory               # memory over a long conversation instead: 300
#                                         # turns without and with compaction, and
#                                         # compaction's time per episode on DynamoDB Local
#                                         # (installed with ./infra/emulators.sh install)
#   ./infra/bench.sh pictures             # what a 4 MB phone photo costs a turn instead:
#                                         # CPU and memory per turn in process without and
#                                         # with it, the picture check alone, and `baton
#                                         # serve` holding 100 photo turns at once against
#                                         # a stated memory bound
#   ./infra/bench.sh recall               # memory across conversations instead: saving
#                                         # and searching 10,000 memories of one user in
#                                         # the embedded store, what memory adds to the
#                                         # reference turn, and extraction's cost
#
# OUT defaults to ${TMPDIR:-/tmp}/baton-bench. Extra arguments go to baton-bench.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/baton/target}"
out="${OUT:-${TMPDIR:-/tmp}/baton-bench}"
mkdir -p "$out"
bench="$CARGO_TARGET_DIR/dist/baton-bench"
# The build that is deployed and measured: whole-program LTO and jemalloc (see the README).
build() { cargo build --profile dist --locked -q "$@"; }
stamp="$(date -u +%Y%m%dT%H%M%SZ)"
if [ "${1:-}" = local-model ]; then
  shift
  build -p baton-bench --features baton-bench/jemalloc
  port=18089
  ./infra/local-model.sh serve "$port" >"$out/llama-server.log" 2>&1 &
  server=$!
  trap 'kill "$server" 2>/dev/null || true' EXIT
  for _ in $(seq 1 600); do
    curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null 2>&1 && break
    sleep 0.2
  done
  "$bench" --current-thread --local-model "http://127.0.0.1:$port/v1" \
    --out "$out/baton-local-model-$stamp.json" "$@" >/dev/null
  echo "results in $out" >&2
  exit 0
fi
if [ "${1:-}" = memory ]; then
  shift
  ./infra/emulators.sh install >&2
  build -p baton-bench --features baton-bench/jemalloc
  "$bench" --memory --out "$out/baton-memory-$stamp.json" "$@" >/dev/null
  # Compaction's time per episode on DynamoDB Local: an example of the test crate, whose
  # launcher starts the emulator.
  cargo run --release --locked -q -p baton-tests --example compaction_cost \
    >"$out/baton-compaction-dynamodb-$stamp.json"
  echo "results in $out" >&2
  exit 0
fi
if [ "${1:-}" = pictures ]; then
  shift
  build -p baton-cli -p baton-bench --features baton-cli/jemalloc,baton-bench/jemalloc
  # Freed pages go back at once, as in `baton serve` (shared/cli/src/allocator.rs), so that
  # the benchmark's own resident memory shows what each turn took.
  MALLOC_CONF="${MALLOC_CONF:-narenas:1,dirty_decay_ms:0,muzzy_decay_ms:0}" \
    "$bench" --current-thread --pictures --out "$out/baton-pictures-$stamp.json" "$@" >/dev/null
  echo "results in $out" >&2
  exit 0
fi
if [ "${1:-}" = recall ]; then
  shift
  build -p baton-bench --features baton-bench/jemalloc
  # One thread, as `baton serve` runs its turns; the store's reads go to the blocking pool.
  "$bench" --current-thread --recall --out "$out/baton-recall-$stamp.json" "$@" >/dev/null
  echo "results in $out" >&2
  exit 0
fi
build -p baton-cli -p baton-bench --features baton-cli/jemalloc,baton-bench/jemalloc
# 1,000 streams need 2,000+ descriptors between the client and the server.
ulimit -n 8192 2>/dev/null || true
"$bench" --current-thread --out "$out/baton-current-thread-$stamp.json" "$@" >/dev/null
"$bench" --serve --out "$out/baton-multi-thread-$stamp.json" "$@" >/dev/null
echo "results in $out" >&2
