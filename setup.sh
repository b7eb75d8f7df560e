#!/usr/bin/env bash
# Sets Kiln up: installs what it needs, builds the `release` preset into build/, then
# runs the main job, `kiln opt` on examples/add_rmsnorm.kiln with the IR printed and
# written to out/add_rmsnorm/ after every pass.
#   KILN_BUILD_JOBS=N limits the build's parallel jobs (default: every core).
set -euo pipefail
cd "$(dirname "$0")"

scripts/install-deps.sh
# CMake's FindCUDAToolkit reads CUDAToolkit_ROOT; point it where install-deps found CUDA.
CUDAToolkit_ROOT="${CUDAToolkit_ROOT:-$(scripts/install-deps.sh --cuda-root)}"
export CUDAToolkit_ROOT

cmake --preset release
cmake --build --preset release --parallel "${KILN_BUILD_JOBS:-$(nproc)}"

dump=out/add_rmsnorm
rm -rf "$dump"
echo
echo "== kiln opt examples/add_rmsnorm.kiln --print-ir-after-all (KILN_DUMP_DIR=$dump)"
KILN_DUMP_DIR="$dump" build/bin/kiln opt examples/add_rmsnorm.kiln --print-ir-after-all
echo
echo "Above: the IR after each pass (on stderr), then the result (on stdout)."
echo "The same per-pass IR is in $dump/:"
ls "$dump"
echo "Next: ./test.sh runs every test; README.md has the tour."
