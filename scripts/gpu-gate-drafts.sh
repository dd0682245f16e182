#!/usr/bin/env bash
# Stages D and E for the draft translator's ports (`tileport draft`, no model) of every op in examples/ and of the
# held-out ops in tests/data/draft_heldout/ (never used to tune the translator; skip them with HELDOUT=0).
#
#   here (CPU):  scripts/gpu-gate-drafts.sh pack DEST      # per example: draft -> build-rust with the IR self-check
#                                                           # -> gate pack (cdylib + gate dir); plus tileport's source
#                                                           # and the wheels the GPU host lacks (as gpu-gate-ports.sh;
#                                                           # WHEELS=0: neither, for runs of runner.py alone)
#   GPU host:    bash DEST/gpu-gate-ports.sh run DEST [OUT] # `tileport gate run` per packed example
#   here:        python benchmarks/gpu_gate_table.py OUT/*.json
#
# DEST/drafts/<op>/ keeps each draft (kernel.rs, spec.json, host_contract.json); DEST/build-rust/<op>.txt the build
# and IR self-check; DEST/PACKED.txt one line per example: packed, or why not. An output the draft leaves with
# dynamic tile dims (scatter, permuted or persistent stores) is launched whole, with the reference's grid.
# Exit 1 when an example failed to draft, build or pass the IR self-check.
set -uo pipefail
cmd=${1:?usage: gpu-gate-drafts.sh pack DEST}
dest=${2:?usage: gpu-gate-drafts.sh pack DEST}
here=$(cd "$(dirname "$0")/.." && pwd)
[ "$cmd" = pack ] || { echo "usage: gpu-gate-drafts.sh pack DEST (run the pack on the GPU host with gpu-gate-ports.sh run)" >&2; exit 2; }
py=${PYTHON:-$here/.venv/bin/python}
mkdir -p "$dest/gates" "$dest/drafts" "$dest/build-rust"
: > "$dest/PACKED.txt"
rc=0
ops=("$here"/examples/*.py)
[ "${HELDOUT:-1}" = 0 ] || ops+=("$here"/tests/data/draft_heldout/*.py)
for src in "${ops[@]}"; do
  op=$(basename "$src" .py)
  rel=${src#"$here"/}
  d="$dest/drafts/$op"
  rm -rf "$d"
  if ! (cd "$here" && "$py" -m tileport draft "$rel" --out "$d") > "$dest/build-rust/$op.draft.txt" 2>&1; then
    echo "$op: NOT PACKED: tileport draft failed (build-rust/$op.draft.txt)" >> "$dest/PACKED.txt"; rc=1; continue
  fi
  (cd "$here" && "$py" -m tileport build-rust "$d" --reference "out/$op") > "$dest/build-rust/$op.txt" 2>&1
  check=$(grep -o '^self-check [A-Z_]*' "$dest/build-rust/$op.txt" | tail -1)
  case "$check" in
    "self-check PASS"|"self-check PASS_WITH_NOTES") ;;
    *) echo "$op: NOT PACKED: build-rust ${check:-failed} (build-rust/$op.txt)" >> "$dest/PACKED.txt"; rc=1; continue ;;
  esac
  dyn=$(grep -h 'keeps dynamic tile dims' "$d/kernel.rs" | sed 's/^ *\/\/ //' | sort -u)
  # an op none of whose entries the launcher can take is not packed (its cases could only fail before launch)
  if ! "$py" - "$d" <<'PY'
import sys
from pathlib import Path
from tileport.validators.gpu.ffi import render_ffi
from tileport.validators.rust.spec import load_spec
d = Path(sys.argv[1])
b = render_ffi((d / "kernel.rs").read_text(), load_spec(d / "spec.json"), []).bindings
sys.exit(0 if any(not e["kernel_faults"] for e in b["entries"]) else 1)
PY
  then
    echo "$op: NOT PACKED: no entry the launcher can take, $check" >> "$dest/PACKED.txt"
    continue
  fi
  rm -rf "$dest/gates/$op"
  if (cd "$here" && "$py" -m tileport gate pack "$d" --op "$rel" --out "$dest/gates/$op") \
      > "$dest/build-rust/$op.pack.txt" 2>&1; then
    echo "$op: packed, $check${dyn:+; outputs launched whole: $(echo "$dyn" | sed 's/ keeps dynamic tile dims.*//' | sort -u | tr '\n' ';')}" >> "$dest/PACKED.txt"
  else
    echo "$op: NOT PACKED: gate pack failed: $(tail -1 "$dest/build-rust/$op.pack.txt")" >> "$dest/PACKED.txt"
  fi
done
if [ "${WHEELS:-1}" != 0 ]; then  # tileport's CLI on the GPU host (`gate run`); WHEELS=0: runner.py only
  cp "$here/scripts/gpu-gate-ports.sh" "$dest/"
  rm -rf "$dest/src/tileport" && cp -r "$here/tileport" "$dest/src/tileport"
  find "$dest/src" -name __pycache__ -prune -exec rm -rf {} +
  "$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$dest/whl" \
    pydantic-core==2.50.5 pydantic==2.14.4 annotated-types==0.8.0 typing-inspection==0.4.5 \
    sqlite-utils==4.2.1 sqlite-fts4==1.0.3 platformdirs==4.14.9 tenacity==9.1.2 tree-sitter==0.26.1 tree-sitter-rust==0.24.2 || rc=1
fi
cat "$dest/PACKED.txt"
du -sh "$dest"
exit $rc
