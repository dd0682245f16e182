#!/usr/bin/env bash
# Stages D and E for every port in ports/ on a GPU host, through `tileport gate`.
#
#   here (CPU):  scripts/gpu-gate-ports.sh pack DEST      # cdylib + gate dir per port, plus tileport's source and
#                                                          # the wheels the GPU host lacks (pydantic, sqlite-utils)
#   GPU host:    scripts/gpu-gate-ports.sh run DEST [OUT]  # `tileport gate run` per port; results to OUT/<op>.json
#   here:        python benchmarks/gpu_gate_table.py OUT/*.json   # the per-configuration table and geomeans
#
# The GPU host needs tileiras on PATH (/opt/ti/bin from shared/scripts/make-gpu-bundle.sh) and the cuda_tile wheel;
# CUDA_HOME/CUDA_PATH are unset (an older CUDA there makes tileiras fail with rc 5).
set -euo pipefail
cmd=${1:?usage: gpu-gate-ports.sh pack|run DEST [OUT]}
dest=${2:?usage: gpu-gate-ports.sh pack|run DEST [OUT]}
here=$(cd "$(dirname "$0")/.." && pwd)
case "$cmd" in
pack)
  py=${PYTHON:-$here/.venv/bin/python}
  mkdir -p "$dest/gates" "$dest/src" "$dest/whl"
  for port in "$here"/ports/*/; do
    op=$(basename "$port")
    (cd "$here" && "$py" -m tileport gate pack "ports/$op" --op "examples/$op.py" --out "$dest/gates/$op")
  done
  rm -rf "$dest/src/tileport" && cp -r "$here/tileport" "$dest/src/tileport"
  # the bundle runs itself (`bash DEST/gpu-gate-ports.sh run DEST OUT`) and carries the device test
  cp "$here/scripts/gpu-gate-ports.sh" "$dest/" && mkdir -p "$dest/tests"
  cp "$here/tests/conftest.py" "$here/tests/validators/gpu/test_hostpack_device.py" "$dest/tests/" && touch "$dest/tests/__init__.py"
  find "$dest/src" -name __pycache__ -prune -exec rm -rf {} +
  "$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$dest/whl" \
    pydantic-core==2.50.5 pydantic==2.14.4 annotated-types==0.8.0 typing-inspection==0.4.5 \
    sqlite-utils==4.2.1 sqlite-fts4==1.0.3 platformdirs==4.14.9 tenacity==9.1.2 tree-sitter==0.26.1 tree-sitter-rust==0.24.2
  du -sh "$dest"
  ;;
run)
  out=${3:-$dest/out}
  mkdir -p "$out" /tmp/tp-site
  unset CUDA_HOME CUDA_PATH
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/tp-site "$dest"/whl/*.whl
  export PYTHONPATH=/tmp/tp-site:$dest/src:${PYTHONPATH:-} PYTHONUNBUFFERED=1
  rc=0
  for gate in "$dest"/gates/*/; do
    op=$(basename "$gate")
    echo "=== $op"
    python3 -m tileport gate run "$gate" --timeout "${GATE_TIMEOUT:-240}" || rc=$?
    cp "$gate/results.json" "$out/$op.json" || true
  done
  exit $rc
  ;;
*) echo "usage: gpu-gate-ports.sh pack|run DEST [OUT]" >&2; exit 2 ;;
esac
