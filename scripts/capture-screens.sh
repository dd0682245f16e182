#!/usr/bin/env bash
# Capture the dashboard's screens as text, driving the real `tileport` (the embedded default run: every op in
# examples/ converted live in a scratch repository, no model, no GPU) in a real terminal (tmux), the way a person
# would: send keys, wait for what they would wait for, `capture-pane -p`.
#
#   bash scripts/capture-screens.sh OUTDIR        (PYTHON=... to pick the interpreter; default .venv/bin/python)
#
# Writes to OUTDIR, each at 160x45 and 80x24:
#   running-B-*.txt    a running stage B: its timeline row with elapsed time and "now", and its tools' live output
#   quit-dialog-*.txt  q while conversions run: stop them / leave them running in the background / cancel
#   code-view-*.txt    the code tab: kernel.rs at the branch HEAD beside the Python op, entry <-> kernel
#   summary-*.txt      the end-of-run summary (counts by status and verdict, time, next step, what needs a person)
#   list-80x24.txt     the conversion list at the end, 80x24;  exit.txt: what the terminal shows after q
# Every step waits for text to appear (with a timeout), never a fixed sleep; a step that times out writes the pane
# it saw to OUTDIR/FAILED-<step>.txt and the script exits 1. The run takes minutes (cargo builds); TIMEOUT_RUN
# (default 1800 s) bounds the whole run. Nothing outside a fresh scratch directory is written (plus the shared
# cargo/tileir caches under ~/.cache/tileport).
set -euo pipefail

main() {  # the whole script is one function, read before it runs: editing the file mid-run cannot break it
OUT=${1:?usage: capture-screens.sh OUTDIR}
REPO=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-$REPO/.venv/bin/python}
[ -x "$PY" ] || { echo "capture-screens: no interpreter at $PY (run scripts/setup.sh, or set PYTHON=)" >&2; exit 2; }
command -v tmux >/dev/null || { echo "capture-screens: tmux is not installed (apt-get install tmux)" >&2; exit 2; }
TIMEOUT_RUN=${TIMEOUT_RUN:-1800}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tileport-capture.XXXXXX")
SOCK="tileport-capture-$$"
S=dash
tm() { tmux -L "$SOCK" -f /dev/null "$@"; }
cleanup() { tm kill-server >/dev/null 2>&1 || true; }
trap cleanup EXIT

pane() { tm capture-pane -p -t "$S"; }
log() { printf '%s capture: %s\n' "$(date +%T)" "$*" >&2; }

# wait_for STEP TIMEOUT ERE: until the pane matches ERE (grep -E); on timeout, keep the pane and fail
wait_for() {
  local step=$1 timeout=$2 re=$3 end=$((SECONDS + $2)) now
  while [ $SECONDS -lt $end ]; do
    now=$(pane)
    if printf '%s\n' "$now" | grep -Eq -- "$re"; then return 0; fi
    if [ "$step" != exit ] && printf '%s\n' "$now" | grep -Eq "tileport exited [0-9]+|Traceback \(most recent call last\)"; then
      printf '%s\n' "$now" >"$OUT/FAILED-$step.txt"
      log "$step: the dashboard ended or crashed (the pane: $OUT/FAILED-$step.txt)"
      return 1
    fi
    sleep 0.2
  done
  pane >"$OUT/FAILED-$step.txt"
  log "$step: /$re/ did not appear within ${timeout}s (the pane: $OUT/FAILED-$step.txt)"
  return 1
}

# try_for TIMEOUT ERE: like wait_for, without failing (0 when it appeared)
try_for() {
  local end=$((SECONDS + $1))
  while [ $SECONDS -lt $end ]; do
    if pane | grep -Eq -- "$2"; then return 0; fi
    sleep 0.2
  done
  return 1
}

keys() { tm send-keys -t "$S" "$@"; }
escape() { keys Escape; sleep 0.5; }  # a key right after a lone Escape would read as alt+key in a terminal

# settled: until two captures 0.4 s apart are the same (the app has drawn its new layout), at most 10 s
settled() {
  local a b end=$((SECONDS + 10))
  a=$(pane)
  while [ $SECONDS -lt $end ]; do
    sleep 0.4
    b=$(pane)
    [ "$a" = "$b" ] && return 0
    a=$b
  done
}

# size W H WAIT_ERE: resize, wait for a redraw that matches (a pattern only that width's layout draws: right after
# the resize the pane still holds the old frame, cut), then for the frame to settle
size() {
  tm resize-window -t "$S" -x "$1" -y "$2"
  wait_for "resize-$1x$2" 20 "$3"
  settled
}

save() {  # save NAME: the pane as it is, at the current size
  pane >"$OUT/$1.txt"
  log "wrote $OUT/$1.txt"
}

