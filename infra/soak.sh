#!/usr/bin/env bash
# The soak of docs/benchmark.md: `baton serve` (the `dist` build) under a steady mixed load
# for an hour (shared/bench/src/soak.rs says what the load is and what is sampled), then a
# plot of memory, descriptors, tasks and first-event latency. Not part of the test command.
#
#   ./infra/soak.sh [MINUTES] [RATE]      default: 60 minutes at 20 turns/s
#
# Writes soak.json and soak.svg to $OUT (default: a new temporary folder, printed at the end).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/baton/target}"
minutes="${1:-60}"
rate="${2:-20}"
out="${OUT:-$(mktemp -d)}"
mkdir -p "$out"

# The build that is deployed and measured: the `dist` profile and jemalloc.
cargo build --profile dist --locked -q -p baton-cli -p baton-bench \
  --features baton-cli/jemalloc,baton-bench/jemalloc
# Slow readers and hang-ups keep many connections open at once.
ulimit -n 8192 2>/dev/null || true
"$CARGO_TARGET_DIR/dist/baton-bench" --soak-minutes "$minutes" --soak-rate "$rate" \
  --baton "$CARGO_TARGET_DIR/dist/baton" --out "$out/soak.json" >/dev/null
python3 infra/soak_plot.py "$out/soak.json" "$out/soak.svg"
echo "results: $out/soak.json, plot: $out/soak.svg"
