#!/usr/bin/env bash
# Runs every test of the project on a fresh machine:
#   1. installs what the build and tests need (scripts/setup.sh, idempotent);
#   2. configures and builds everything (core, analyzer, tests, benchmarks,
#      examples) and runs all GoogleTest suites with ctest;
#   3. builds the buffer, writer, compile-capture (dynamo) and I/O (FUNCTION
#      mode, eight threads doing I/O) concurrency
#      tests with ThreadSanitizer and runs them
#      (smaller, via DFTRACER_TEST_SCALE: TSan is ~10x slower);
#   4. builds the fork and SIGTERM suites with AddressSanitizer +
#      UndefinedBehaviorSanitizer and runs the fork-while-recording and
#      SIGTERM-during-thread-churn tests at a small scale (TSan cannot run
#      the fork test), and the _exit/exec/credential hooks on a real program
#      under the instrumented preload library;
#   5. builds the CUDA capture source (libdftracer_cuda) and a fake CUPTI
#      (its end-to-end test's) against the headers and libcupti of NVIDIA's
#      CUDA 13 wheels: no GPU is needed to compile
#      it; pytest checks it fails cleanly without a driver, and runs it on
#      the fake CUPTI end to end;
#   6. installs the Python package and runs pytest (the interop tests run
#      DFTracer's own tools from the reference venv setup.sh made).
# Exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
JOBS=${JOBS:-$(nproc)}
PY=${PYTHON:-python3}

# Each step's wall time, printed at the end (also after a failure, where a
# log's tail is all that is shown): what a fresh machine spends where.
STEP_TIMES=()
STEP_NAME=""
STEP_START=$SECONDS
end_step() {
  local n=${STEP_NAME%%:*}
  [ -z "$STEP_NAME" ] || STEP_TIMES+=("${n%% (*} $((SECONDS - STEP_START)) s")
}
step() { end_step; STEP_NAME="$*"; STEP_START=$SECONDS; printf '\n=== %s ===\n' "$*"; }
print_step_times() {
  local rc=$?
  end_step
  local joined
  joined=$(printf '%s, ' "${STEP_TIMES[@]}")
  printf '\ntest.sh: %s after %d s; step times: %s\n' "$([ $rc = 0 ] && echo passed || echo "failed (exit $rc)")" \
    "$SECONDS" "${joined%, }"
}
trap print_step_times EXIT

step "setup"
scripts/setup.sh

step "build (RelWithDebInfo)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPython_EXECUTABLE="$(command -v "$PY")" \
  -DDFTRACER_BUILD_TESTS=ON -DDFTRACER_BUILD_ANALYZER=ON -DDFTRACER_BUILD_BENCH=ON -DDFTRACER_BUILD_EXAMPLES=ON
cmake --build build -j "$JOBS"

step "ctest"
ctest --test-dir build -j "$JOBS" --output-on-failure --timeout 600

step "ThreadSanitizer: buffer, writer, compile-capture and I/O tests"
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDFTRACER_SANITIZE=thread \
  -DDFTRACER_BUILD_ANALYZER=OFF -DDFTRACER_BUILD_BENCH=OFF -DDFTRACER_BUILD_EXAMPLES=OFF
cmake --build build-tsan -j "$JOBS" --target core_recording_test core_overflow_test core_process_test dynamo_concurrency_test \
  io_function_mode_test io_unit_test
DFTRACER_TEST_SCALE=0.02 TSAN_OPTIONS="halt_on_error=1" \
  ctest --test-dir build-tsan -j "$JOBS" --output-on-failure \
  -R '^(core\.(Recording|Lifecycle|Overflow|Stats)|core\.Crash\.SigtermDuringThreadChurn|dynamo\.Concurrent|io\.(FunctionMode|FileHashes|WorkingDir))'

step "AddressSanitizer + UBSan: fork while recording, SIGTERM during thread churn, our threads' descriptor tables, _exit/exec/credential hooks"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDFTRACER_SANITIZE=address \
  -DDFTRACER_BUILD_TESTS=ON -DDFTRACER_BUILD_ANALYZER=OFF -DDFTRACER_BUILD_BENCH=OFF -DDFTRACER_BUILD_EXAMPLES=OFF
cmake --build build-asan -j "$JOBS" --target core_process_test core_descriptor_table_test file_output_test io_image_end_test
DFTRACER_TEST_SCALE=0.1 ASAN_OPTIONS="detect_leaks=0:abort_on_error=0:halt_on_error=1" \
  UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
  ctest --test-dir build-asan -j "$JOBS" --output-on-failure \
  -R '^(core\.(Fork\.ForkWhileRecordingAndWritingNeverCrashesTheChild|Crash\.(SigtermDuringThreadChurnNeverHangs|SigtermRightAfterForkFinalizesTheChild)|DescriptorTable\..*)|file\.TraceSink\..*|io\.ImageEnd\..*)$'

