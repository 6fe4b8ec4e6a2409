#!/usr/bin/env bash
# A local Arize Phoenix (OTLP trace backend + UI) in its OWN virtual environment, never the project's, served
# offline on 127.0.0.1 with a throw-away working directory. Used by tests/phoenix and .ci/run.
#
#   scripts/phoenix.sh install   # venv under $MEMHARNESS_PHOENIX_DIR (default ~/.cache/memharness/phoenix); reused
#   scripts/phoenix.sh serve     # start in the background; prints "PID WORKDIR"; log in WORKDIR/phoenix.log
#   scripts/phoenix.sh wait      # poll http://127.0.0.1:$PORT/healthz until ready (bounded, default 90 s)
#   scripts/phoenix.sh stop      # stop the server started by `serve` (by its PID file), remove a temp working dir
#   scripts/phoenix.sh python    # print the Phoenix venv's python (exit 1 when not installed)
#
# Environment: MEMHARNESS_PHOENIX_DIR, MEMHARNESS_PHOENIX_VERSION (default below), PHOENIX_PORT (6006),
# PHOENIX_GRPC_PORT (4317), PHOENIX_WORKING_DIR (default: a new temp dir), MEMHARNESS_PHOENIX_WAIT (seconds).
set -euo pipefail
DIR=${MEMHARNESS_PHOENIX_DIR:-$HOME/.cache/memharness/phoenix}
VERSION=${MEMHARNESS_PHOENIX_VERSION:-20.26.1}
VENV=$DIR/venv
PORT=${PHOENIX_PORT:-6006}
GRPC_PORT=${PHOENIX_GRPC_PORT:-4317}
PIDFILE=$DIR/phoenix-$PORT.pid
T0=$(date +%s.%N)

took() { printf 'phoenix.sh: %s took %.1f s\n' "$1" "$(echo "$(date +%s.%N) - $T0" | bc)" >&2; }

installed_version() {
  [ -x "$VENV/bin/phoenix" ] && [ -f "$VENV/.memharness-ok" ] || return 1   # marker: install + pip check finished
  "$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("arize-phoenix"))' 2>/dev/null
}

case "${1:-}" in
  install)
    if [ "$(installed_version || true)" = "$VERSION" ]; then
      echo "phoenix.sh: arize-phoenix $VERSION already installed in $VENV (reused)" >&2
    else
      mkdir -p "$DIR"
      rm -rf "$VENV"
      python3 -m venv "$VENV"
      if ! PIP_DISABLE_PIP_VERSION_CHECK=1 "$VENV/bin/pip" install -q "arize-phoenix==$VERSION" \
         || ! "$VENV/bin/pip" check >&2; then
        rm -rf "$VENV"   # never leave a half-built venv that a later run would take for a good one
        echo "phoenix.sh: installing arize-phoenix $VERSION failed" >&2
        exit 1
      fi
      touch "$VENV/.memharness-ok"
      echo "phoenix.sh: installed arize-phoenix $VERSION in $VENV" >&2
    fi
    took install
    ;;
  serve)
    installed_version >/dev/null || { echo "phoenix.sh: not installed ($VENV); run: $0 install" >&2; exit 1; }
    if [ -z "${PHOENIX_WORKING_DIR:-}" ]; then
      PHOENIX_WORKING_DIR=$(mktemp -d "${TMPDIR:-/tmp}/memharness-phoenix.XXXXXX")
      touch "$PHOENIX_WORKING_DIR/.memharness-temp"   # `stop` removes only working dirs it created
    fi
    mkdir -p "$PHOENIX_WORKING_DIR" "$DIR"
    # Loopback only, no product telemetry (FullStory/Scarf), no external fonts/scripts in the UI, SQLite in the temp
    # dir. Phoenix's gRPC OTLP server binds [::]:PORT whatever PHOENIX_HOST says (server/grpc_server.py), so the
    # launcher rewrites that one address to 127.0.0.1 before starting the `phoenix serve` entry point.
    PHOENIX_HOST=127.0.0.1 PHOENIX_PORT=$PORT PHOENIX_GRPC_PORT=$GRPC_PORT \
    PHOENIX_WORKING_DIR=$PHOENIX_WORKING_DIR PHOENIX_TELEMETRY_ENABLED=false \
    PHOENIX_ALLOW_EXTERNAL_RESOURCES=false DO_NOT_TRACK=1 \
      setsid "$VENV/bin/python" -c '
import sys
from grpc.aio import _server
_add = _server.Server.add_insecure_port
_server.Server.add_insecure_port = lambda self, address: _add(self, address.replace("[::]:", "127.0.0.1:", 1))
from phoenix.server.main import main
sys.argv = ["phoenix", "serve"]
main()
' </dev/null >"$PHOENIX_WORKING_DIR/phoenix.log" 2>&1 &
    pid=$!
    echo "$pid $PHOENIX_WORKING_DIR" >"$PIDFILE"
    echo "$pid $PHOENIX_WORKING_DIR"
    ;;
  wait)
    limit=${MEMHARNESS_PHOENIX_WAIT:-90}
    while :; do
      if python3 - "$PORT" <<'EOF' 2>/dev/null; then
import sys, urllib.request
urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/healthz", timeout=2).read()
EOF
        took "wait (ready on 127.0.0.1:$PORT)"
        exit 0
      fi
      if [ -f "$PIDFILE" ] && ! kill -0 "$(cut -d' ' -f1 "$PIDFILE")" 2>/dev/null; then
        echo "phoenix.sh: server exited; log: $(cut -d' ' -f2 "$PIDFILE")/phoenix.log" >&2
        tail -20 "$(cut -d' ' -f2 "$PIDFILE")/phoenix.log" >&2 || true
        exit 1
      fi
      if [ "$(echo "$(date +%s.%N) - $T0 > $limit" | bc)" = 1 ]; then
        echo "phoenix.sh: not ready on 127.0.0.1:$PORT after ${limit} s" >&2
        exit 1
      fi
      sleep 0.5
    done
    ;;
  stop)
    [ -f "$PIDFILE" ] || exit 0
    read -r pid wd <"$PIDFILE"
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
      kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
    fi
    [ -f "$wd/.memharness-temp" ] && rm -rf "$wd"
    rm -f "$PIDFILE"
    took stop
    ;;
  python)
    installed_version >/dev/null || exit 1
    echo "$VENV/bin/python"
    ;;
  *)
    echo "usage: $0 install|serve|wait|stop|python" >&2
    exit 2
    ;;
esac
