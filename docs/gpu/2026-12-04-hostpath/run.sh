#!/bin/bash
# helper hostpath (issue 34 item 3): softmax + vector_add gates (outputs checked by `tileport gate run`), then host
# time per call, port vs reference, with the direct path off (TILEPORT_FFI_DIRECT=0) and on, port outputs checked.
set -o pipefail
cd "$(dirname "$0")/../.."
T0=$SECONDS
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /opt/ti
if test -x /opt/ti/bin/tileiras; then echo "tileiras present"; else
  test -f /tmp/part1 || { echo "no /tmp/part1"; exit 9; }
  cat /tmp/part1 .gpu/bundle/part2 | tar -xJ -C /opt/ti || exit 9
fi
unset CUDA_HOME CUDA_PATH; export PATH=/opt/ti/bin:$PATH
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/bundle/cuda_tile-*.whl 2>&1 | tail -1
export PYTHONPATH=/tmp/site
D=/tmp/hostpath; rm -rf $D; cp -r .gpu/hostpath $D
echo "setup done at $((SECONDS-T0)) s"
GATE_TIMEOUT=60 timeout 100 bash $D/gpu-gate-ports.sh run $D $OUT/r 2>&1 | grep -v "^\s*$" | tail -25; echo "gates rc=$? at $((SECONDS-T0)) s"
for f in $OUT/r/*.json; do python3 -c "
import json,sys; r=json.load(open('$f')); print('$f'.split('/')[-1], {k: r[k] for k in r if k in ('verdict','summary','status','d','e')} or list(r)[:12])"; done
export PYTHONPATH=/tmp/tp-site:$D/src:/tmp/site
TILEPORT_FFI_DIRECT=0 TILEPORT_FFI_PROFILE=1 timeout 30 python3 $D/gpu_host_call.py $D/gates --max-configs 2 --reps 100 --json $OUT/host_off.json; echo "host off rc=$? at $((SECONDS-T0)) s"
TILEPORT_FFI_PROFILE=1 timeout 30 python3 $D/gpu_host_call.py $D/gates --max-configs 2 --reps 100 --json $OUT/host_on.json; echo "host on rc=$? at $((SECONDS-T0)) s"
