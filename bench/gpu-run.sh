#!/usr/bin/env bash
# Runs on the GPU machine over a build made elsewhere (build/): every GPU test (in
# parallel, the autotuner's alone so that its timings are quiet), the Python module's
# GPU test on torch tensors (KILN_PYTHON_DIR, default build/python: the module built
# for this machine's python3), the GPU tests and small cases under compute-sanitizer
# (bench/sanitize.sh), one autotuner sweep
# with an empty compile cache, then `kiln bench` (default, tuned and hand-written kernels
# side by side, merged with the PyTorch / Triton rows of bench/results/peers-h200.json).
# Logs, JSON and CSV go to the folder given as the first argument (default out/gpu);
# further arguments are passed to `kiln bench` (cases, --sizes, ...).
#   usage: bench/gpu-run.sh [LOG_DIR [kiln bench arguments...]]
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-out/gpu}"
shift || true
mkdir -p "$out"
export KILN_CACHE_DIR="${KILN_CACHE_DIR:-/tmp/kiln-cache}"
export KILN_TUNE_DB="$out/tuning.json"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee "$out/gpu.txt"
status=0
ctest --test-dir build -L gpu -E AutotunerGpu -j "$(nproc)" --output-on-failure > "$out/gpu-tests.log" 2>&1 || status=1
ctest --test-dir build -R AutotunerGpu --output-on-failure >> "$out/gpu-tests.log" 2>&1 || status=1
grep -E "tests passed|Failed" "$out/gpu-tests.log"
# Kiln from Python, in place on torch (and CuPy) tensors through DLPack.
PYTHONPATH="${KILN_PYTHON_DIR:-build/python}" python3 tests/python/test_kiln_gpu.py > "$out/python-gpu.log" 2>&1 || status=1
tail -n 3 "$out/python-gpu.log"
# compute-sanitizer (memcheck, racecheck, synccheck, initcheck) at small shapes, logs in
# $out/sanitize/ (bench/sanitize.sh); KILN_SANITIZE=0 skips it.
if [[ "${KILN_SANITIZE:-1}" != 0 ]]; then
  bench/sanitize.sh "$out" | tee "$out/sanitize.log" || status=1
fi
# The autotuner's speed: one sweep of a softmax kernel, wall time with compiles (the
# compile cache is emptied first so that NVRTC really runs).
rm -rf "$KILN_CACHE_DIR"
for f in bench/tune/*.kiln; do
  start=$(date +%s%N)
  build/bin/kiln tune "$f" --csv "$out/tune.csv" > "$out/tune.log" 2>&1 || status=1
  echo "kiln tune $f: wall time $(( ($(date +%s%N) - start) / 1000000 )) ms" | tee -a "$out/tune.log"
done
# kiln bench writes its JSON and CSV after every case, so a run cut short keeps its rows.
build/bin/kiln bench --max-seconds 10 --reps 30 --json "$out/bench.json" --csv "$out/bench.csv" \
  --peers bench/results/peers-h200.json "$@" > "$out/bench.log" 2>&1 || status=1
tail -n 40 "$out/bench.log"
exit $status
