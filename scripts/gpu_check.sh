#!/usr/bin/env bash
# GPU checks in one command: builds what they need, runs them, prints a
# pass/fail table. NOT YET RUN ON A GPU (written and checked on a CPU machine
# only: its no-GPU failure path and --prepare have run; nothing past the GPU
# probe has).
#
#   scripts/gpu_check.sh --prepare   on a machine with apt and pip (and the
#                                    internet): downloads into .gpu_bundle/ the
#                                    .deb and .whl files a bare GPU machine may
#                                    lack (~20 MiB); carry .gpu_bundle with the tree
#   scripts/gpu_check.sh             on the GPU machine (one NVIDIA GPU, Python
#                                    with torch + CUDA + Triton, no internet, no
#                                    apt): builds into build-gpu/ and .gpu_venv/,
#                                    runs scripts/gpu_check.py's checks, prints
#                                    the table; exit 0 only when all pass
#
# Checks: the GPU is there; the CUDA capture's unit tests; eager ops under
# trace_eager, a model under the capture backend, under Inductor (Triton
# kernels), a host<->device copy, an NCCL all-reduce of world size 1, each
# with the device events in the process's own trace file and every one linked
# to its launch call and to the op or kernel event that launched it; CUDA's
# caching allocator under the memory capture (the cuda:0 peak equals
# torch.cuda.max_memory_allocated(), what holds it sums to it); kernel device time against
# torch.profiler's (within 5 %); a GPT-2-small training step traced vs not
# and vs torch.profiler (at most 1.03x, and below torch.profiler); SIGTERM in
# the middle of a traced GPU loop (the trace complete with its CPU events; the
# device events of CUPTI's last buffers are lost there, docs/DESIGN.md).
# Where no GPU is found it fails (exit 2) and says so: it never skips.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUNDLE=${DFTRACER_GPU_BUNDLE:-$ROOT/.gpu_bundle}
PY=${PYTHON:-python3}
JOBS=$(nproc 2>/dev/null || echo 4)
START=$(date +%s)

# --------------------------------------------------------------- --prepare
if [ "${1:-}" = "--prepare" ]; then
  set -e
  mkdir -p "$BUNDLE/debs" "$BUNDLE/wheels"
  # The C++ build's Debian packages and the shared libraries they need.
  DEV=(libsimdjson-dev libxxhash-dev libspdlog-dev libfmt-dev libdeflate-dev zlib1g-dev libgtest-dev)
  apt-get update -qq
  LIBS=$(apt-cache depends --no-recommends --no-suggests "${DEV[@]}" 2>/dev/null |
         awk '/Depends: lib/ {print $2}' | grep -v -e '^libc6' -e '^libstdc++' -e '^libgcc' | sort -u)
  (cd "$BUNDLE/debs" && apt-get download "${DEV[@]}" $LIBS >/dev/null)
  # The Python build's tools for the GPU machine's Python (3.12), and CUDA 13's
  # headers (cupti.h, cuda.h, crt/) where its torch install has none.
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 -d "$BUNDLE/wheels" \
    "scikit-build-core>=0.10" "nanobind>=2.0" pathspec packaging
  "$PY" -m pip download -q --no-deps --only-binary=:all: -d "$BUNDLE/wheels" \
    "nvidia-cuda-cupti==13.0.*" "nvidia-cuda-runtime==13.0.*" "nvidia-cuda-crt==13.0.*"
  du -sh "$BUNDLE"
  echo "gpu_check: bundle ready in $BUNDLE; carry it with the working tree (.gpu_bundle)"
  exit 0
fi

