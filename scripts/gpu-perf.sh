#!/usr/bin/env bash
# Issue 34 on one GPU host in one call: every draft port of examples/ and tests/data/draft_heldout/ through stages D
# and E (the gate's runner.py per op: correctness, then device time of every timed configuration), the port
# library's direct launch path checked on the device (tests/validators/gpu/test_direct_path_device.py), and the
# host time of a port call against the reference's, per op (benchmarks/gpu_host_call.py).
#
#   here (CPU):  scripts/gpu-perf.sh pack DEST       # drafts -> build-rust (IR self-check) -> gate pack, per op
#                                                    # (gpu-gate-drafts.sh, WHEELS=0); every library in one
#                                                    # DEST/packs.tar.xz (they share the cutile runtime: one 256 MiB xz window, 22 MB
#                                                    # for 14 gates); DEST/run.sh
#   GPU host:    bash DEST/run.sh                    # results in $OUT (at most 8 files come back): run.log,
#                                                    # results.tar.xz (per gate results.json + log), host_call.json,
#                                                    # device_test.log
#   here:        python benchmarks/gpu_gate_table.py --out OUT   # the docs table (stage E and the host path)
#
# The GPU host needs the tileiras bundle (/tmp/part1 from an earlier call plus .gpu/bundle/part2, or /opt/ti
# already there) and the cuda_tile wheel in .gpu/bundle/ (scripts/gpu-gate-tests.sh does the same). Everything
# runs within DEADLINE seconds (default 470): the device test and the host timings first, then the gates in the
# order of OPS (issue 34's slow rows first), each under PER seconds (default 100) and never past the deadline; a
# gate left out for time is named in run.log ("NOT RUN"). ONLY="op ..." runs those gates only; HOST=0 / TEST=0 skip
# the host timings / the device test.
set -uo pipefail
cmd=${1:?usage: gpu-perf.sh pack DEST | run DEST}
dest=${2:?usage: gpu-perf.sh pack DEST | run DEST}
here=$(cd "$(dirname "$0")/.." && pwd)
OPS_DEFAULT="softmax silu_and_mul layer_norm vector_add rms_norm matmul column_sum linear_relu attention \
gather_softmax persistent_matmul embedding masked_axpby transpose"

