#!/usr/bin/env bash
# Creates or reuses the Python virtual environment of the example A2A agent (the official
# A2A SDK, `a2a-sdk`, and OpenTelemetry) and prints the path of its python:
#
#   python="$(./infra/a2a.sh)"
#   "$python" shared/registry/a2a/store_agent.py 8941    # the example registry's `stores`
#
# The venv lives in ${BATON_A2A_DIR:-~/.cache/baton/a2a}/venv (see infra/venv.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

dir="${BATON_A2A_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/baton/a2a}"
bin="$(./infra/venv.sh "$dir/venv" infra/a2a.txt "the A2A SDK for Python")"
echo "$bin/python"
