#!/usr/bin/env bash
# The main job, on a fresh machine: install what is needed, build and install
# the package, trace a BERT-style encoder (training steps, then inference)
# through the torch.compile capture backend, and show the analysis.
#   scripts/demo.sh            # transformer encoder (default)
#   scripts/demo.sh cnn        # the small CNN instead
# The trace lands in traces/; open it in https://ui.perfetto.dev as is.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
MODEL=${1:-transformer}
case "$MODEL" in transformer|cnn) ;; *) echo "usage: $0 [transformer|cnn]" >&2; exit 2 ;; esac

echo "demo: [1/4] checking the system and Python packages (scripts/setup.sh)"
scripts/setup.sh
echo "demo: [2/4] building and installing the dftracer Python package (C++ build: a few minutes)"
# pip -v streams the build; only its step counter is shown, every 10 %
# (scripts/build_progress.awk), and the log's end only when the build fails.
BUILD_LOG=$(mktemp)
trap 'rm -f "$BUILD_LOG"' EXIT
if ! "$PY" -m pip install -v --no-build-isolation --no-deps . 2>&1 | tee "$BUILD_LOG" |
    awk -f scripts/build_progress.awk; then
  echo "demo: the build failed; its last lines:" >&2
  tail -n 40 "$BUILD_LOG" >&2
  exit 1
fi

mkdir -p traces
rm -f traces/"$MODEL"-*.pfw.gz traces/"$MODEL"-*.pfw.gz.idx
rm -rf traces/"$MODEL"-data
echo "demo: [3/4] tracing examples/python/$MODEL.py"
# The transformer reads its batches from sample files through a DataLoader
# with two worker processes: each writes its own trace file (its reads), and
# the run's files are analysed together. I/O is traced under the data dir.
EXTRA=()
if [ "$MODEL" = transformer ]; then EXTRA=(--data-dir "traces/$MODEL-data"); fi
DFTRACER_ENABLE=1 DFTRACER_LOG_FILE="traces/$MODEL" DFTRACER_DATA_DIR="traces/$MODEL-data" \
  "$PY" "examples/python/$MODEL.py" "${EXTRA[@]}"
TRACE=(traces/"$MODEL"-*.pfw.gz)
echo "demo: trace files written: ${TRACE[*]}"

ANALYZE=$("$PY" -c 'import shutil,sys,os; p=shutil.which("dftracer-analyze") or os.path.join(os.path.dirname(sys.executable),"dftracer-analyze"); print(p)')
# The answer first, the same lines the HTML report opens on: self time (an
# event's time minus what ran inside it on its thread), so the wrapper regions
# the example opens do not hide the ops, and the shares add up to 100 % of the
# traced time; compile vs run; the steps. Then the tables behind it.
# The machine's peaks (a few seconds) for the efficiency table and the
# report's roofline, beside the trace. On a loaded machine calibrate refuses
# (its peaks would be low); the demo then takes them anyway, marked "loaded".
echo "demo: [4/4] analysing (calibrating this machine's peaks first: a few seconds)"
if ! "$ANALYZE" calibrate traces/ >/dev/null 2>&1; then
  echo "demo: the machine is busy: its peaks are measured anyway, marked \"loaded\" (efficiencies read high)"
  "$ANALYZE" calibrate --force traces/ >/dev/null 2>&1 || echo "demo: calibrate failed: the efficiency table has no roofline"
fi
echo
echo "=== the answer (also at the top of traces/$MODEL-report.html) ==="
"$ANALYZE" report "${TRACE[@]}" -o "traces/$MODEL-report.html"
echo
# The top lists leave the first step out: its first calls, compile and
# allocator growth are warm-up (--steps 1:; the whole run where no steps
# are found).
steady() {
  local out
  if out=$("$ANALYZE" summary "${TRACE[@]}" "$@" --steps 1: 2>/dev/null); then
    printf '%s\n' "$out"
  else
    echo "(no steps found: the whole run)"
    "$ANALYZE" summary "${TRACE[@]}" "$@"
  fi
}
echo "=== top events by self time (ops, optimizer steps, regions), steady state (every step but the first: --steps 1:) ==="
steady --by name --top 15
echo
echo "=== per step: wall time split into compile / forward / backward / optimizer / data / other / untraced (ms) ==="
"$ANALYZE" summary "${TRACE[@]}" --by step
echo
echo "=== compile vs run: wall time by kind of work, thread time beside it ==="
"$ANALYZE" summary "${TRACE[@]}" --by category
echo
echo "=== self time by phase ==="
"$ANALYZE" summary "${TRACE[@]}" --by phase
echo
echo "=== self time by module (top 10), steady state ==="
steady --by module --top 10
echo
echo "=== efficiency: achieved vs this machine's roofline (top 10 ops), steady state ==="
steady --efficiency --top 10
if [ "$MODEL" = transformer ]; then
  echo
  echo "=== I/O: the DataLoader workers' reads and the samples written (top 5 per table) ==="
  "$ANALYZE" io "${TRACE[@]}" --top 5 --bin-ms 100
fi
echo
echo "demo: HTML report: traces/$MODEL-report.html; traces for Perfetto: ${TRACE[*]}"
echo "      (one timeline: dftracer-analyze merge -o traces/$MODEL-merged.json.gz ${TRACE[*]})"
