#!/usr/bin/env bash
# Installs this build into a fresh prefix, checks that no installed file names the
# source or build folder, then configures, builds and runs examples/consumer against
# the installed package alone (find_package(Kiln)).
#   usage: installed_tree_test.sh SOURCE_DIR BUILD_DIR WORK_DIR CUDA_ROOT CXX
set -euo pipefail
src="$1" build="$2" work="$3" cuda_root="$4" cxx="$5"
rm -rf "$work"
prefix="$work/prefix"
cmake --install "$build" --prefix "$prefix" > "$work.install.log"

for f in include/kiln/kiln.h lib/cmake/Kiln/KilnConfig.cmake lib/cmake/Kiln/KilnConfigVersion.cmake \
         lib/cmake/Kiln/KilnTargets.cmake bin/kiln; do
  [[ -e "$prefix/$f" ]] || { echo "FAIL: $f is not installed"; exit 1; }
done
# The prefix lies under the build folder, so this also catches the prefix itself baked in.
if grep -rlF -e "$src" -e "$build" "$prefix"; then
  echo "FAIL: the files above name the build machine's source or build folder"
  exit 1
fi
echo "installed into $prefix; no installed file names $src or $build"

cmake -S "$src/examples/consumer" -B "$work/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$prefix" -DCUDAToolkit_ROOT="$cuda_root"
cmake --build "$work/consumer"
"$work/consumer/kiln_consumer"
"$prefix/bin/kiln" --version