# --------------------------------------------------------------- results
declare -a NAMES RESULTS DETAILS
record() { NAMES+=("$1"); RESULTS+=("$2"); DETAILS+=("$3"); }
table() {
  echo
  printf '%-16s %-6s %s\n' check result detail
  printf '%-16s %-6s %s\n' ---------------- ------ ------
  local i fails=0
  for i in "${!NAMES[@]}"; do
    printf '%-16s %-6s %s\n' "${NAMES[$i]}" "${RESULTS[$i]}" "${DETAILS[$i]}"
    [ "${RESULTS[$i]}" = PASS ] || fails=$((fails + 1))
  done
  echo "gpu_check: ${#NAMES[@]} checks, $fails failed, $(( $(date +%s) - START )) s"
  return $fails
}
fail_now() {  # a step the rest depends on failed: the table so far, then stop
  record "$1" FAIL "$2"
  table
  exit "${3:-1}"
}

# --------------------------------------------------------------- the GPU
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 || \
  fail_now gpu "no NVIDIA GPU found (nvidia-smi missing or sees none): these checks need one" 2
"$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null || \
  fail_now gpu "torch.cuda.is_available() is False (torch without CUDA, or no usable GPU)" 2

# --------------------------------------------------------------- dependencies
# Debian packages of the bundle, unpacked (no apt needed) into a prefix.
PREFIX=$BUNDLE/root
if ls "$BUNDLE"/debs/*.deb >/dev/null 2>&1 && [ ! -f "$PREFIX/.unpacked" ]; then
  mkdir -p "$PREFIX"
  for d in "$BUNDLE"/debs/*.deb; do dpkg -x "$d" "$PREFIX" || fail_now deps "dpkg -x $d failed"; done
  touch "$PREFIX/.unpacked"
fi
if [ -d "$PREFIX/usr" ]; then
  MULTI=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
  export CMAKE_PREFIX_PATH="$PREFIX/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  export CPATH="$PREFIX/usr/include${CPATH:+:$CPATH}"
  export LIBRARY_PATH="$PREFIX/usr/lib/$MULTI${LIBRARY_PATH:+:$LIBRARY_PATH}"
  export LD_LIBRARY_PATH="$PREFIX/usr/lib/$MULTI${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
# CUDA headers: torch's wheels bring libcupti; where cupti.h or crt/ are
# missing, the bundle's header wheels are unpacked beside (headers only used).
CUDA_HDRS=$BUNDLE/cuda
if ls "$BUNDLE"/wheels/nvidia_cuda_*.whl >/dev/null 2>&1 && [ ! -d "$CUDA_HDRS" ]; then
  for w in "$BUNDLE"/wheels/nvidia_cuda_*.whl; do "$PY" -m zipfile -e "$w" "$CUDA_HDRS" >/dev/null; done
fi
for inc in "$CUDA_HDRS"/nvidia/*/include; do
  [ -d "$inc" ] && export CPATH="${CPATH:-}${CPATH:+:}$inc"
done
# cupti.h where FindCUPTI looks (torch's nvidia wheels, /usr/local/cuda), else the bundle's.
if ! "$PY" -c "
import glob, sys
try:
    import nvidia; dirs = list(nvidia.__path__)
except ImportError:
    dirs = []
