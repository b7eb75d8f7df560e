#!/usr/bin/env bash
# Sets Kiln up: installs what it needs, builds the `release` preset into build/, then
# runs the main job: examples/elementwise_chain.kiln compiled with its IR and CUDA
# dumped to out/elementwise_chain/, run on the GPU (or compiled only, without one).
#   KILN_BUILD_JOBS=N limits the build's parallel jobs (default: every core).
set -euo pipefail
cd "$(dirname "$0")"

scripts/install-deps.sh
# CMake's FindCUDAToolkit reads CUDAToolkit_ROOT; point it where install-deps found CUDA.
CUDAToolkit_ROOT="${CUDAToolkit_ROOT:-$(scripts/install-deps.sh --cuda-root)}"
export CUDAToolkit_ROOT

cmake --preset release
cmake --build --preset release --parallel "${KILN_BUILD_JOBS:-$(nproc)}"

# The main job: compile an example graph, dump its IR after every pass and its
# generated CUDA and PTX, then run it on the GPU against the CPU reference; on a
# machine without a GPU, compile it all the same and check the reference alone.
example=examples/elementwise_chain.kiln
dump=out/elementwise_chain
rm -rf "$dump"
mode=()
if [[ ! -e /dev/nvidiactl ]]; then
  mode=(--compile-only)
  echo "No GPU on this machine: compiling to PTX and evaluating the CPU reference only."
fi
echo
echo "== KILN_DUMP_DIR=$dump KILN_DEBUG=3 kiln run $example ${mode[*]}"
KILN_DUMP_DIR="$dump" KILN_DEBUG=3 build/bin/kiln run "$example" "${mode[@]}"
echo
echo "Above: the IR after each pass (KILN_DEBUG=3), then the compile and the check."
echo "The per-pass IR, the kernel IR, the CUDA source and the PTX are in $dump/:"
ls "$dump"
echo "Next: ./test.sh runs every test; README.md has the tour."
