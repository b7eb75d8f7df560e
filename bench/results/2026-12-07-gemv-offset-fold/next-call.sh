#!/bin/bash
# The first GPU run this branch wants (written before it has run): on an H200 if one comes,
# every gemv candidate's check, then kiln bench of this build (copied to .devscripts/kiln-new)
# against main's (.devscripts/kiln-main), twice each in turn, and the group sizes.
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $R/smi.txt; cat $R/smi.txt
timeout 240 build/tests/kiln_gpu_tests --gtest_filter='QuantGpu.*:-QuantGpu.EveryDequantWgmmaCandidatePassesItsCheck' > $R/tests.txt 2>&1; echo "rc=$?" >> $R/tests.txt
grep -E "^\[  (PASSED|FAILED|     OK) |^rc=|Failure" $R/tests.txt | head -20
for i in 1 2; do for b in kiln-new kiln-main; do
  timeout 30 .devscripts/$b bench quant_w4g128 quant_w8 --no-tune --reps 30 > $R/bench_${b}_$i.txt 2>&1
done; done
for f in $R/bench_*; do echo "== $f"; grep -E "^quant|kiln default  |cublas  " $f | cut -c1-60; done
for f in w4 w4g32 w4g64 w4row w4z w4zi w4m2 w8; do
  echo "== $f" >> $R/groups.txt; timeout 15 .devscripts/kiln-new run --bench .devscripts/$f.kiln >> $R/groups.txt 2>&1
done
grep -E "^==|CUDA graph|rel_l2" $R/groups.txt | cut -c1-90
# The probe of bench/results/2026-12-07-gemv-h100/probe, built where it was last run, with a
# loads_linear variant (the weight's bytes read in the order of an interleaved layout).
if [ -x .devscripts/gh/harness ]; then (cd .devscripts/gh && timeout 60 ./harness > $R/harness.txt 2>&1); grep -E "read|base|loads|emitted" $R/harness.txt; fi
