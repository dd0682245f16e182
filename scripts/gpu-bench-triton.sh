#!/usr/bin/env bash
# The per-variant reference choice on a GPU host: every cuTile Python example with a Triton twin
# (examples/<op>.py + examples/triton/<op>.py) timed on both sides with the perf gate's harness
# (tileport/validators/analysis/triton/bench.py: CUPTI device time, L2 flushed, paired configurations).
#
#   GPU host (H200: torch 2.11, triton 3.6; cuda.tile and tileiras carried):
#     bash scripts/gpu-bench-triton.sh BUNDLE_DIR OUT_DIR
#   BUNDLE_DIR holds tileiras-bundle.tar.xz and the cuda_tile cp312 wheel (/work/shared/scripts/make-gpu-bundle.sh).
#   then here:  tileport analyze examples/<op>.py --reference-timings OUT_DIR/<op>.json   (records the choice)
set -euo pipefail
bundle=${1:?usage: gpu-bench-triton.sh BUNDLE_DIR OUT_DIR}
out=${2:?usage: gpu-bench-triton.sh BUNDLE_DIR OUT_DIR}
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out" /opt/ti /tmp/tp-site
test -x /opt/ti/bin/tileiras || tar -xJf "$bundle/tileiras-bundle.tar.xz" -C /opt/ti
python3 -c 'import cuda.tile' 2>/dev/null || \
  python3 -m pip install -q --no-index --no-deps --target /tmp/tp-site "$bundle"/cuda_tile-*.whl
unset CUDA_HOME CUDA_PATH
export PATH=/opt/ti/bin:$PATH PYTHONPATH=/tmp/tp-site:$here:${PYTHONPATH:-} PYTHONUNBUFFERED=1
rc=0
for t in "$here"/examples/triton/*.py; do
  op=$(basename "$t" .py)
  echo "=== $op"
  timeout "${BENCH_TIMEOUT:-400}" python3 -m tileport.validators.analysis.triton.bench \
    "$here/examples/$op.py" "$t" --out "$out/$op.json" --reps "${REPS:-30}" || rc=$?
done
exit $rc