step "CUDA capture source against CUDA 13's wheels (compiles and links; no GPU needed)"
# The GPU machines run this library; here it is built against the headers and
# libcupti of NVIDIA's wheels (~13 MB, cached in build-cuda/wheels), so a
# change that breaks its build fails here, and test_cuda_no_gpu.py checks that
# it fails cleanly where there is no driver.
mkdir -p build-cuda/wheels build-cuda/root
CUDA_WHEELS=("nvidia-cuda-cupti==13.0.*" "nvidia-cuda-runtime==13.0.*" "nvidia-cuda-crt==13.0.*")
have_wheels() { ls build-cuda/wheels/nvidia_cuda_cupti-13.0.*.whl build-cuda/wheels/nvidia_cuda_runtime-13.0.*.whl \
  build-cuda/wheels/nvidia_cuda_crt-13.0.*.whl >/dev/null 2>&1; }
have_wheels || "$PY" -m pip download -q --no-deps --only-binary=:all: -d build-cuda/wheels "${CUDA_WHEELS[@]}" || true
if have_wheels; then
  for w in build-cuda/wheels/*.whl; do "$PY" -m zipfile -e "$w" build-cuda/root; done
  cmake -S . -B build-cuda/build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDFTRACER_CUDA=ON \
    -DCUPTI_ROOT="$ROOT/build-cuda/root/nvidia/cu13" -DDFTRACER_BUILD_TESTS=OFF -DDFTRACER_BUILD_ANALYZER=OFF \
    -DDFTRACER_BUILD_BENCH=OFF -DDFTRACER_BUILD_EXAMPLES=OFF
  # With the fake CUPTI (libcupti.so.13 against the same cupti.h), which
  # test_cuda_fake_cupti.py puts first in the library path: the source runs
  # end to end in traced training processes, no GPU needed.
  cmake --build build-cuda/build -j "$JOBS" --target dftracer_cuda fake_cupti
  DFTRACER_CUDA_LIB=$(find "$ROOT/build-cuda/build" -name 'libdftracer_cuda.so' -print -quit)
  DFTRACER_FAKE_CUPTI_DIR=$(dirname "$(find "$ROOT/build-cuda/build" -path '*/fake_cupti/libcupti.so.13' -print -quit)")
  export DFTRACER_CUDA_LIB DFTRACER_FAKE_CUPTI_DIR
else
  # Offline, or the index is down: the rest of the suite still runs; the
  # no-driver test says it skipped, and why, under pytest's summary.
  echo "test.sh: could not download CUDA 13's wheels (${CUDA_WHEELS[*]}): the CUDA capture source is not built"
fi

step "Python package"
# With the CUDA capture source where the wheels are here: the package then
# holds libdftracer_cuda.so beside its core (test_cuda_no_gpu.py checks it
# loads by itself, that it is not loaded unless DFTRACER_CUDA asks, 0 being
# the default, and that DFTRACER_CUDA=auto changes nothing without a GPU).
PIP_CUDA=()
have_wheels && PIP_CUDA=(-C cmake.define.DFTRACER_CUDA=ON -C "cmake.define.CUPTI_ROOT=$ROOT/build-cuda/root/nvidia/cu13")
"$PY" -m pip install -q --no-build-isolation --no-deps "${PIP_CUDA[@]}" "$ROOT"

step "pytest"
cd "$ROOT/tests/python"
# -rs: each test that skips says why, on one line, under the summary;
# --durations: the slowest tests, where the CI time goes.
# PYTEST_WORKERS=N: N workers (pytest-xdist, --dist loadfile: a file's tests
# and its module fixtures in one worker); 1 runs them in this process.
# Default 1. Most tests wait on one single-threaded child process, so 2
# workers on 2 cores about halve the suite's time (22 -> 13 min on a 2-core
# AMD EPYC), but test_analyze_calibration compares calibrate's peak with
# torch.mm measured after it, and the other worker's load between the two
# made it miss 0.8x in 3 tries (one fresh-clone run of 4).
# -p no:benchmark: pytest-benchmark, where the machine has it, only warns
# under xdist (no test here uses it).
PYTEST_WORKERS=${PYTEST_WORKERS:-1}
XDIST=()
if [ "$PYTEST_WORKERS" -gt 1 ]; then XDIST=(-n "$PYTEST_WORKERS" --dist loadfile); fi
"$PY" -m pytest -q -rs -p no:cacheprovider -p no:benchmark --durations=20 "${XDIST[@]}" .
