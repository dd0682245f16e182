#!/usr/bin/env bash
# Stages D and E of ops judged by their own tests, on a GPU host, for many packs at once (issue #31; the run of
# docs/gpu-runs.md, 2026-12-04).
#
#   here (CPU):  tileport run OP.py ...        # each op with tests stops at D BLOCKED(env), its gate packed at
#                                              # <worktree>/.tileport-build/crate-gate (or `tileport gate pack ID`)
#                mkdir -p S/packs; cp -r <each crate-gate> S/packs/<op>; for each: xz -d lib/libport.so.xz
#                tar -C S -cf - packs | xz -6 -T2 > .gpu/gates/packs.tar.xz   # one archive: the libraries share
#                                              # their cutile runtime, so xz over them all is ~4 MB a pack
#   GPU host:    PER=240 bash scripts/gpu-gate-tests.sh .gpu/gates/packs.tar.xz [OP...]   # results in $OUT
#   back here:   tileport gate ingest $OUT/<op>.json   (refused unless made for the conversion's head)
#
# Needs the tileiras bundle split as part1 (copied to /tmp/part1 by a first call) and .gpu/bundle/part2 with the
# cuda_tile wheel (TOOLCHAIN.md). Two packs run at a time; each in its own `runner.py` with a time limit.
ARCHIVE=${1:-.gpu/gates/packs.tar.xz}; shift || true
OUT=${OUT:-/tmp/gate-results}; mkdir -p "$OUT"
mkdir -p /opt/ti
test -x /opt/ti/bin/tileiras || { cat /tmp/part1 .gpu/bundle/part2 | tar -xJ -C /opt/ti; } || echo "BUNDLE MISSING"
unset CUDA_HOME CUDA_PATH; export PATH=/opt/ti/bin:$PATH
test -d /tmp/site/cuda || pip install -q --no-index --no-deps --target /tmp/site .gpu/bundle/cuda_tile-*.whl
export PYTHONPATH=/tmp/site CUTILE_MAX_LAUNCH_TIMEOUT_SEC=60
python3 -c "import torch, pytest, cuda.tile; print('torch', torch.__version__, 'pytest', pytest.__version__, torch.cuda.get_device_name(0))"
rm -rf /tmp/g && mkdir -p /tmp/g && tar -xJf "$ARCHIVE" -C /tmp/g
for g in /tmp/g/packs/*; do xz -z -0 "$g/lib/libport.so"; done
run_one() { g=$1; n=$(basename "$g"); s=$(date +%s); timeout "${PER:-280}" python3 "$g/runner.py" "$g" > "$OUT/$n.log" 2>&1
            echo "$n rc=$? $(( $(date +%s) - s ))s"; cp "$g/results.json" "$OUT/$n.json" 2>/dev/null; }
[ $# -gt 0 ] || set -- $(ls /tmp/g/packs)
while [ $# -gt 0 ]; do
  run_one "/tmp/g/packs/$1" &
  if [ $# -gt 1 ]; then run_one "/tmp/g/packs/$2" & shift; fi
  shift; wait
done
