#!/usr/bin/env bash
# The per-variant reference choice on a GPU host: every cuTile Python example with a Triton twin
# (examples/<op>.py + examples/triton/<op>.py) timed on both sides with the perf gate's harness
# (tileport/validators/gpu/triton_bench.py: CUPTI device time, L2 flushed, paired configurations).
#
#   GPU host (H200: torch 2.11, triton 3.6; cuda.tile and tileiras carried):
#     bash scripts/gpu-bench-triton.sh BUNDLE_DIR OUT_DIR [OP...]     (default: every examples/triton/*.py)
#   REPS (default 30) timed calls per side and configuration; BENCH_TIMEOUT (default 400) seconds per op.
#   BUNDLE_DIR holds tileiras-bundle.tar.xz and the cuda_tile cp312 wheel (/work/shared/scripts/make-gpu-bundle.sh).
#   then here:  tileport analyze examples/<op>.py --reference-timings OUT_DIR/<op>.json   (records the choice)
set -euo pipefail
bundle=${1:?usage: gpu-bench-triton.sh BUNDLE_DIR OUT_DIR}
out=${2:?usage: gpu-bench-triton.sh BUNDLE_DIR OUT_DIR}
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out" /opt/ti /tmp/tp-site
unset CUDA_HOME CUDA_PATH   # else tileiras takes CUDA 13.0's ptxas/nvvm and fails with rc 5
export PATH=/opt/ti/bin:$PATH PYTHONPATH=/tmp/tp-site:$here:${PYTHONPATH:-} PYTHONUNBUFFERED=1
if ! test -x /opt/ti/bin/tileiras; then
  test -s "$bundle/tileiras-bundle.tar.xz" || { echo "no /opt/ti/bin/tileiras and no $bundle/tileiras-bundle.tar.xz: carry the bundle (make-gpu-bundle.sh)" >&2; exit 3; }
  tar -xJf "$bundle/tileiras-bundle.tar.xz" -C /opt/ti
fi
if ! python3 -c 'import cuda.tile' 2>/dev/null; then
  ls "$bundle"/cuda_tile-*.whl >/dev/null 2>&1 || { echo "no cuda.tile and no cuda_tile wheel in $bundle" >&2; exit 3; }
  python3 -m pip install -q --no-index --no-deps --target /tmp/tp-site "$bundle"/cuda_tile-*.whl
fi
python3 -c 'import torch, triton, cuda.tile; print("torch", torch.__version__, "triton", triton.__version__, "cuda.tile ok")'
rc=0
shift 2
ops=("$@")
[ ${#ops[@]} -gt 0 ] || for t in "$here"/examples/triton/*.py; do ops+=("$(basename "$t" .py)"); done
for op in "${ops[@]}"; do
  t="$here/examples/triton/$op.py"
  test -f "$t" -a -f "$here/examples/$op.py" || { echo "no pair examples/$op.py + examples/triton/$op.py" >&2; rc=2; continue; }
  echo "=== $op"
  timeout "${BENCH_TIMEOUT:-400}" python3 "$here/tileport/validators/gpu/triton_bench.py" \
    "$here/examples/$op.py" "$t" --out "$out/$op.json" --reps "${REPS:-30}" || rc=$?
done
exit $rc
