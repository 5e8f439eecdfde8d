#!/usr/bin/env bash
# Coverage-guided fuzzing of the parsers that take outside input: libFuzzer through
# cargo-fuzz (installed once under ~/.cache/baton), on the pinned stable toolchain with
# `--sanitizer none`. The targets are in fuzz/fuzz_targets/, their bodies in
# tests/fuzz-targets/. Not part of the test command, which replays every committed corpus
# (tests/fuzz-targets/tests/corpus.rs) without the instrumented build.
#
#   ./infra/fuzz.sh [SECONDS] [TARGET ...]     default: 10 s each, every target
#
# Each target starts from its committed corpus (fuzz/corpus/<target>); the inputs it finds
# go to a scratch folder, merged into the committed corpus with FUZZ_KEEP=1. A panic, an
# input that takes over 1 s, or one allocation over 256 MB fails the run, and the input is
# left in fuzz/artifacts/<target>/ (replay: cargo fuzz run -s none <target> <file>).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-10}"
shift || true
cache="${XDG_CACHE_HOME:-$HOME/.cache}/baton"
tools="$cache/cargo-fuzz"
if [ ! -x "$tools/bin/cargo-fuzz" ]; then
  echo "installing cargo-fuzz under $tools (once)" >&2
  cargo install cargo-fuzz --version 0.13.2 --locked --root "$tools" >&2
fi
export PATH="$tools/bin:$PATH"
# The instrumented build has its own target folder, kept for the next run.
export CARGO_TARGET_DIR="$cache/fuzz-target"

targets=("$@")
if [ "${#targets[@]}" -eq 0 ]; then
  # Every target fuzz/Cargo.toml declares.
  mapfile -t targets < <(cd fuzz && cargo fuzz list)
fi

# cargo-fuzz builds in one codegen unit unless told otherwise (its fastest fuzzing, and a
# cold build of about 40 minutes on two cores); a short run gains little from that speed,
# so it builds in the usual 16.
build=(-s none --debug-assertions)
if [ "$seconds" -lt 60 ]; then
  build+=(--codegen-units 16)
fi

cd fuzz
cargo fuzz build "${build[@]}" >&2
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
failed=0
for target in "${targets[@]}"; do
  mkdir -p "$scratch/$target" "corpus/$target"
  log="$scratch/$target.log"
  if cargo fuzz run "${build[@]}" "$target" "$scratch/$target" "corpus/$target" -- \
      -max_total_time="$seconds" -timeout=1 -rss_limit_mb=2048 -malloc_limit_mb=256 \
      >"$log" 2>&1; then
    runs="$(grep -o 'Done [0-9]* runs in [0-9]* second' "$log" | tail -1)"
    echo "$target: ok (${runs:-no summary})"
  else
    echo "$target: FAILED; its log ends:" >&2
    tail -30 "$log" >&2
    failed=1
  fi
  if [ "${FUZZ_KEEP:-0}" = 1 ]; then
    cargo fuzz run "${build[@]}" "$target" "corpus/$target" "$scratch/$target" -- -merge=1 \
      >"$log.merge" 2>&1
  fi
done
exit "$failed"
