#!/usr/bin/env bash
# GPU checks in one command: builds what they need, runs them, prints a
# pass/fail table. NOT YET RUN ON A GPU. What has run, on a CPU machine
# (Debian 12, Python 3.12.1 venv with torch 2.11.0+cu130, triton 3.6.0,
# transformers 5.17.0 from PyPI: the GPU image's versions): --prepare; the
# no-GPU failure path; --build-only offline (pip without an index or find-links,
# no network namespace) with this machine's -dev packages, Python 3.12's
# Python.h and /usr/local/cuda hidden, so the bundle's .debs, its Python
# headers and CUDA header wheels and torch's nvidia wheels (libcupti,
# cupti.h) were what it built with; the unit suites passed; gpu_check.py's
# own code ran through every check on the CPU (--cpu). Not run: anything
# past the GPU probe, and the build on the GPU image itself (Ubuntu 24.04
# probably: its compiler, glibc, and whether it has python3.12-dev, zlib1g-dev
# or a CUDA toolkit at /usr/local/cuda are unseen; the script copes with
# each missing).
#
#   scripts/gpu_check.sh --prepare   on a machine with apt and pip (and the
#                                    internet): downloads into .gpu_bundle/ the
#                                    .deb and .whl files a bare GPU machine may
#                                    lack, and Python 3.12's headers (PY312=,
#                                    else python3.12 on PATH): ~16 MiB; carry
#                                    .gpu_bundle with the tree
#   scripts/gpu_check.sh             on the GPU machine (one NVIDIA GPU, Python
#                                    with torch + CUDA + Triton, no internet, no
#                                    apt; PYTHON= names it, else python3):
#                                    builds into build-gpu/ and .gpu_venv/,
#                                    runs scripts/gpu_check.py's checks, prints
#                                    the table; exit 0 only when all pass
#   scripts/gpu_check.sh --build-only  the dependencies, the build and the CUDA
#                                    unit suites, then the table, without the
#                                    GPU probe (any machine): exit 0 only when
#                                    those pass; tells build failures from GPU ones
#
# Checks: the GPU is there; the CUDA capture's unit tests; eager ops under
# trace_eager, a model under the capture backend, under Inductor (Triton
# kernels), a host<->device copy, fp16 autocast with a GradScaler that skips
# an overflowed update (four steps, the skipped one marked), an NCCL
# all-reduce of world size 1, each
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
  # Python.h for an image without python3.12-dev: the headers of a Python
  # 3.12 here ($PY312, else python3.12 on PATH), the same minor version.
  PY312=${PY312:-$(command -v python3.12 || true)}
  if [ -n "$PY312" ]; then
    INC=$("$PY312" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
    tar -czf "$BUNDLE/python3.12-include.tar.gz" -C "$(dirname "$INC")" "$(basename "$INC")"
  else
    echo "gpu_check: no Python 3.12 here (set PY312): the bundle holds no Python.h" >&2
  fi
  du -sh "$BUNDLE"
  echo "gpu_check: bundle ready in $BUNDLE; carry it with the working tree (.gpu_bundle)"
  exit 0
fi

# --------------------------------------------------------------- options
BUILD_ONLY=0
case "${1:-}" in
  "") ;;
  --build-only) BUILD_ONLY=1 ;;
  *) echo "gpu_check: unknown option '$1' (--prepare, --build-only, or none)" >&2; exit 2 ;;
esac

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
[ "$BUILD_ONLY" = 1 ] || {
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 || \
  fail_now gpu "no NVIDIA GPU found (nvidia-smi missing or sees none): these checks need one" 2
"$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null || \
  fail_now gpu "torch.cuda.is_available() is False (torch without CUDA, or no usable GPU)" 2
}

# --------------------------------------------------------------- dependencies
# What the bundle unpacks goes under the build folder, never into the bundle
# (which travels with the tree: 64 MiB at most).
B=$ROOT/build-gpu
DEPS=$B/deps
mkdir -p "$DEPS"
# Debian packages of the bundle, unpacked (no apt needed) into a prefix.
PREFIX=$DEPS/root
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
  # A -dev package's link to a library of another package that stays the
  # machine's own (zlib1g-dev: libz.so -> /lib/.../libz.so.1.2.13) dangles
  # where that library has another version (Ubuntu 24.04: 1.3): point it at
  # the machine's library by soname (libz.so.1), or drop it.
  for l in "$PREFIX/usr/lib/$MULTI"/lib*.so; do
    [ -L "$l" ] && [ ! -e "$l" ] || continue
    n=$(basename "$l")
    sys=$(ls /usr/lib/"$MULTI"/"$n".[0-9]* /lib/"$MULTI"/"$n".[0-9]* 2>/dev/null | awk '{print length, $0}' | sort -n | head -1 | cut -d' ' -f2)
    rm -f "$l"
    [ -n "$sys" ] && ln -s "$sys" "$l"
  done
