#!/usr/bin/env bash
# Runs every test: installs what Kiln needs, builds the `release` preset, runs CTest
# (unit, lit and example tests; GPU tests skip on a machine without a GPU), then
# fuzzes the IR parser and the whole compile path (random valid graphs) for a
# minute each.
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
log=build/ctest.log
ctest --preset release --parallel "$jobs" 2>&1 | tee "$log"

KILN_FUZZ_JOBS="${KILN_FUZZ_JOBS:-$jobs}" scripts/run-fuzzer.sh 60

# One closing line with the counts (CTest counts a skipped test as passed).
total=$(sed -n 's/.*tests failed out of \([0-9]*\).*/\1/p' "$log" | tail -n 1)
failed=$(sed -n 's/.* \([0-9]*\) tests failed out of.*/\1/p' "$log" | tail -n 1)
skipped=$(grep -c '(Skipped)$' "$log" || true)
echo "ctest: $((total - failed - skipped)) passed, $failed failed, $skipped skipped"
