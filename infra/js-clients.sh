#!/usr/bin/env bash
# Installs (once) the official JavaScript clients the faces' tests drive, and prints the
# folder whose node_modules holds them:
#
#   dir="$(./infra/js-clients.sh)"; ls "$dir/node_modules"
#
# - npm's @ag-ui/client: its HttpAgent runs against the AG-UI face;
# - npm's @a2a-js/sdk: its client calls the A2A face.
#
# They live in ${BATON_JS_CLIENTS:-~/.cache/baton/js-clients} and run on the machine's Node
# (20 or later). See docs/faces.md.
set -euo pipefail

dir="${BATON_JS_CLIENTS:-${XDG_CACHE_HOME:-$HOME/.cache}/baton/js-clients}"
packages=(@ag-ui/client@1.0.0 @a2a-js/sdk@1.3.0)
stamp="$dir/installed"

if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "${packages[*]}" ] \
  || [ ! -d "$dir/node_modules/@ag-ui/client" ] || [ ! -d "$dir/node_modules/@a2a-js/sdk" ]; then
  command -v npm >/dev/null 2>&1 || {
    echo "error: npm is not installed; install Node.js 20 or later (with npm) to run the JavaScript clients" >&2
    exit 1
  }
  mkdir -p "$dir"
  echo "installing the JavaScript clients into $dir ..." >&2
  (cd "$dir" && npm install --no-audit --no-fund --loglevel=error "${packages[@]}" >&2)
  echo "${packages[*]}" >"$stamp"
fi
echo "$dir"
