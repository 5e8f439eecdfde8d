#!/usr/bin/env bash
# Creates or reuses the Python virtual environment holding Arize Phoenix, a real
# OpenTelemetry (OTLP) receiver with an HTTP API to read spans back, and prints the path of
# its `phoenix` command. The trace-export test starts it; so can you, to see a turn's spans
# (README, "Traces").
#
#   phoenix="$(./infra/phoenix.sh)"
#
# The venv lives in ${BATON_PHOENIX_DIR:-~/.cache/baton/phoenix}/venv (about 800 MB; see
# infra/venv.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

dir="${BATON_PHOENIX_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/baton/phoenix}"
bin="$(./infra/venv.sh "$dir/venv" infra/phoenix.txt "Arize Phoenix (about three minutes)")"
echo "$bin/phoenix"
