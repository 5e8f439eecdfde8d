#!/usr/bin/env bash
# Creates or reuses the Python virtual environment holding cfn-lint, the SAM CLI and
# cargo-lambda (pinned in infra/python-tools.txt) and prints its bin directory.
#
#   bin="$(./infra/python-tools.sh)"
#
# The venv lives in ${BATON_TOOLS_DIR:-~/.cache/baton/tools}/venv (see infra/venv.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

tools_dir="${BATON_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/baton/tools}"
exec ./infra/venv.sh "$tools_dir/venv" infra/python-tools.txt "the pinned Python tools (about a minute)"