# what only a redraw at that width shows: a conversion's retry counters are short below 120 columns; the list's
# footer ends in "^p commands" at the right edge (cut away in the old frame right after a resize)
CONV160="retries: A analyze [0-9]+/[0-9]+"
CONV80="retries: A [0-9]+/[0-9]+  B [0-9]"
LIST160="^.{120,}\^p commands *$"
LIST80="^.{40,100}\^p commands *$"

# both sizes: shot NAME WAIT_ERE_AT_160 WAIT_ERE_AT_80
shot() {
  save "$1-160x45"
  size 80 24 "$3"
  save "$1-80x24"
  size 160 45 "$2"
}

# ids of list rows whose line matches ERE (the list's lines start with the conversion id)
rows_matching() { pane | awk -v re="$1" '/^ id +op /{list=1; next} list && $1 ~ /^[0-9]+$/ && $0 ~ re {print $1}'; }

# open ID: from the list, move the cursor to that conversion's row and press enter
open_conv() {
  local id=$1 n
  n=$(pane | awk -v id="$id" '/^ id +op /{list=1; next} list && $1 ~ /^[0-9]+$/ {i++; if ($1 == id) {print i; exit}}')
  [ -n "$n" ] || return 1
  keys -N 12 Up
  [ "$n" -gt 1 ] && keys -N $((n - 1)) Down
  keys Enter
  wait_for "open-$id" 20 "^ #$id "
}

back_to_list() {  # escape until the list shows (the end-of-run summary may have opened on top meanwhile)
  local i
  for i in 1 2 3; do
    escape
    try_for 5 "^ id +op " && ! pane | grep -q "escape: close" && return 0
  done
  wait_for list 20 "^ id +op "
}

log "default run in $WORK (repository $REPO, python $PY)"
tm new-session -d -s "$S" -x 160 -y 45 -c "$WORK" \
  "env PYTHONPATH=$REPO TERM=xterm-256color $PY -m tileport; echo \"tileport exited \$?\"; sleep 3600"
wait_for start 120 "conversions in .*tileport\.db"
END_RUN=$((SECONDS + TIMEOUT_RUN))

# (b) a running stage B with its tools' live output: catch one while cargo is at work
got_b=""
while [ -z "$got_b" ] && [ $SECONDS -lt $END_RUN ]; do
  try_for 600 "B▶ +RUNNING" || break
  for id in $(rows_matching "B▶ +RUNNING"); do
    open_conv "$id" || continue
    # cargo's lines (Compiling, Finished) and what follows them in B (the IR dump, tileiras) while B still runs
    if try_for 120 "Finished .*target|IR dump .*: (ok|FAILED)" || try_for 1 "Compiling "; then
      settled
      if pane | grep -q "B write kernel .*RUNNING"; then
        shot running-B "$CONV160" "$CONV80"
        got_b=$id
      fi
    fi
    back_to_list
    [ -n "$got_b" ] && break
  done
done
[ -n "$got_b" ] || { pane >"$OUT/FAILED-running-B.txt"; log "never saw a stage B with cargo output"; exit 1; }

# (c) the quit dialog while work runs, then cancel
if try_for 300 "RUNNING"; then
  keys q
  wait_for quit-dialog 20 "running here"
  shot quit-dialog "$LIST160" "$LIST80"
  escape
  wait_for quit-cancelled 20 "^ id +op "
else
  log "no conversion running any more: no quit dialog to capture"
  pane >"$OUT/FAILED-quit-dialog.txt"
  exit 1
fi

# (a) the code view of a conversion whose stage B committed its kernel.rs
wait_for code-ready $((END_RUN - SECONDS)) "B[0-9]/[0-9]"
id=$(rows_matching "B[0-9]/[0-9]" | head -1)
open_conv "$id"
keys 7
wait_for code-view 60 "kernel\.rs at [0-9a-f]+"
wait_for code-view-mapping 30 "<->"
shot code-view "$CONV160" "$CONV80"
back_to_list

# (d) the end-of-run summary, once every conversion has stopped
while ! pane | grep -Eq "end of run: [0-9]+ conversions"; do
  [ $SECONDS -lt $END_RUN ] || { pane >"$OUT/FAILED-summary.txt"; log "the run did not end in ${TIMEOUT_RUN}s"; exit 1; }
  # closed by an escape meant for another screen: every conversion has stopped, so u shows it again
  if pane | grep -Eq "^ id +op " && ! pane | grep -Eq "RUNNING|pending"; then keys u; fi
  sleep 1
done
sleep 0.3
shot summary "$LIST160" "$LIST80"
escape
wait_for list-end 20 "^ id +op "
size 80 24 "$LIST80"
save list-80x24
size 160 45 "$LIST160"

keys q
wait_for exit 60 "tileport exited [0-9]+"
save exit
log "done: $OUT (scratch run left in $WORK)"
}

main "$@"; exit $?  # one line: bash has read it whole before main runs, so edits cannot reach it
