#!/bin/bash
# Device call 1: kiln-difftest, 8 processes of 330 s on fresh seeds, beside compute-sanitizer
# (memcheck, racecheck, synccheck over the GPU tests in 3 shards each; initcheck).
set -u
cd "$(dirname "$0")/.."
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/gpu.txt
nproc >> $R/gpu.txt
start=$(date +%s)
for i in 0 1 2 3 4 5 6 7; do
  seed=$((20000000 + i * 1000000))
  mkdir -p $R/difftest/p$i
  timeout 450 build/bin/kiln-difftest --seconds 330 --seed $seed --out $R/difftest/p$i \
    > $R/difftest/p$i/difftest.log 2>&1 &
done
for tool in memcheck racecheck synccheck initcheck; do
  ( KILN_SANITIZE_TOOLS=$tool KILN_SANITIZE_SHARDS=3 KILN_SANITIZE_TIMEOUT=520 \
      timeout 540 bench/sanitize.sh $R > $R/sanitize-$tool.log 2>&1
    echo "$tool done after $(( $(date +%s) - start )) s, exit $?" >> $R/sanitize-$tool.log ) &
done
wait
echo "all done after $(( $(date +%s) - start )) s" >> $R/gpu.txt
tail -n 15 $R/difftest/p*/difftest.log > $R/difftest-summary.txt
tar czf $OUT/call1.tgz -C $OUT r
