#!/usr/bin/env bash
# Creates or reuses the Python virtual environment holding Arize Phoenix, a real
# OpenTelemetry (OTLP) receiver with an HTTP API to read spans back, and prints the path of
# its `phoenix` command. The trace-export test starts it; so can you, to see a turn's spans
# (README, "Traces").
#
#   phoenix="$(./infra/phoenix.sh)"
#
# The venv lives in ${BATON_PHOENIX_DIR:-~/.cache/baton/phoenix}/venv (about 800 MB). pip
# runs only when infra/phoenix.txt changed since the last install.
set -euo pipefail
cd "$(dirname "$0")/.."

dir="${BATON_PHOENIX_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/baton/phoenix}"
venv="$dir/venv"
requirements="infra/phoenix.txt"
stamp="$venv/.baton-requirements.sha256"

fail() { echo "error: $*" >&2; exit 1; }

python="${PYTHON:-python3}"
command -v "$python" >/dev/null 2>&1 \
  || fail "python3 is not installed; install Python 3.10 or later (or set PYTHON)"

want="$(sha256sum "$requirements" | cut -d' ' -f1)"
if [[ -x "$venv/bin/phoenix" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  echo "$venv/bin/phoenix"
  exit 0
fi

mkdir -p "$dir"
if [[ ! -x "$venv/bin/python" ]]; then
  "$python" -m venv "$venv" >&2 \
    || fail "could not create a Python virtual environment in $venv (on Debian/Ubuntu: apt-get install python3-venv)"
fi
echo "installing Arize Phoenix into $venv (once; about three minutes)" >&2
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements" >&2 \
  || fail "pip could not install $requirements into $venv; check the network or the proxy settings and retry"
echo "$want" >"$stamp"
echo "$venv/bin/phoenix"