fi
# CUDA headers. FindCUPTI takes cupti.h, cuda.h and libcupti from torch's
# nvidia wheels (site-packages/nvidia/cu13), else /usr/local/cuda. Those wheels
# hold no crt/ (cupti.h includes cuda_runtime_api.h, which needs
# crt/host_defines.h from nvidia-cuda-crt, no dependency of torch), so the
# bundle's CUDA 13 header wheels are unpacked and searched last (-idirafter):
# they serve only what the others lack. Where no cupti.h is found at all, the
# bundle's are CUPTI_ROOT (headers; libcupti.so.13 is torch's, by soname).
CUDA_HDRS=$DEPS/cuda
if ls "$BUNDLE"/wheels/nvidia_cuda_*.whl >/dev/null 2>&1 && [ ! -d "$CUDA_HDRS" ]; then
  for w in "$BUNDLE"/wheels/nvidia_cuda_*.whl; do "$PY" -m zipfile -e "$w" "$CUDA_HDRS" >/dev/null; done
fi
for inc in "$CUDA_HDRS"/nvidia/*/include; do
  [ -d "$inc" ] && export CXXFLAGS="${CXXFLAGS:-}${CXXFLAGS:+ }-idirafter $inc"
done
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
# Python.h: images without the python3.X-dev package have none; the bundle
# carries the headers of the same minor version (--prepare).
PY_INC=""
if ! "$PY" -c "import os, sys, sysconfig
sys.exit(0 if os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h')) else 1)"; then
  PYV=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  if [ -f "$BUNDLE/python$PYV-include.tar.gz" ]; then
    mkdir -p "$DEPS/python-include" && tar -xzf "$BUNDLE/python$PYV-include.tar.gz" -C "$DEPS/python-include"
    PY_INC=$DEPS/python-include/python$PYV
  fi
  [ -f "$PY_INC/Python.h" ] || fail_now build "no Python.h for $PY ($PYV) and none in the bundle (--prepare with PY312)"
fi

# A venv on the machine's torch, with dftracer built from this tree. $PY may
# itself be a venv's (the GPU image's python3 is /opt/torch/.venv's): a venv
# made from it gets the base interpreter's site-packages only, so a .pth file
# adds $PY's own (torch, nvidia-*, pip, scikit-build-core, nanobind there).
# --without-pip: no ensurepip needed (Debian/Ubuntu ship it apart); pip comes
# from $PY's site-packages the same way.
VENV=$ROOT/.gpu_venv
[ -x "$VENV/bin/python" ] || "$PY" -m venv --without-pip --system-site-packages "$VENV" ||
  fail_now build "$PY -m venv failed"
VPY=$VENV/bin/python
"$PY" -c "import site; print('\n'.join(site.getsitepackages()))" \
  >"$("$VPY" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/_gpu_check_base.pth" ||
  fail_now build "could not write the .pth file of $VENV"
"$VPY" -c "import torch" 2>/dev/null || fail_now build "torch does not import in $VENV (from $PY)"
if ! "$VPY" -c "import scikit_build_core, nanobind" 2>/dev/null; then
  "$VPY" -m pip install -q --no-index --find-links "$BUNDLE/wheels" scikit-build-core nanobind \
    || fail_now build "scikit-build-core and nanobind missing and not in $BUNDLE/wheels (run --prepare)"
fi

# --------------------------------------------------------------- build
LOG=$B/build.log  # inside the ignored build folder
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
[ -n "$PY_INC" ] && PIP_CUDA+=(-C "cmake.define.Python_INCLUDE_DIR=$PY_INC")
CMAKE_BUILD_PARALLEL_LEVEL=$JOBS "$VPY" -m pip install -q --no-build-isolation --no-deps "${PIP_CUDA[@]}" "$ROOT" \
  >>"$LOG" 2>&1 || fail_now build "pip install of dftracer failed (see $LOG)"
CUDA_LIB=$("$VPY" -c "from dftracer.python import cuda; print(cuda.library_path())" 2>>"$LOG")
[ -f "$CUDA_LIB" ] || fail_now build "the package holds no libdftracer_cuda.so ($CUDA_LIB; see $LOG)"
ANALYZE=$VENV/bin/dftracer-analyze
[ -x "$ANALYZE" ] || fail_now build "$ANALYZE was not installed (see $LOG)"
"$ANALYZE" --help >/dev/null 2>>"$LOG" || fail_now build "$ANALYZE does not run (its libraries? see $LOG)"
# The LibTorch observer, built against this torch, loads into it (ABI).
"$VPY" -c "import torch, dftracer._eager" 2>>"$LOG" ||
  fail_now build "the LibTorch observer (dftracer._eager) does not load with this torch (see $LOG)"
record build PASS "$(( $(date +%s) - START )) s: dftracer (with $(basename "$CUDA_LIB") and the LibTorch observer for torch $("$VPY" -c 'import torch; print(torch.__version__)')) and dftracer-analyze in $VENV"

# --------------------------------------------------------------- unit tests
if "$B/src/capture/cuda/cuda_activity_test" >"$B/unit.log" 2>&1 &&
   "$B/src/capture/cuda/cuda_core_sink_test" >>"$B/unit.log" 2>&1 &&
   "$B/src/capture/cuda/cuda_source_stop_test" >>"$B/unit.log" 2>&1; then
  record unit PASS "activity record conversion, core writer and stop-before-finalize suites"
else
  record unit FAIL "$(grep -m1 FAILED "$B/unit.log")"
fi

if [ "$BUILD_ONLY" = 1 ]; then
  table
  exit $?
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
