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
# ./infra/emulators.sh install). The two functions are built as ./infra/package.sh builds
# them (infra/lambda-build.env; there for arm64), in a target folder of their own so that
# the workspace's release build is left as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/baton/target}"
starts="${1:-20}"
turns="${2:-50}"

./infra/emulators.sh install >&2
# The harness only serves the Runtime API and reads /proc: the test build does.
cargo build --locked -q -p baton-tests --example turn_figures
figures="$CARGO_TARGET_DIR/debug/examples/turn_figures"
shipped="${CARGO_TARGET_DIR}-lambda-figures"
(
  # shellcheck source=infra/lambda-build.env
  source infra/lambda-build.env
  export CARGO_TARGET_DIR="$shipped"
  cargo build --release --locked -q -p baton-turn --bin turn
  cargo build --release --locked -q -p baton-hello-lambda
)
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
cp "$shipped/release/turn" "$scratch/turn"
cp "$shipped/release/hello_lambda" "$scratch/hello"
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

echo "== no limit"
"$figures" "$scratch/turn" "$starts" "$turns" --hello "$scratch/hello"
for mb in 128 512 1024; do
  echo "== $mb MB"
  "$figures" "$scratch/turn" "$starts" "$turns" --memory-mb "$mb" --hello "$scratch/hello"
done
