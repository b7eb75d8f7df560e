#!/bin/bash
# Run 2 on the H200: tail variants of the tall column sum; every GPU test (4 shards + the
# autotuner's) beside kiln-difftest on fresh seeds with outputs saved.
set -u
cd "$(dirname "$0")/.."
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/gpu.txt
start=$(date +%s)
t() { echo "$1 after $(( $(date +%s) - start )) s" >> $R/gpu.txt; }
timeout 60 .devscripts/colbench > $R/colbench.log 2>&1
t "colbench"
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 420 build/tests/kiln_gpu_tests --gtest_filter='*Gpu.*:-AutotunerGpu.*' > $R/gpu-tests-$i.log 2>&1 &
done
timeout 420 build/tests/kiln_gpu_tests --gtest_filter='AutotunerGpu.*' > $R/gpu-tests-autotuner.log 2>&1 &
for i in $(seq 0 7); do
  seed=$((130000000 + i * 1000000))
  mkdir -p $R/difftest/p$i
  timeout 400 build/bin/kiln-difftest --seconds 340 --seed $seed --save-outputs --shrink-attempts 20 --out $R/difftest/p$i \
    > $R/difftest/p$i/difftest.log 2>&1 &
done
wait
t "difftest and gpu tests"
for f in $R/difftest/p*/difftest.log; do tail -n 12 $f; done > $R/difftest-summary.txt
for f in $R/gpu-tests-*.log; do echo "== $f"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests? ran|FAILED  \]" $f; done > $R/gpu-tests-summary.txt
tar czf $OUT/call2.tgz -C $OUT r