sys.exit(0 if glob.glob('/usr/local/cuda/include/cupti.h') + [h for d in dirs for h in glob.glob(d + '/*/include/cupti.h')] else 1)
" 2>/dev/null; then
  for d in "$CUDA_HDRS"/nvidia/*; do [ -f "$d/include/cupti.h" ] && export CUPTI_ROOT=$d; done
fi

# A venv on the machine's torch, with dftracer built from this tree.
VENV=$ROOT/.gpu_venv
[ -x "$VENV/bin/python" ] || "$PY" -m venv --system-site-packages "$VENV" || fail_now build "python -m venv failed"
VPY=$VENV/bin/python
if ! "$VPY" -c "import scikit_build_core, nanobind" 2>/dev/null; then
  "$VPY" -m pip install -q --no-index --find-links "$BUNDLE/wheels" scikit-build-core nanobind \
    || fail_now build "scikit-build-core and nanobind missing and not in $BUNDLE/wheels (run --prepare)"
fi

# --------------------------------------------------------------- build
B=$ROOT/build-gpu
LOG=$B.log
echo "gpu_check: building into $B (log: $LOG)"
{
  cmake -S "$ROOT" -B "$B" -G "$(command -v ninja >/dev/null && echo Ninja || echo 'Unix Makefiles')" \
    -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE="$VPY" -DDFTRACER_CUDA=ON \
    -DDFTRACER_BUILD_TESTS=ON -DDFTRACER_BUILD_ANALYZER=OFF -DDFTRACER_BUILD_BENCH=OFF \
    -DDFTRACER_BUILD_EXAMPLES=OFF -DDFTRACER_TORCH=OFF &&
  cmake --build "$B" -j "$JOBS" --target dftracer_cuda cuda_activity_test cuda_core_sink_test cuda_source_stop_test
} >"$LOG" 2>&1 || fail_now build "cmake build failed: $(grep -m1 -E 'error|Error' "$LOG" | cut -c1-160)"
# The package (extension, LibTorch observer against this torch, and dftracer-analyze).
# With the CUDA capture source: libdftracer_cuda.so beside the core in the
# package, which initialize_log starts (DFTRACER_CUDA=1 in the checks).
PIP_CUDA=(-C cmake.define.DFTRACER_CUDA=ON)
[ -n "${CUPTI_ROOT:-}" ] && PIP_CUDA+=(-C "cmake.define.CUPTI_ROOT=$CUPTI_ROOT")
CMAKE_BUILD_PARALLEL_LEVEL=$JOBS "$VPY" -m pip install -q --no-build-isolation --no-deps "${PIP_CUDA[@]}" "$ROOT" \
  >>"$LOG" 2>&1 || fail_now build "pip install of dftracer failed (see $LOG)"
CUDA_LIB=$("$VPY" -c "from dftracer.python import cuda; print(cuda.library_path())" 2>>"$LOG")
[ -f "$CUDA_LIB" ] || fail_now build "the package holds no libdftracer_cuda.so ($CUDA_LIB; see $LOG)"
ANALYZE=$VENV/bin/dftracer-analyze
[ -x "$ANALYZE" ] || fail_now build "$ANALYZE was not installed (see $LOG)"
record build PASS "$(( $(date +%s) - START )) s: dftracer (with $(basename "$CUDA_LIB")) and dftracer-analyze in $VENV"

# --------------------------------------------------------------- unit tests
if "$B/src/capture/cuda/cuda_activity_test" >"$B/unit.log" 2>&1 &&
   "$B/src/capture/cuda/cuda_core_sink_test" >>"$B/unit.log" 2>&1 &&
   "$B/src/capture/cuda/cuda_source_stop_test" >>"$B/unit.log" 2>&1; then
  record unit PASS "activity record conversion, core writer and stop-before-finalize suites"
else
  record unit FAIL "$(grep -m1 FAILED "$B/unit.log")"
fi

# --------------------------------------------------------------- GPU checks
OUT=$B/gpu_check_out
rm -rf "$OUT" && mkdir -p "$OUT"
# The package's own libdftracer_cuda.so, started by initialize_log (no --lib).
"$VPY" "$ROOT/scripts/gpu_check.py" --analyze "$ANALYZE" --out "$OUT" >"$OUT/checks.jsonl" 2>"$OUT/checks.err"
while IFS= read -r line; do
  name=$("$VPY" -c 'import json,sys; r=json.loads(sys.argv[1]); print(r["check"])' "$line")
  res=$("$VPY" -c 'import json,sys; r=json.loads(sys.argv[1]); print("PASS" if r["ok"] else "FAIL")' "$line")
  det=$("$VPY" -c 'import json,sys; r=json.loads(sys.argv[1]); print(r["detail"][:200])' "$line")
  record "$name" "$res" "$det"
done < <(grep '^{"check"' "$OUT/checks.jsonl")
grep -q '^{"check"' "$OUT/checks.jsonl" || record checks FAIL "gpu_check.py printed nothing: $(tail -1 "$OUT/checks.err")"
table
