#!/usr/bin/env bash
# On the H200: launch capture of corpora/tilekit from its own tests/__main__/bench scripts with REAL CUDA tensors
# (every launch is really made), then compare with the launches recorded on the CPU machine
# (corpora/tilekit/cpu_launches.json, made by `benchmarks/gpu_capture_compare.py record` with fake tensors).
# Carry: gpu-bundle/ (tileiras-bundle.tar.xz + cuda_tile-*-cp312-*.whl from shared/scripts/make-gpu-bundle.sh,
# py/*.whl: pytest, pluggy, iniconfig, packaging). Bundle + tree exceed 64 MiB together: extract the bundle in a
# first call (a warm machine keeps /opt/ti), carry gpu-bundle/py (with the cuda_tile wheel copied in) in the second.
# Writes $OUT/gpu_launches.json and $OUT/compare.txt.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
exec > >(tee "$OUT/gpu-capture.log") 2>&1
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader
if ! test -x /opt/ti/bin/tileiras; then
  mkdir -p /opt/ti && tar -xJf gpu-bundle/tileiras-bundle.tar.xz -C /opt/ti || { echo "no tileiras bundle carried"; exit 3; }
fi
test -x /opt/ti/bin/tileiras && echo "tileiras bundle at /opt/ti"
unset CUDA_HOME CUDA_PATH
export PATH=/opt/ti/bin:$PATH CUTILE_TILEIRAS_PATH=/opt/ti/bin/tileiras
wheel=$(ls gpu-bundle/cuda_tile-*cp312*.whl gpu-bundle/py/cuda_tile-*cp312*.whl 2>/dev/null | head -1)
[ -n "$wheel" ] || { echo "no cuda_tile cp312 wheel carried (gpu-bundle/ or gpu-bundle/py/)"; exit 3; }
python3 -m pip install -q --no-index --no-deps --target /tmp/site "$wheel" || exit 3
python3 -c "import pytest" 2>/dev/null || python3 -m pip install -q --no-index --no-deps --target /tmp/site gpu-bundle/py/*.whl
export PYTHONPATH=/tmp/site
python3 -c "import torch, cuda.tile, pytest; print('torch', torch.__version__, 'cuda.tile', cuda.tile.__version__, 'pytest', pytest.__version__, 'gpu', torch.cuda.is_available())" || exit 3
python3 benchmarks/gpu_capture_compare.py record "$OUT/gpu_launches.json"
python3 benchmarks/gpu_capture_compare.py compare corpora/tilekit/cpu_launches.json "$OUT/gpu_launches.json" | tee "$OUT/compare.txt"
echo "rc=${PIPESTATUS[0]}"
