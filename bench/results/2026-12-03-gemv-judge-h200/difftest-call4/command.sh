#!/bin/bash
# Device call 4: the reduction, attention and online-reduce GPU tests after softmax over
# leading axes kept its max; the two seeds of call 3 again; kiln-difftest on fresh seeds.
set -u
cd "$(dirname "$0")/.."
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/gpu.txt
start=$(date +%s)
t() { echo "$1 after $(( $(date +%s) - start )) s" >> $R/gpu.txt; }
mkdir -p $R/reseed
for s in 78000534 71000968 42000097; do
  timeout 60 build/bin/kiln-difftest --seed $s --count 1 --seconds 0 --shrink-attempts 0 --save-outputs --out $R/reseed >> $R/reseed/reseed.log 2>&1 &
done
wait
t "reseed"
timeout 200 build/tests/kiln_gpu_tests --gtest_filter='ColReduceGpu.*:ReduceAxesGpu.*:OnlineReduceGpu.*:RowReduceGpu.*:AttentionGpu.*' > $R/gpu-tests.log 2>&1 &
for i in $(seq 0 11); do
  seed=$((90000000 + i * 1000000))
  mkdir -p $R/difftest/p$i
  timeout 210 build/bin/kiln-difftest --seconds 165 --seed $seed --save-outputs --shrink-attempts 60 --out $R/difftest/p$i \
    > $R/difftest/p$i/difftest.log 2>&1 &
done
wait
t "difftest and gpu tests"
for f in $R/difftest/p*/difftest.log; do tail -n 12 $f; done > $R/difftest-summary.txt
tail -n 4 $R/gpu-tests.log > $R/gpu-tests-summary.txt
tar czf $OUT/call4.tgz -C $OUT r
