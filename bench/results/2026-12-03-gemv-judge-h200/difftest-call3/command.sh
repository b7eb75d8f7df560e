#!/bin/bash
# Device call 3: attention and online-reduce GPU tests, kiln bench attention, the seeds
# that failed before, then kiln-difftest on fresh seeds with the final judge.
set -u
cd "$(dirname "$0")/.."
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/gpu.txt
start=$(date +%s)
t() { echo "$1 after $(( $(date +%s) - start )) s" >> $R/gpu.txt; }
timeout 100 build/bin/kiln bench attention attention_causal --no-tune --reps 20 > $R/bench-attention.log 2>&1
t "bench"
mkdir -p $R/reseed
for s in 37000712 42000097 42001391 45000263 47000282 48000772 61001123 60000739; do
  timeout 60 build/bin/kiln-difftest --seed $s --count 1 --seconds 0 --shrink-attempts 0 --save-outputs --out $R/reseed >> $R/reseed/reseed.log 2>&1 &
done
wait
t "reseed"
timeout 300 build/tests/kiln_gpu_tests --gtest_filter='AttentionGpu.*:OnlineReduceGpu.*' > $R/gpu-tests.log 2>&1 &
for i in $(seq 0 11); do
  seed=$((70000000 + i * 1000000))
  mkdir -p $R/difftest/p$i
  timeout 280 build/bin/kiln-difftest --seconds 220 --seed $seed --save-outputs --shrink-attempts 100 --out $R/difftest/p$i \
    > $R/difftest/p$i/difftest.log 2>&1 &
done
wait
t "difftest and gpu tests"
for f in $R/difftest/p*/difftest.log; do tail -n 12 $f; done > $R/difftest-summary.txt
tail -n 4 $R/gpu-tests.log > $R/gpu-tests-summary.txt
tar czf $OUT/call3.tgz -C $OUT r
