#!/usr/bin/env bash
# Creates or reuses a Python virtual environment holding the pinned packages of a
# requirements file, and prints its bin directory. pip runs only when the requirements
# file changed since the last install, so repeated runs take no time.
#
#   bin="$(./infra/venv.sh DIR REQUIREMENTS WHAT [HINT])"
#
# WHAT names the packages in messages; HINT is added to pip's failure message.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() { echo "error: $*" >&2; exit 1; }
[[ $# -eq 3 || $# -eq 4 ]] || fail "usage: infra/venv.sh DIR REQUIREMENTS WHAT [HINT]"
venv="$1" requirements="$2" what="$3" hint="${4:-check the network or the proxy settings and retry}"
stamp="$venv/.baton-requirements.sha256"

python="${PYTHON:-python3}"
command -v "$python" >/dev/null 2>&1 \
  || fail "python3 is not installed; install Python 3.10 or later (or set PYTHON)"

want="$(sha256sum "$requirements" | cut -d' ' -f1)"
if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  echo "$venv/bin"
  exit 0
fi

mkdir -p "$(dirname "$venv")"
if [[ ! -x "$venv/bin/python" ]]; then
  "$python" -m venv "$venv" >&2 \
    || fail "could not create a Python virtual environment in $venv (on Debian/Ubuntu: apt-get install python3-venv)"
fi
echo "installing $what into $venv (once)" >&2
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements" >&2 \
  || fail "pip could not install $requirements into $venv; $hint"
echo "$want" >"$stamp"
echo "$venv/bin"
