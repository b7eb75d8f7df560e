#!/bin/bash
# H200 run: kiln-difftest on fresh seeds beside compute-sanitizer over the reduction and
# pointwise kernels, then every GPU test with the machine to itself.
set -u
cd "$(dirname "$0")/.."
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/gpu.txt
git rev-parse HEAD > $R/head.txt 2>/dev/null  # the tree went without .git: 2ef1bab
start=$(date +%s)
t() { echo "$1 after $(( $(date +%s) - start )) s" >> $R/gpu.txt; }
export KILN_SANITIZE_TESTS='ColReduceGpu.*:ReduceAxesGpu.*:OnlineReduceGpu.*:IntegerReduceGpu.*:PointwiseGpu.*'
export KILN_SANITIZE_TIMEOUT=270
KILN_SANITIZE_TOOLS=memcheck KILN_SANITIZE_SHARDS=2 bench/sanitize.sh $R/san-memcheck > $R/san-memcheck.txt 2>&1 &
KILN_SANITIZE_TOOLS=racecheck KILN_SANITIZE_SHARDS=3 bench/sanitize.sh $R/san-racecheck > $R/san-racecheck.txt 2>&1 &
KILN_SANITIZE_TOOLS=synccheck KILN_SANITIZE_SHARDS=1 bench/sanitize.sh $R/san-synccheck > $R/san-synccheck.txt 2>&1 &
for i in $(seq 0 9); do
  seed=$((150000000 + i * 1000000))
  mkdir -p $R/difftest/p$i
  timeout 285 build/bin/kiln-difftest --seconds 260 --seed $seed --save-outputs --shrink-attempts 20 --out $R/difftest/p$i \
    > $R/difftest/p$i/difftest.log 2>&1 &
done
wait
t "difftest and sanitizers"
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 250 build/tests/kiln_gpu_tests --gtest_filter='*Gpu.*:-AutotunerGpu.*' > $R/gpu-tests-$i.log 2>&1 &
done
timeout 250 build/tests/kiln_gpu_tests --gtest_filter='AutotunerGpu.*' > $R/gpu-tests-autotuner.log 2>&1 &
wait
t "gpu tests"
for f in $R/difftest/p*/difftest.log; do tail -n 12 $f; done > $R/difftest-summary.txt
for f in $R/gpu-tests-*.log; do echo "== $f"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests? ran|FAILED  \]" $f; done > $R/gpu-tests-summary.txt
tar czf $OUT/call1.tgz -C $OUT r
