#!/usr/bin/env bash
# Builds Baton's Lambda functions for arm64 (provided.al2023) and zips each one with the
# registry beside its bootstrap, ready for `aws lambda update-function-code --zip-file`.
#
#   ./infra/package.sh                # cargo lambda build --release --arm64, then one zip per function
#   ./infra/package.sh turn           # only the named functions (turn, history-writer, compaction, eval-runner)
#   ./infra/package.sh --sam          # `sam build` of template.yaml instead (.aws-sam/build), for `sam deploy`
#
# The zips land in $OUT (default $CARGO_TARGET_DIR/lambda-zips): `turn.zip` and
# `history-writer.zip`, `compaction.zip` and `eval-runner.zip`, each `bootstrap` + `registry/` (set BATON_REGISTRY=/var/task/registry
# on a function deployed from them). template.yaml ships the registry as a layer instead,
# because SAM's rust-cargolambda build copies only the binary.
#
# cargo-lambda (and zig, its cross-linker) come from PyPI into the tools venv
# (infra/python-tools.sh); no Docker. CARGO_TARGET_DIR defaults to
# ~/.cache/baton/target-lambda, apart from the test builds so the two never wait on one lock.
# A cold release build takes several minutes on two cores (aws-lc-sys, the AWS SDK).
#
# Deploying after a build:
#   ./infra/package.sh --sam
#   "$(./infra/python-tools.sh)/sam" deploy --guided     # asks for a stack name and region once
set -euo pipefail
cd "$(dirname "$0")/.."

mode=zip
functions=()
for arg in "$@"; do
  case "$arg" in
    --sam) mode=sam ;;
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    turn|history-writer|compaction|eval-runner) functions+=("$arg") ;;
    *) echo "error: unknown argument '$arg' (use --sam, turn, history-writer, compaction or eval-runner)" >&2; exit 2 ;;
  esac
done
if [[ "$mode" == sam && ${#functions[@]} -gt 0 ]]; then
  echo "error: --sam builds every function of template.yaml; leave out the function names" >&2
  exit 2
fi
[[ ${#functions[@]} -gt 0 ]] || functions=(turn history-writer compaction eval-runner)

fail() { echo "error: $*" >&2; exit 1; }

command -v cargo >/dev/null 2>&1 \
  || fail "cargo is not installed; install Rust with rustup (the toolchain is pinned in rust-toolchain.toml)"
command -v rustup >/dev/null 2>&1 \
  || fail "rustup is not installed; it is needed to add the aarch64-unknown-linux-gnu target"

bin="$(./infra/python-tools.sh)"
export PATH="$bin:$PATH"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/baton/target-lambda}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
# The functions' build settings (stripped, whole-program LTO): see the file.
# shellcheck source=infra/lambda-build.env
source infra/lambda-build.env

# The arm64 standard library, for the toolchain rust-toolchain.toml selects.
if ! rustup target list --installed | grep -qx aarch64-unknown-linux-gnu; then
  echo "adding the Rust target aarch64-unknown-linux-gnu" >&2
  rustup target add aarch64-unknown-linux-gnu >&2 \
    || fail "rustup could not add the aarch64-unknown-linux-gnu target"
fi

started=$SECONDS

if [[ "$mode" == sam ]]; then
  export SAM_CLI_TELEMETRY=0
  "$bin/sam" build --template-file template.yaml \
    || fail "sam build failed (see above)"
  echo "built in $((SECONDS - started)) s; deploy with: \"$bin/sam\" deploy --guided"
  exit 0
fi

bin_args=()
for f in "${functions[@]}"; do bin_args+=(--bin "$f"); done

cargo lambda build --release --arm64 --locked "${bin_args[@]}" \
  || fail "cargo lambda build failed (see above)"
built=$((SECONDS - started))

out="${OUT:-$CARGO_TARGET_DIR/lambda-zips}"
mkdir -p "$out"
for f in "${functions[@]}"; do
  bootstrap="$CARGO_TARGET_DIR/lambda/$f/bootstrap"
  [[ -f "$bootstrap" ]] || fail "cargo lambda did not produce $bootstrap"
  stage="$out/$f"
  rm -rf "$stage" "$out/$f.zip"
  mkdir -p "$stage"
  cp "$bootstrap" "$stage/bootstrap"
  chmod 755 "$stage/bootstrap"
  cp -R shared/registry "$stage/registry"
  # Fixed timestamps and sorted entries: the same build gives the same zip (and code hash).
  "$bin/python" - "$stage" "$out/$f.zip" <<'PY'
import os, sys, zipfile
stage, target = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
    for root, dirs, files in os.walk(stage):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(root, name)
            info = zipfile.ZipInfo(os.path.relpath(path, stage), date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (0o100755 if name == "bootstrap" else 0o100644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            with open(path, "rb") as f:
                z.writestr(info, f.read(), compresslevel=9)
PY
  rm -rf "$stage"
done

echo "built in ${built} s (cargo lambda build --release --arm64)"
for f in "${functions[@]}"; do
  printf '%-20s bootstrap %6s KiB   zip %6s KiB   %s\n' "$f" \
    "$(( $(wc -c <"$CARGO_TARGET_DIR/lambda/$f/bootstrap") / 1024 ))" \
    "$(( $(wc -c <"$out/$f.zip") / 1024 ))" "$out/$f.zip"
done
