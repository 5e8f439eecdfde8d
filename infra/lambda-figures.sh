#!/usr/bin/env bash
# The Lambda figures of docs/aws.md for the turn function: its binary's size, Init (spawn
# to the first request for an event) and memory under a local Lambda Runtime API, at the
# CPU share and memory limit of 128, 512 and 1,024 MB settings, beside the smallest Rust
# function built the same way. Not part of the test command.
#
#   ./infra/lambda-figures.sh [STARTS] [TURNS]      default: 20 cold starts, 50 turns
#
# Needs root and writable cgroup v1 `cpu` and `memory` hierarchies (a setting's CPU share is
# a CFS quota: one vCPU at 1,769 MB, in proportion below), and DynamoDB Local (installed by
# ./infra/emulators.sh install). The binaries are built with the `dist` profile and
# stripped, as ./infra/package.sh ships them (there for arm64).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/baton/target}"
starts="${1:-20}"
turns="${2:-50}"

./infra/emulators.sh install >&2
cargo build --profile dist --locked -q -p baton-turn --bin turn
cargo build --profile dist --locked -q -p baton-tests --example hello_lambda
# The harness only serves the Runtime API and reads /proc: the test build does.
cargo build --locked -q -p baton-tests --example turn_figures
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
strip -o "$scratch/turn" "$CARGO_TARGET_DIR/dist/turn"
strip -o "$scratch/hello" "$CARGO_TARGET_DIR/dist/examples/hello_lambda"
# The zip as ./infra/package.sh makes it: the binary as `bootstrap`, beside the registry.
mkdir -p "$scratch/zip"
cp "$scratch/turn" "$scratch/zip/bootstrap"
cp -r shared/registry "$scratch/zip/registry"
python3 - "$scratch/zip" "$scratch/turn.zip" <<'PY'
import os, sys, zipfile
stage, target = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
    for root, dirs, files in os.walk(stage):
        for name in files:
            path = os.path.join(root, name)
            z.write(path, os.path.relpath(path, stage))
PY
echo "turn binary (x86_64, stripped): $(stat -c %s "$scratch/turn") bytes; zip with the registry: $(stat -c %s "$scratch/turn.zip") bytes"
echo "hello binary (x86_64, stripped): $(stat -c %s "$scratch/hello") bytes"

figures="$CARGO_TARGET_DIR/debug/examples/turn_figures"
echo "== no limit"
"$figures" "$scratch/turn" "$starts" "$turns" --hello "$scratch/hello"
for mb in 128 512 1024; do
  echo "== $mb MB"
  "$figures" "$scratch/turn" "$starts" "$turns" --memory-mb "$mb" --hello "$scratch/hello"
done
