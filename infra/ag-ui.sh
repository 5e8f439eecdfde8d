#!/usr/bin/env bash
# Installs (once) the official AG-UI client, npm's @ag-ui/client, and prints the folder
# whose node_modules holds it:
#
#   dir="$(./infra/ag-ui.sh)"; ls "$dir/node_modules/@ag-ui"
#
# It lives in ${BATON_AG_UI_DIR:-~/.cache/baton/ag-ui}. The CLI's AG-UI test runs its
# HttpAgent against `baton serve` (docs/faces.md). It runs on the machine's Node (20 or
# later).
set -euo pipefail

dir="${BATON_AG_UI_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/baton/ag-ui}"
packages=(@ag-ui/client@1.0.0)
stamp="$dir/installed"

if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "${packages[*]}" ] || [ ! -d "$dir/node_modules/@ag-ui/client" ]; then
  command -v npm >/dev/null 2>&1 || {
    echo "error: npm is not installed; install Node.js 20 or later (with npm) to run the AG-UI client" >&2
    exit 1
  }
  mkdir -p "$dir"
  echo "installing the AG-UI client into $dir ..." >&2
  (cd "$dir" && npm install --no-audit --no-fund --loglevel=error "${packages[@]}" >&2)
  echo "${packages[*]}" >"$stamp"
fi
echo "$dir"
