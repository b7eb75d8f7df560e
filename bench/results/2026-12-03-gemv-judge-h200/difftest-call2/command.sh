#!/bin/bash
# Device call 2: every GPU test (2 shards) beside kiln-difftest on fresh seeds with the
# judge as committed (outputs saved), after the failing seeds of call 1 again.
set -u
cd "$(dirname "$0")/.."
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/gpu.txt
start=$(date +%s)
t() { echo "$1 after $(( $(date +%s) - start )) s" >> $R/gpu.txt; }
mkdir -p $R/reseed
for s in 37000712 42000097 42001391 45000263 47000282 48000772 23000158 45001091 51000759; do
  timeout 60 build/bin/kiln-difftest --seed $s --count 1 --seconds 0 --shrink-attempts 0 --save-outputs --out $R/reseed >> $R/reseed/reseed.log 2>&1 &
done
wait
timeout 30 build/bin/kiln run .devscripts/seed-42000097.kiln --seed 42000097 --save $R/reseed/s42000097 > $R/reseed/s42000097.log 2>&1
t "reseed"
for i in 0 1 2; do
  GTEST_TOTAL_SHARDS=3 GTEST_SHARD_INDEX=$i timeout 450 build/tests/kiln_gpu_tests --gtest_filter='*Gpu.*:-AutotunerGpu.*' > $R/gpu-tests-$i.log 2>&1 &
done
timeout 450 build/tests/kiln_gpu_tests --gtest_filter='AutotunerGpu.*' > $R/gpu-tests-autotuner.log 2>&1 &
for i in $(seq 0 9); do
  seed=$((60000000 + i * 1000000))
  mkdir -p $R/difftest/p$i
  timeout 330 build/bin/kiln-difftest --seconds 270 --seed $seed --save-outputs --shrink-attempts 100 --out $R/difftest/p$i \
    > $R/difftest/p$i/difftest.log 2>&1 &
done
wait
t "difftest and gpu tests"
for f in $R/difftest/p*/difftest.log; do tail -n 12 $f; done > $R/difftest-summary.txt
tail -n 3 $R/gpu-tests-*.log > $R/gpu-tests-summary.txt
tar czf $OUT/call2.tgz -C $OUT r
