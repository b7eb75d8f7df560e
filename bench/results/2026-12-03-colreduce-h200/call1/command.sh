#!/bin/bash
# Run 1 on the H200: where a tall column sum's time goes (variants), the leading-axis softmax
# before and after the fusion fix, col_mean in kiln bench; then every GPU test in 4 shards
# beside kiln-difftest on fresh seeds with outputs saved.
set -u
cd "$(dirname "$0")/.."
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/gpu.txt
start=$(date +%s)
t() { echo "$1 after $(( $(date +%s) - start )) s" >> $R/gpu.txt; }
timeout 60 .devscripts/colbench > $R/colbench.log 2>&1
t "colbench"
mkdir -p $R/tune
for f in .devscripts/quant/w4g128.kiln; do
  b=$(basename $f .kiln)
  KILN_TUNE_DB=$R/tune/db.json timeout 60 build/bin/kiln tune $f --max-seconds 45 --csv $R/tune/$b.csv > $R/tune/$b.log 2>&1
done
t "gemv tune"
for i in 1; do
  for v in base new; do
    bin=build/bin/kiln; [[ $v == base ]] && bin=.devscripts/kiln-base
    for f in .devscripts/sm/*.kiln; do
      echo "== $v $f" >> $R/softmax-axes-$i.log
      timeout 30 $bin run $f --bench >> $R/softmax-axes-$i.log 2>&1
    done
  done
done
t "softmax axes"
timeout 40 build/bin/kiln bench col_mean --no-tune --reps 20 > $R/bench-colmean.log 2>&1
t "bench col_mean"
mkdir -p $R/reseed
for s in 90001322 99000407; do
  timeout 60 build/bin/kiln-difftest --seed $s --count 1 --seconds 0 --shrink-attempts 0 --save-outputs --out $R/reseed >> $R/reseed/reseed.log 2>&1 &
done
wait
t "reseed"
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 160 build/tests/kiln_gpu_tests --gtest_filter='*Gpu.*:-AutotunerGpu.*' > $R/gpu-tests-$i.log 2>&1 &
done
timeout 160 build/tests/kiln_gpu_tests --gtest_filter='Quant*' > $R/gpu-tests-autotuner.log 2>&1 &
for i in $(seq 0 11); do
  seed=$((110000000 + i * 1000000))
  mkdir -p $R/difftest/p$i
  timeout 175 build/bin/kiln-difftest --seconds 140 --seed $seed --save-outputs --shrink-attempts 20 --out $R/difftest/p$i \
    > $R/difftest/p$i/difftest.log 2>&1 &
done
wait
t "difftest and gpu tests"
for f in $R/difftest/p*/difftest.log; do tail -n 12 $f; done > $R/difftest-summary.txt
for f in $R/gpu-tests-*.log; do echo "== $f"; tail -n 4 $f; done > $R/gpu-tests-summary.txt
tar czf $OUT/call1.tgz -C $OUT r
