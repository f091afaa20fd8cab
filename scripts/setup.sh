#!/usr/bin/env bash
# Installs everything the build, the tests and the demo need. Idempotent: a
# second run finds everything present and changes nothing.
#   apt: compiler toolchain pieces and the C/C++ libraries we link; chromium
#        (the report page test) and strace (the I/O test of where the
#        traced open and close make their system calls)
#   pip: torch 2.13.0 (the CPU wheel on disk: asked for by exact version so
#        pip never reaches for a CUDA build), the Python build backend, and
#        the packages the Python tests and examples use.
#   ref venv: .venv-ref in the repository root (git-ignored), holding the
#        reference DFTracer tools at pinned versions -- pydftracer, dftracer
#        and dftracer-utils -- that the interop tests run side by side with
#        ours. They import as `dftracer` too, so they never go into the
#        project's Python. A stamp file naming the pins makes a re-run a no-op;
#        DFTRACER_REFERENCE_VENV puts the venv elsewhere.
set -euo pipefail

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config
  zlib1g-dev libdeflate-dev libsimdjson-dev libspdlog-dev libfmt-dev libxxhash-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev
  chromium
  strace
  util-linux dash findutils
)
PIP_PACKAGES=(
  "torch==2.13.0"
  "scikit-build-core>=0.10" "nanobind>=2.0" "pybind11>=2.12"
  "numpy" "pandas" "pytest" "pytest-xdist" "transformers" "accelerate" "viztracer"
  # dftracer.analyze on Dask, Parquet export, and reading the export back in tests
  "dask[distributed,dataframe]" "pyarrow" "duckdb"
)

SUDO=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then SUDO="sudo"; fi

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing apt packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
# torch first and alone, by exact version: anything that depends on torch then
# finds it satisfied and never pulls another build.
if ! "$PY" -c "import torch, sys; sys.exit(0 if torch.__version__.startswith('2.13.0') else 1)" 2>/dev/null; then
  echo "setup: installing torch==2.13.0"
  "$PY" -m pip install -q "torch==2.13.0"
fi
"$PY" -m pip install -q --disable-pip-version-check "${PIP_PACKAGES[@]}"

REF_VENV=${DFTRACER_REFERENCE_VENV:-$(cd "$(dirname "$0")/.." && pwd)/.venv-ref}
REF_PACKAGES=("pydftracer==2.0.6" "dftracer==2.2.0" "dftracer-utils==0.0.14")
REF_STAMP="$REF_VENV/.dftracer-reference"
if [ "$(cat "$REF_STAMP" 2>/dev/null)" != "${REF_PACKAGES[*]}" ] || [ ! -x "$REF_VENV/bin/dftracer_view" ]; then
  echo "setup: reference DFTracer tools into $REF_VENV: ${REF_PACKAGES[*]}"
  [ -x "$REF_VENV/bin/python" ] || "$PY" -m venv "$REF_VENV"
  "$REF_VENV/bin/python" -m pip install -q --disable-pip-version-check "${REF_PACKAGES[@]}"
  echo "${REF_PACKAGES[*]}" > "$REF_STAMP"
fi
echo "setup: done"
