#!/bin/bash
# Run 4 on the H200: the column reduce's shuffle combine (col_mean in kiln bench, tuner sweeps
# of tall / wide / middle-axis reductions, softmax over each axis), then every GPU test
# beside kiln-difftest on fresh seeds with outputs saved.
set -u
cd "$(dirname "$0")/.."
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/gpu.txt
start=$(date +%s)
t() { echo "$1 after $(( $(date +%s) - start )) s" >> $R/gpu.txt; }
timeout 60 build/bin/kiln bench col_mean --no-tune --reps 20 > $R/bench-colmean.log 2>&1
t "bench col_mean"
timeout 60 .devscripts/kiln-split2 bench col_mean --no-tune --reps 20 > $R/bench-colmean-split2.log 2>&1
timeout 60 build/bin/kiln bench col_mean --no-tune --reps 20 > $R/bench-colmean-again.log 2>&1
t "bench col_mean split2, again"
mkdir -p $R/tune
for f in .devscripts/cr/*.kiln; do
  b=$(basename $f .kiln)
  KILN_TUNE_DB=$R/tune/db.json timeout 32 build/bin/kiln tune $f --max-seconds 20 --csv $R/tune/$b.csv > $R/tune/$b.log 2>&1
done
t "tune"
for f in .devscripts/sm/*.kiln; do
  echo "== $f" >> $R/softmax-axes.log
  timeout 30 build/bin/kiln run $f --bench >> $R/softmax-axes.log 2>&1
  echo "== split2 $f" >> $R/softmax-axes.log
  timeout 30 .devscripts/kiln-split2 run $f --bench >> $R/softmax-axes.log 2>&1
done
t "softmax axes"
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 285 build/tests/kiln_gpu_tests --gtest_filter='*Gpu.*:-AutotunerGpu.*' > $R/gpu-tests-$i.log 2>&1 &
done
timeout 285 build/tests/kiln_gpu_tests --gtest_filter='AutotunerGpu.*' > $R/gpu-tests-autotuner.log 2>&1 &
for i in $(seq 0 7); do
  seed=$((140000000 + i * 1000000))
  mkdir -p $R/difftest/p$i
  timeout 280 build/bin/kiln-difftest --seconds 250 --seed $seed --save-outputs --shrink-attempts 20 --out $R/difftest/p$i \
    > $R/difftest/p$i/difftest.log 2>&1 &
done
wait
t "difftest and gpu tests"
for f in $R/difftest/p*/difftest.log; do tail -n 12 $f; done > $R/difftest-summary.txt
for f in $R/gpu-tests-*.log; do echo "== $f"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests? ran|FAILED  \]" $f; done > $R/gpu-tests-summary.txt
tar czf $OUT/call4.tgz -C $OUT r
