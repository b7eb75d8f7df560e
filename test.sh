#!/usr/bin/env bash
# Runs every test: installs what Kiln needs, builds the `release` preset, runs CTest
# (unit, lit and example tests; GPU tests skip on a machine without a GPU), then
# fuzzes the IR parser for a bounded time.
#   KILN_BUILD_JOBS=N limits the build's and the tests' parallel jobs (default: every core).
set -euo pipefail
cd "$(dirname "$0")"
jobs="${KILN_BUILD_JOBS:-$(nproc)}"

scripts/install-deps.sh
# CMake's FindCUDAToolkit reads CUDAToolkit_ROOT; point it where install-deps found CUDA.
CUDAToolkit_ROOT="${CUDAToolkit_ROOT:-$(scripts/install-deps.sh --cuda-root)}"
export CUDAToolkit_ROOT

cmake --preset release
cmake --build --preset release --parallel "$jobs"
ctest --preset release --parallel "$jobs"

if [[ -x scripts/run-fuzzer.sh ]]; then
  KILN_FUZZ_JOBS="${KILN_FUZZ_JOBS:-$jobs}" scripts/run-fuzzer.sh 60
fi
