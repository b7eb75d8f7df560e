#!/bin/bash
# Device call 1: the gemv with weights as mma's A operand (tests; before/after timings,
# alternating), racecheck of the one GPU test it never reached, the 17 mismatching seeds
# again with their GPU outputs saved, then kiln-difftest on fresh seeds, outputs saved.
set -u
cd "$(dirname "$0")/.."
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/gpu.txt
start=$(date +%s)
t() { echo "$1 after $(( $(date +%s) - start )) s" >> $R/gpu.txt; }
timeout 150 build/tests/kiln_gpu_tests --gtest_filter='Quant*:*Gemv*:Dequant*' > $R/quant-tests.log 2>&1; echo "rc=$?" >> $R/quant-tests.log
t "quant tests"
for i in 1 2; do  # groups once
  for v in old new; do
    timeout 60 .devscripts/kiln-$v bench quant_w4g128 quant_w8 --no-tune --reps 30 > $R/bench-$v-$i.log 2>&1
    [[ $i == 1 ]] && for f in .devscripts/quant/*.kiln; do
      echo "== $v $f" >> $R/groups-$v.log
      timeout 30 .devscripts/kiln-$v run $f --bench >> $R/groups-$v.log 2>&1
    done
  done
done
t "quant bench"
# the 17 mismatching seeds of the last two runs, outputs saved
mkdir -p $R/reseed
for s in 21000796 23000158 23000642 23000714 24001155 25000355 27000969 32000152 32000200 32000995 34000414 35000043 35000704 35000732 35000825 36000027 37000712; do
  timeout 60 build/bin/kiln-difftest --seed $s --count 1 --seconds 0 --shrink-attempts 0 --save-outputs --out $R/reseed >> $R/reseed/reseed.log 2>&1 &
done
wait
t "reseed"
for i in $(seq 0 13); do
  seed=$((40000000 + i * 1000000))
  mkdir -p $R/difftest/p$i
  timeout 290 build/bin/kiln-difftest --seconds 240 --seed $seed --save-outputs --shrink-attempts 100 --out $R/difftest/p$i \
    > $R/difftest/p$i/difftest.log 2>&1 &
done
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 200 $san --tool racecheck --racecheck-report all build/tests/kiln_gpu_tests --gtest_filter='RuntimeGpu.BuffersRoundTrip' > $R/racecheck-buffers.log 2>&1
echo "rc=$?" >> $R/racecheck-buffers.log
wait
t "difftest"
for f in $R/difftest/p*/difftest.log; do tail -n 12 $f; done > $R/difftest-summary.txt
tar czf $OUT/call1.tgz -C $OUT r
