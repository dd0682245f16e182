#!/usr/bin/env bash
# Stages D and E of ops judged by their own tests, on a GPU host, for many packs at once (issue #31; the run of
# docs/gpu-runs.md, 2026-12-04).
#
#   here (CPU):  tileport run OP.py ...        # each op with tests stops at D BLOCKED(env), its gate packed at
#                                              # <worktree>/.tileport-build/crate-gate (or `tileport gate pack ID`)
#                bash scripts/gpu-gate-tests.sh pack .gpu/gates/packs.tar.xz REPO...
#                                              # every packed gate of those repositories' conversions (the newest
#                                              # per op) in one archive: the libraries share their cutile runtime,
#                                              # so xz over them all (256 MiB window) is about 0.6 MB a pack
#   GPU host:    PER=240 bash scripts/gpu-gate-tests.sh .gpu/gates/packs.tar.xz [OP...]   # results in $OUT
#                (JOBS=2 packs at a time; DEADLINE=S: no pack starts later than S seconds after the start;
#                HOST_S=S: then the port call's host time against the reference's, benchmarks/gpu_host_call.py)
#   back here:   tileport gate ingest $OUT/<op>.json   (refused unless made for the conversion's head)
#
# Needs the tileiras bundle split as part1 (copied to /tmp/part1 by a first call) and .gpu/bundle/part2 with the
# cuda_tile wheel (TOOLCHAIN.md). JOBS packs run at a time (a pool); each in its own `runner.py` with a time limit.
if [ "${1:-}" = pack ]; then
  out=${2:?usage: gpu-gate-tests.sh pack ARCHIVE REPO...}; shift 2
  [ $# -gt 0 ] || { echo "usage: gpu-gate-tests.sh pack ARCHIVE REPO..." >&2; exit 2; }
  S=$(mktemp -d); trap 'rm -rf "$S"' EXIT; mkdir -p "$S/packs"
  for repo in "$@"; do
    # conversions in id order (op-2 before op-10): the newest conversion of an op is the one packed
    for w in $(ls -d "$repo"/.tileport/worktrees/*/ 2>/dev/null | sed 's:/$::' | sort -V); do
      g=$w/.tileport-build/crate-gate
      [ -f "$g/gate.json" ] && [ -f "$g/lib/libport.so.xz" ] || continue
      n=$(basename "$w"); n=${n%-*}
      rm -rf "$S/packs/$n"; cp -r "$g" "$S/packs/$n" && xz -d "$S/packs/$n/lib/libport.so.xz" || exit 1
    done
  done
  [ -n "$(ls "$S/packs")" ] || { echo "no packed gate under $* (.tileport/worktrees/*/.tileport-build/crate-gate)" >&2; exit 1; }
  mkdir -p "$(dirname "$out")"
  tar -C "$S" -cf - packs | xz -9 --lzma2=dict=${XZ_DICT:-256MiB} -T1 > "$out" || exit 1
  echo "$(ls "$S/packs" | wc -l) packs in $out ($(du -h "$out" | cut -f1)): $(ls "$S/packs" | tr '\n' ' ')"
  exit 0
fi
T0=$(date +%s)
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
# JOBS packs at a time (default 2), each under PER seconds (default 280), none started past DEADLINE seconds from
# the script's start (default: no deadline) and none given more than the deadline leaves (a pack cut short says so)
run_one() { g=$1; lim=$2; n=$(basename "$g"); s=$(date +%s)
            timeout -k 10 "$lim" python3 "$g/runner.py" "$g" > "$OUT/$n.log" 2>&1; rc=$?
            echo "$n rc=$rc $(( $(date +%s) - s ))s$([ $rc = 124 ] && echo " (killed at its ${lim}s limit)")"
            cp "$g/results.json" "$OUT/$n.json" 2>/dev/null; }
[ $# -gt 0 ] || set -- $(ls /tmp/g/packs)
for n in "$@"; do
  while [ "$(jobs -rp | wc -l)" -ge "${JOBS:-2}" ]; do wait -n; done
  lim=${PER:-280}
  if [ -n "$DEADLINE" ]; then
    left=$(( DEADLINE - ($(date +%s) - T0) ))
    if [ "$left" -lt "${MIN_PER:-30}" ]; then echo "$n NOT RUN (deadline ${DEADLINE}s)"; continue; fi
    [ "$left" -lt "$lim" ] && lim=$left
  fi
  run_one "/tmp/g/packs/$n" "$lim" &
done
wait
# HOST_S=S: then, within S seconds, the host time of a port call against the reference's for each launch stage E
# replays, in a process CUPTI never traced (stage E takes its own host times after CUPTI traced its child):
# $OUT/host_call.json, which `python benchmarks/gpu_gate_table.py --out $OUT` tables beside the gates' results
if [ -n "${HOST_S:-}" ]; then
  timeout -k 5 "$HOST_S" python3 "$(dirname "$0")/../benchmarks/gpu_host_call.py" /tmp/g/packs --reps 100 \
    --max-configs "${HOST_CONFIGS:-6}" --json "$OUT/host_call.json" --only "$@" > "$OUT/host_call.log" 2>&1
  echo "host call rc=$? at $(( $(date +%s) - T0 ))s: $(grep -c ' call ref ' "$OUT/host_call.log") rows"
fi
