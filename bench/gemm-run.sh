#!/usr/bin/env bash
# GEMM on the GPU machine over a build made elsewhere (build/bin, build/tests): the GEMM
# GPU tests (every candidate of several products against the reference), then every
# candidate of the 4096^3 products timed by `kiln tune` (sm_90a, and sm_90 for the
# mma.sync schedule alone), then `kiln bench` rows (Kiln's default kernels beside the
# hand-written one, cuBLAS and cuBLASLt). Logs and CSV go to the folder given (default
# out/gemm), and all of them into one archive beside it, LOG_DIR.tgz.
#   usage: bench/gemm-run.sh [LOG_DIR [kiln bench sizes]]
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-out/gemm}"
sizes="${2:-4096x4096x4096,8192x8192x8192}"
mkdir -p "$out"
export KILN_CACHE_DIR="${KILN_CACHE_DIR:-/tmp/kiln-cache}"
export KILN_TUNE_DB="$out/tuning.json"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$out/gpu.txt"
status=0
tests=build/tests/kiln_gpu_tests
# Correctness first, four processes at a time (their timings are not read).
timeout 240 "$tests" --gtest_filter='GemmWgmmaGpu.EveryCandidate*' > "$out/tests-wgmma.log" 2>&1 &
timeout 240 "$tests" --gtest_filter='GemmWgmmaGpu.*:-GemmWgmmaGpu.EveryCandidate*:PointwiseGpu.*' \
  > "$out/tests-wgmma-rest.log" 2>&1 &
timeout 240 "$tests" --gtest_filter='GemmGpu.*:CublasGpu.*' > "$out/tests-gemm.log" 2>&1 &
timeout 240 "$tests" --gtest_filter='QuantGpu.*' > "$out/tests-quant.log" 2>&1 &
wait
grep -hE "^\[  (PASSED|FAILED) " "$out"/tests-*.log
grep -q "FAILED\|Failure" "$out"/tests-*.log && status=1
# Every candidate of the plain and the fused product, timed one after another.
tune() {  # arch file
  timeout 150 build/bin/kiln tune "bench/tune/$2.kiln" --arch "$1" --max-seconds 120 --csv "$out/tune-$1-$2.csv" \
    > "$out/tune-$1-$2.log" 2>&1 || status=1
  echo "kiln tune --arch $1 $2, the five fastest (compile ms, median ms, ...):"
  grep "^  {" "$out/tune-$1-$2.log" | awk -F'}' '{print $2 " |" $1 "}"}' | sort -k2 -g | head -n 5
}
tune sm_90a gemm_f16_4096x4096x4096
tune sm_90a gemm_bias_gelu_f16_4096x4096x4096
tune sm_90 gemm_f16_4096x4096x4096
tune sm_90 gemm_bf16_4096x4096x4096
# Kiln's default kernels beside cuBLAS and cuBLASLt.
timeout 200 build/bin/kiln bench gemm gemm_bias_gelu --sizes "$sizes" --no-tune --reps 30 \
  --json "$out/bench.json" > "$out/bench.log" 2>&1 || status=1
timeout 100 build/bin/kiln bench gemm --arch sm_90 --sizes 4096x4096x4096 --no-tune --reps 30 \
  --json "$out/bench-mma-sync.json" > "$out/bench-mma-sync.log" 2>&1 || status=1
tar czf "$out.tgz" -C "$(dirname "$out")" "$(basename "$out")"
exit $status
