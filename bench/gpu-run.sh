#!/usr/bin/env bash
# Runs on the GPU machine over a build made elsewhere (build/): every GPU test, then
# `kiln run --bench` on each benchmark case. Logs go to $OUT (or out/gpu) so that they
# come back with the results.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-out/gpu}"
mkdir -p "$out"
export KILN_CACHE_DIR="${KILN_CACHE_DIR:-/tmp/kiln-cache}"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee "$out/gpu.txt"
status=0
ctest --test-dir build -L gpu --output-on-failure 2>&1 | tee "$out/gpu-tests.log" || status=1
: > "$out/bench.log"
for f in bench/cases/*.kiln; do
  echo "== kiln run $f --bench" | tee -a "$out/bench.log"
  build/bin/kiln run "$f" --bench 2>&1 | tee -a "$out/bench.log" || status=1
done
exit $status
