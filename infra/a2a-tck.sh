#!/usr/bin/env bash
# Installs (once) the official A2A compatibility kit and prints a command line that runs it:
#
#   tck="$(./infra/a2a-tck.sh)"; $tck --sut-host http://127.0.0.1:8787 --transport jsonrpc --level must
#
# The kit is on no registry: it is vendored beside the checkout, in
# ../shared/vendor/a2a-tck (its VENDORED.md; BATON_A2A_TCK_SOURCE names another copy). It
# runs from a copy under ${BATON_A2A_TCK_DIR:-~/.cache/baton/a2a-tck}, since it writes its
# reports beside itself, with its dependencies (infra/a2a-tck.txt) in a venv there. It
# needs Python 3.11 or later. The faces' A2A test runs it against `baton serve`.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() { echo "error: $*" >&2; exit 1; }
src="${BATON_A2A_TCK_SOURCE:-../shared/vendor/a2a-tck}"
dir="${BATON_A2A_TCK_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/baton/a2a-tck}"
[[ -f "$src/run_tck.py" && -f "$src/VENDORED.md" ]] \
  || fail "the A2A compatibility kit is not at $src (set BATON_A2A_TCK_SOURCE to a copy of it)"
python="${PYTHON:-python3}"
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null \
  || fail "the A2A compatibility kit needs Python 3.11 or later (set PYTHON to one)"

bin="$(PYTHON="$python" ./infra/venv.sh "$dir/venv" infra/a2a-tck.txt "the A2A compatibility kit's dependencies")"
# The copy is refreshed when the vendored kit changes (its VENDORED.md names its commit).
commit="$(sha256sum "$src/VENDORED.md" | cut -d' ' -f1)"
kit="$dir/kit"
if [[ ! -f "$kit/run_tck.py" || "$(cat "$dir/kit.stamp" 2>/dev/null)" != "$commit" ]]; then
  rm -rf "$kit"
  cp -r "$src" "$kit"
  chmod -R u+w "$kit"
  echo "$commit" >"$dir/kit.stamp"
fi
echo "$bin/python $kit/run_tck.py"
