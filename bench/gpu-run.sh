#!/usr/bin/env bash
# Runs on the GPU machine over a build made elsewhere (build/): every GPU test, then
# `kiln run --bench` on each benchmark case, then one autotuner sweep, then `kiln bench`
# (default, tuned and hand-written kernels side by side; merged with the peers' rows when
# $out/peers.json exists). Logs go to the folder given as the first argument (default out/gpu).
#   usage: bench/gpu-run.sh [LOG_DIR]
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-out/gpu}"
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
# The autotuner's speed: one sweep of every legal config of a softmax kernel, wall time
# with compiles (the compile cache is emptied first so that NVRTC really runs).
rm -rf "$KILN_CACHE_DIR"
export KILN_TUNE_DB="$out/tuning.json"
for f in bench/tune/*.kiln; do
  echo "== kiln tune $f" | tee -a "$out/tune.log"
  start=$(date +%s%N)
  build/bin/kiln tune "$f" --csv "$out/tune.csv" 2>&1 | tee -a "$out/tune.log" || status=1
  echo "tune wall time: $(( ($(date +%s%N) - start) / 1000000 )) ms" | tee -a "$out/tune.log"
  build/bin/kiln run "$f" --bench 2>&1 | tee -a "$out/tune.log" || status=1
done
# Every benchmark case: Kiln default, Kiln tuned (records in $KILN_TUNE_DB, tuning now
# within --max-seconds where there is none) and the hand-written baselines.
peers=()
if [ -f "$out/peers.json" ]; then peers=(--peers "$out/peers.json"); fi
build/bin/kiln bench --json "$out/bench.json" --csv "$out/bench.csv" "${peers[@]}" 2>&1 | tee "$out/bench-table.log" || status=1
exit $status
