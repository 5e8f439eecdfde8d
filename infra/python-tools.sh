#!/usr/bin/env bash
# Creates or reuses the Python virtual environment holding cfn-lint, the SAM CLI and
# cargo-lambda (pinned in infra/python-tools.txt) and prints its bin directory.
#
#   bin="$(./infra/python-tools.sh)"
#
# The venv lives in ${BATON_TOOLS_DIR:-~/.cache/baton/tools}/venv. pip runs only when the
# requirements file changed since the last install, so repeated runs take no time.
set -euo pipefail
cd "$(dirname "$0")/.."

tools_dir="${BATON_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/baton/tools}"
venv="$tools_dir/venv"
requirements="infra/python-tools.txt"
stamp="$venv/.baton-requirements.sha256"

fail() { echo "error: $*" >&2; exit 1; }

python="${PYTHON:-python3}"
command -v "$python" >/dev/null 2>&1 \
  || fail "python3 is not installed; install Python 3.9 or later (or set PYTHON)"

want="$(sha256sum "$requirements" | cut -d' ' -f1)"
if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  echo "$venv/bin"
  exit 0
fi

mkdir -p "$tools_dir"
if [[ ! -x "$venv/bin/python" ]]; then
  "$python" -m venv "$venv" >&2 \
    || fail "could not create a Python virtual environment in $venv (on Debian/Ubuntu: apt-get install python3-venv)"
fi
echo "installing the pinned Python tools into $venv (once; about a minute)" >&2
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements" >&2 \
  || fail "pip could not install $requirements into $venv; check the network or the proxy settings and retry"
echo "$want" >"$stamp"
echo "$venv/bin"
