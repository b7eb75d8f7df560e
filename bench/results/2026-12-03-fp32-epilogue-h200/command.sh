#!/bin/bash
# H200 run: GEMM epilogues on the fp32 sums. kiln bench's GEMM rows (wgmma and mma_sync)
# with cuBLAS in the same run, then every GPU test beside kiln-difftest.
set -u
cd "$(dirname "$0")/../../.."
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/gpu.txt
start=$(date +%s)
t() { echo "$1 after $(( $(date +%s) - start )) s" >> $R/gpu.txt; }
timeout 100 build/bin/kiln bench gemm gemm_bias_gelu --sizes 4096x4096x4096,8192x8192x8192 --no-tune --reps 30 > $R/bench-wgmma.log 2>&1
t "bench wgmma"
timeout 80 build/bin/kiln bench gemm --arch sm_90 --sizes 4096x4096x4096,8192x8192x8192 --no-tune --reps 30 > $R/bench-mma-sync.log 2>&1
t "bench mma_sync"
timeout 60 build/bin/kiln bench gemm --sizes 4093x4099x4097,16x8192x8192 --no-tune --reps 30 > $R/bench-odd-and-m16.log 2>&1
t "bench odd"
for i in 1 2; do
  timeout 30 build/bin/kiln bench gemm_bias_gelu --sizes 4096x4096x4096 --no-tune --reps 30 > $R/bench-gelu-again-$i.log 2>&1
done
t "bench gelu again"
for i in $(seq 0 7); do
  seed=$((160000000 + i * 1000000))
  mkdir -p $R/difftest/p$i
  timeout 215 build/bin/kiln-difftest --seconds 190 --seed $seed --save-outputs --shrink-attempts 20 --out $R/difftest/p$i \
    > $R/difftest/p$i/difftest.log 2>&1 &
done
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 230 build/tests/kiln_gpu_tests --gtest_filter='*Gpu.*:-AutotunerGpu.*' > $R/gpu-tests-$i.log 2>&1 &
done
wait
t "difftest and gpu tests"
timeout 60 build/tests/kiln_gpu_tests --gtest_filter='AutotunerGpu.*' > $R/gpu-tests-autotuner.log 2>&1
t "autotuner tests"
for f in $R/difftest/p*/difftest.log; do tail -n 12 $f; done > $R/difftest-summary.txt
for f in $R/gpu-tests-*.log; do echo "== $f"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests? ran|FAILED  \]" $f; done > $R/gpu-tests-summary.txt
tar czf $OUT/call8.tgz -C $OUT r
