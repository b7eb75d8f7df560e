#!/bin/bash
# Device call 2: the last call's 9 failing seeds again, kiln-difftest 8 x 330 s on fresh
# seeds, beside compute-sanitizer racecheck over the GPU tests in 8 shards.
set -u
cd "$(dirname "$0")/.."
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/gpu.txt
start=$(date +%s)
mkdir -p $R/reseed
for s in 21000796 23000158 23000167 23000642 23000714 23000998 24001155 25000355 27000969; do
  timeout 60 build/bin/kiln-difftest --seed $s --count 1 --seconds 0 --shrink-attempts 0 --out $R/reseed >> $R/reseed/reseed.log 2>&1
done
echo "reseed done after $(( $(date +%s) - start )) s" >> $R/gpu.txt
for i in 0 1 2 3 4 5 6 7; do
  seed=$((30000000 + i * 1000000))
  mkdir -p $R/difftest/p$i
  timeout 450 build/bin/kiln-difftest --seconds 330 --seed $seed --out $R/difftest/p$i \
    > $R/difftest/p$i/difftest.log 2>&1 &
done
KILN_SANITIZE_TOOLS=racecheck KILN_SANITIZE_SHARDS=8 KILN_SANITIZE_TIMEOUT=500 \
  timeout 520 bench/sanitize.sh $R > $R/sanitize-racecheck.log 2>&1
echo "racecheck done after $(( $(date +%s) - start )) s" >> $R/sanitize-racecheck.log
wait
echo "all done after $(( $(date +%s) - start )) s" >> $R/gpu.txt
for f in $R/difftest/p*/difftest.log; do tail -n 12 $f; done > $R/difftest-summary.txt
tar czf $OUT/call2.tgz -C $OUT r