case "$cmd" in
pack)
  mkdir -p "$dest" && dest=$(cd "$dest" && pwd)
  stage=$(mktemp -d)
  trap 'rm -rf "$stage"' EXIT
  WHEELS=0 bash "$here/scripts/gpu-gate-drafts.sh" pack "$stage" || echo "gpu-gate-drafts.sh: some op not packed (PACKED.txt)"
  for g in "$stage"/gates/*/; do
    xz -d "$g/lib/libport.so.xz" || exit 1
    # stage E on the device: 3 warm-up calls per side, then 50 rounds (the product default) of reference, port,
    # reference again in rotating order per configuration
    python3 - "$g/gate.json" <<'PY' || exit 1
import json, sys
p = sys.argv[1]; g = json.load(open(p))
g["perf"].update(warmup=3, repetitions=50)
json.dump(g, open(p, "w"), indent=1)
PY
  done
  tar -C "$stage" -cf - gates PACKED.txt | xz -9e --lzma2=dict=256MiB -T1 > "$dest/packs.tar.xz" || exit 1
  cp "$stage/PACKED.txt" "$dest/PACKED.txt"
  cp "$here/scripts/gpu-perf.sh" "$here/benchmarks/gpu_host_call.py" \
     "$here/tests/validators/gpu/test_direct_path_device.py" "$dest/"
  printf '#!/bin/bash\n# issue 34 device run (scripts/gpu-perf.sh); see README beside it\nexec bash "$(dirname "$0")/gpu-perf.sh" run "$(dirname "$0")"\n' > "$dest/run.sh"
  cat "$dest/PACKED.txt"
  du -sh "$dest"
  ;;
run)
  T0=$SECONDS
  DEADLINE=${DEADLINE:-470}
  out=${OUT:?OUT is where the results go}
  exec > >(tee "$out/run.log") 2>&1
  left() { echo $(( DEADLINE - (SECONDS - T0) )); }
  nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader
  TI=${TI:-/opt/ti}; PY=${PY:-python3}
  mkdir -p "$TI"
  if test -x "$TI/bin/tileiras"; then echo "tileiras present"; else
    bundle=.gpu/bundle/part2
    test -f /tmp/part1 -a -f "$bundle" || { echo "no $TI, and /tmp/part1 or $bundle missing: carry the bundle"; exit 9; }
    cat /tmp/part1 "$bundle" | tar -xJ -C "$TI" || exit 9
  fi
  unset CUDA_HOME CUDA_PATH
  export PATH=$TI/bin:$PATH CUTILE_TILEIRAS_PATH=$TI/bin/tileiras PYTHONUNBUFFERED=1
  test -d /tmp/site/cuda || "$PY" -m pip install -q --no-index --no-deps --target /tmp/site .gpu/bundle/cuda_tile-*.whl
  test -d /tmp/site/cuda && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
  "$PY" -c "import torch, cuda.tile; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())" || exit 9
  D=/tmp/tp-perf; rm -rf "$D"; mkdir -p "$D/res"
  tar -xJf "$dest/packs.tar.xz" -C "$D" || exit 9
  for g in "$D"/gates/*/; do xz -0 -T0 "$g/lib/libport.so"; done
  echo "setup done at $((SECONDS - T0)) s; packed: $(ls "$D/gates" | tr '\n' ' ')"
  if [ "${TEST:-1}" != 0 ]; then
    TILEPORT_TEST_DIRECT_GATES="$D/gates" timeout 150 "$PY" -m pytest -q -p no:cacheprovider -c /dev/null \
      --rootdir "$dest" "$dest/test_direct_path_device.py" -rs > "$out/device_test.log" 2>&1
    echo "device test rc=$? at $((SECONDS - T0)) s: $(tail -1 "$out/device_test.log")"
  fi
  if [ "${HOST:-1}" != 0 ]; then
    TILEPORT_FFI_PROFILE=1 timeout "${HOST_S:-110}" "$PY" "$dest/gpu_host_call.py" "$D/gates" --max-configs 2 \
      --reps 100 --json "$out/host_call.json"
    echo "host call rc=$? at $((SECONDS - T0)) s"
  fi
  for op in ${ONLY:-$OPS_DEFAULT} $(ls "$D/gates"); do
    g="$D/gates/$op"
    [ -f "$g/gate.json" ] && [ ! -f "$D/res/$op.json" ] && [ ! -f "$D/res/$op.done" ] || continue
    [ -n "${ONLY:-}" ] && ! [[ " $ONLY " == *" $op "* ]] && continue
    budget=$(( $(left) - 5 )); [ "$budget" -gt "${PER:-100}" ] && budget=${PER:-100}
    if [ "$budget" -lt 20 ]; then echo "=== $op NOT RUN (deadline)"; touch "$D/res/$op.done"; continue; fi
    s=$SECONDS
    echo "=== $op (limit ${budget} s)"
    timeout "$budget" "$PY" "$g/runner.py" "$g" > "$D/res/$op.log" 2>&1
    rc=$?
    grep -v "^PASS" "$D/res/$op.log" | tail -30
    echo "=== $op rc=$rc in $((SECONDS - s)) s"
    cp "$g/results.json" "$D/res/$op.json" 2>/dev/null || touch "$D/res/$op.done"
  done
  rm -f "$D"/res/*.done
  tar -C "$D/res" -cf - . | xz -6 > "$out/results.tar.xz"
  echo "all done at $((SECONDS - T0)) s; $(ls "$D"/res/*.json 2>/dev/null | wc -l) gate results in results.tar.xz"
  ;;
*) echo "usage: gpu-perf.sh pack DEST | run DEST" >&2; exit 2 ;;
esac
